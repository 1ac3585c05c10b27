"""u-muP, the unit-scaled maximal update parametrization (Blake, Eichenberg, Dean et al. 2024, arXiv 2407.17465):
muP moved to unit initialisation by the abc symmetry (under Adam, (A/t, B t, C t) trains identically), with unit-
scaled ops (core.unit_scaling.umup) and the model's free scales replaced by hyperparameters `mults` (default 1).
With w the fan-in, d = d_model and L blocks in the residual stack:

    kind      A                          B (init std)   C (Adam lr scale)
    input     1                          1              1/sqrt(d)   (the embedding's fan-out)
    hidden    1/sqrt(w) (in the op)      1              1/sqrt(w)
    output    1/w (in the op)            1              1
    norm      1                          (1)            1
    bias      1                          (0)            1

and every C inside the residual stack times 1/sqrt(L) (depth-muP for Adam). The rules follow the paper and the
reference library graphcore-research/unit-scaling (unit_scaling/optim.py: lr_scale_func_adam, lr_scale_for_depth);
tests/core/unit_scaling/test_umup.py pins them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.nn.formats import Formats
from core.nn.parametrization.base import ABC
from core.nn.parametrization.unit import UnitScaledStream
from core.unit_scaling import umup
from core.unit_scaling.ops import scale_bwd


@dataclass(frozen=True)
class UMuP(UnitScaledStream):
    mults: umup.Mults = field(default_factory=umup.Mults)

    name = "umup"

    def abc(self, kind, shape, *, depth=None, residual_out=False) -> ABC:
        if depth is not None and depth < 1:
            raise ValueError(f"UMuP.abc: depth must be >= 1 or None, got {depth}")
        stack = 1.0 if depth is None else depth**-0.5
        if kind == "hidden":
            if len(shape) != 2:
                raise ValueError(f"UMuP.abc: a hidden weight is [fan_in, fan_out], got shape {shape}")
            return ABC(shape[0] ** -0.5, 1.0, stack * shape[0] ** -0.5)
        if kind == "input":
            return ABC(1.0, 1.0, stack * shape[-1] ** -0.5)
        if kind == "output":
            return ABC(1.0 / shape[0], 1.0, stack)
        return ABC(1.0, 1.0, stack)

    def linear(self, x, w, b=None):
        y = umup.linear(x, w)
        return y if b is None else y + scale_bwd(b, (x.size // x.shape[-1]) ** -0.5)

    def readout(self, x, w):
        return umup.linear_readout(x, w)

    def gelu(self, x):
        return umup.gelu(x, self.mults.ffn_act)

    def tau(self, kind, layer, branches):
        return umup.tau_fraction(umup.residual_tau(layer - 1, branches, self.mults))

    def causal_attention(self, q, k, v, f: Formats):
        """u-muP's attention (muP's 1/head_dim temperature, unit-scaled); only its inputs and output are cast."""
        q, k, v = f.operand(q), f.operand(k), f.operand(v)
        return f.product(umup.causal_attention(q, k, v, self.mults.attn_softmax))

    def masked_attention(self, q, k, v, mask, f):
        raise NotImplementedError("UMuP.masked_attention: u-muP's attention is causal only here")

    def cross_entropy(self, logits, labels):
        return umup.cross_entropy(logits, labels, self.mults.loss_softmax)

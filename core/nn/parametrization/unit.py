"""Unit scaling (Blake et al. 2023, "Unit Scaling: Out-of-the-Box Low-Precision Training"): every op is scaled so
that its output and its gradients have unit variance at initialisation, with the ops of core.unit_scaling.

    kind      A                          B (init std)   C (Adam lr scale)
    input     1                          1              1
    hidden    1/sqrt(fan_in) (in the op) 1              1
    output    1/sqrt(fan_in) (in the op) 1              1
    norm      1                          (1)            1
    bias      1                          (0)            1

`constraint` ties each op's forward and backward scales (core.unit_scaling.apply_constraint: "gmean" their geometric
mean, the paper's default); the residual stream is unit-scaled with branch weights tau: fixed (0.01 for attention,
0.5 for the MLP, the paper's values) or `residual="running_mean"` (branch l weighted 1/(l+1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from core import unit_scaling as us
from core.nn.formats import Formats
from core.nn.parametrization.base import ABC, Parametrization

RESIDUALS = ("fixed", "running_mean")
FIXED_TAU = {"attention": 0.01, "mlp": 0.5}


class UnitScaledStream(Parametrization):
    """The unit-scaled residual stream, shared by unit scaling and u-muP: embedding lookups, layer norm and the
    residual split/add of core.unit_scaling."""

    unit_scaled = True

    def embedding(self, ids, table):
        return us.embedding(ids, table)

    def combine(self, token, position):
        return (token + position) * 2**-0.5

    def layer_norm(self, x, weight, bias=None):
        return us.layer_norm(x, weight, bias)

    def residual_split(self, x, tau):
        return us.residual_split(x, tau)

    def residual_add(self, branch, skip, tau):
        return us.residual_add(branch, skip, tau)


@dataclass(frozen=True)
class UnitScaled(UnitScaledStream):
    constraint: str | None = "gmean"
    residual: str = "fixed"

    name = "unit"

    def __post_init__(self) -> None:
        us.apply_constraint(self.constraint, 1.0, 1.0)  # validates the name
        if self.residual not in RESIDUALS:
            raise ValueError(f"UnitScaled: residual must be one of {', '.join(RESIDUALS)}, got {self.residual!r}")

    def abc(self, kind, shape, *, depth=None, residual_out=False) -> ABC:
        a = 1.0 if kind in ("input", "norm", "bias") else shape[0] ** -0.5
        return ABC(a, 1.0, 1.0)

    def linear(self, x, w, b=None):
        return us.linear(x, w, b, constraint=self.constraint)

    def gelu(self, x):
        return us.gelu(x, constraint=self.constraint)

    def tau(self, kind, layer, branches):
        return us.running_mean_tau(layer) if self.residual == "running_mean" else FIXED_TAU[kind]

    def attention_mix(self, probs, v, f: Formats):
        """The mixing op of causal attention (standard 1/sqrt(d) temperature: it makes the logits unit-variance, so
        unit scaling needs no other), scaled by constants for uniform causal attention at initialisation: row i
        averages i + 1 values, so the output variance is E_i[1/(i+1)], and the gradient reaching value j sums
        (1/(i+1))^2 over the rows i >= j that see it."""
        seq = probs.shape[-1]
        # The probabilities (about 1/(i+1) each) are scaled by seq before they are cast, so the cast sees values of
        # order 1; the product and the values' gradient are scaled back by 1/seq, so that the output is
        # fwd * probs @ v and the values' gradient bwd * probs^T @ dy, exactly as without the detour. The output's
        # forward scale fwd also multiplies the true gradient of the probabilities (and so of q and k): scale_bwd
        # gives it to them, as the constraint ties it to bwd for v.
        fwd, bwd = us.apply_constraint(self.constraint, *causal_mixing_scales(seq))
        probs = f.operand(us.scale_fwd(us.scale_bwd(probs, fwd), float(seq)))
        v = us.scale_bwd(v, bwd / seq)
        return f.product(us.scale_fwd(jnp.einsum("...qk,...kd->...qd", probs, v), fwd / seq))

    def masked_attention(self, q, k, v, mask, f):
        raise NotImplementedError(
            "UnitScaled.masked_attention: unit scaling is not implemented for masked attention: its scales depend on "
            "the mask, which is data; use the standard parametrization"
        )

    def cross_entropy(self, logits, labels):
        """The mean cross-entropy, with the gradient of the sum scaled per the paper (core.unit_scaling)."""
        return us.cross_entropy(logits, labels)


def causal_mixing_scales(seq: int) -> tuple[float, float]:
    """(output scale, values' gradient scale) of uniform causal attention over `seq` positions."""
    rows = 1.0 / np.arange(1, seq + 1, dtype=np.float64)  # the weight each key gets in row i: 1/(i+1)
    out_var = float(np.mean(rows))
    # value j is seen by rows i >= j with weight 1/(i+1): its gradient variance sums those squares
    grad_var = float(np.mean(np.cumsum((rows**2)[::-1])[::-1]))
    return out_var**-0.5, grad_var**-0.5

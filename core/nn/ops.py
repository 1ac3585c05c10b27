"""The ops a model is built from, chosen by config: regular or unit-scaled, in any number format.

A model written against `Ops` becomes its unit-scaled twin by `Ops(scaling="unit")`: the same parameters and
graph, with the unit-scaling rules (core.unit_scaling) for scales and N(0, 1) initialisation instead of the
regular GPT-2-style one. The scalings "sp", "mup" and "umup" are the three parametrizations compared by u-muP
(core.unit_scaling.umup): the standard one with fan-in initialisation, muP relative to a base width
(`width_ratio` = width / base width; 1 is SP) and the unit-scaled muP with its hyperparameters `mults`; their
per-tensor learning rates are core.unit_scaling.umup.lr_scales.

Casting: every op's inputs, weights and output pass through `quantise` (forward values to `fwd_fmt`, their
gradients to `bwd_fmt`), so activations, weights *and* gradients live on the format's grid; the
arithmetic between casts is FP32, as on a chip with FP32 accumulation. In the unit-scaled ops the scales are applied
before the casts, which is the point: the cast sees well-scaled values in both directions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np

from core import unit_scaling as us
from core.numerics import FloatFormat, get_format, quantise
from core.numerics.cast import ROUNDINGS
from core.unit_scaling import umup

SCALINGS = ("regular", "unit", "sp", "mup", "umup")


def masked_softmax(scores: jax.Array, mask: jax.Array, axis: int = -1) -> jax.Array:
    """softmax over the entries where `mask` is True, zero elsewhere.

    Masked scores become the dtype's most negative value rather than -inf, and the probabilities are zeroed where
    the mask is False afterwards, so a row with nothing allowed gives zeros with finite gradients (never NaN)."""
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    return jnp.where(mask, jax.nn.softmax(scores, axis=axis), 0.0)


RESIDUALS = ("fixed", "running_mean")
CAST_SCOPES = ("all", "matmul")
# The LM head (and so the logits and their gradient): "fp32" keeps it out of every low-precision format, the
# FP8 recipe of both FP8 papers (the FP8 LLM paper's head stays in higher precision; core.nn.fp8 and the unit-
# scaling FP8 arms share this); "low" casts it like every other layer (pure FP16 training).
HEAD_PRECISIONS = ("fp32", "low")
DEFAULT_MULTS = umup.Mults()


@dataclass(frozen=True)
class Ops:
    scaling: str = "regular"
    fwd_fmt: FloatFormat | str | None = None
    bwd_fmt: FloatFormat | str | None = None
    constraint: str | None = "gmean"
    # "all": every op's inputs, weights and outputs, and every gradient at those points, are cast (pure
    # low-precision training, as the FP16 arms do); "matmul": only the operands of matmuls, forward and backward
    # (activations and weights to fwd_fmt; the output gradient that the backward matmuls consume to bwd_fmt), the
    # FP8 recipe of the unit-scaling and FP8 papers, with FP32 accumulation and everything else in FP32.
    cast_scope: str = "all"
    # how every cast of fwd_fmt/bwd_fmt rounds ("nearest" ties-to-even or "stochastic", keyed by the enclosing
    # core.numerics.stochastic_rounding block) and whether it saturates at the format's max instead of
    # overflowing to Inf/NaN
    rounding: str = "nearest"
    saturate: bool = False
    head_precision: str = "fp32"
    residual: str = "fixed"
    tau_attention: float = 0.01  # the paper's fixed-tau values: small for attention, 0.5 for the MLP
    tau_mlp: float = 0.5
    regular_init_std: float = 0.02  # GPT-2's
    # FP8 linear layers with per-tensor scale biases (core.numerics.fp8): None, or a policy of
    # core.numerics.fp8.POLICIES ("amax", "cscale", "delayed", "none"); E4M3 activations and weights, E5M2
    # gradients; fp8_history: the delayed policy's amax window. Regular scaling and no other casts only.
    fp8: str | None = None
    fp8_history: int = 16
    # muP (scaling "mup"): the model's width over its base width (readout multiplier 1/ratio, attention logits
    # q.k / sqrt(head_dim ratio), hidden learning rates / ratio); u-muP (scaling "umup"): its hyperparameters
    width_ratio: float = 1.0
    mults: umup.Mults = DEFAULT_MULTS

    def __post_init__(self) -> None:
        if self.scaling not in SCALINGS:
            raise ValueError(f"Ops: scaling must be one of {', '.join(SCALINGS)}, got {self.scaling!r}")
        if self.cast_scope not in CAST_SCOPES:
            raise ValueError(f"Ops: cast_scope must be one of {', '.join(CAST_SCOPES)}, got {self.cast_scope!r}")
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"Ops: rounding must be one of {', '.join(ROUNDINGS)}, got {self.rounding!r}")
        if self.head_precision not in HEAD_PRECISIONS:
            raise ValueError(
                f"Ops: head_precision must be one of {', '.join(HEAD_PRECISIONS)}, got {self.head_precision!r}"
            )
        if not self.width_ratio > 0:
            raise ValueError(f"Ops: width_ratio must be > 0, got {self.width_ratio}")
        if self.residual not in RESIDUALS:
            raise ValueError(f"Ops: residual must be one of {', '.join(RESIDUALS)}, got {self.residual!r}")
        us.apply_constraint(self.constraint, 1.0, 1.0)  # validates the name
        if self.fp8 is not None:
            from core.numerics.fp8 import check_policy

            check_policy(self.fp8)
            if self.scaling != "regular" or self.fwd_fmt is not None or self.bwd_fmt is not None:
                raise ValueError(
                    f"Ops: fp8={self.fp8!r} scales each linear layer's tensors itself; it combines with "
                    "scaling='regular' and no fwd_fmt/bwd_fmt casts only"
                )
            if self.fp8_history < 1:
                raise ValueError(f"Ops: fp8_history must be >= 1, got {self.fp8_history}")
        for name in ("fwd_fmt", "bwd_fmt"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, get_format(value))

    @property
    def unit(self) -> bool:
        return self.scaling == "unit"

    @property
    def unit_scaled(self) -> bool:
        """The unit-scaled ops (embedding, layer norm, residual split/add) serve unit scaling and u-muP alike."""
        return self.scaling in ("unit", "umup")

    @property
    def parametrization(self) -> str | None:
        """ "sp", "mup" or "umup" for the u-muP paper's parametrizations, else None."""
        return self.scaling if self.scaling in umup.PARAMETRIZATIONS else None

    @cached_property
    def _casts(self) -> bool:
        return any(f is not None and f.name != "fp32" for f in (self.fwd_fmt, self.bwd_fmt))

    @cached_property
    def head_ops(self) -> Ops:
        """The ops of the LM head under `head_precision`: these ops, or their FP32 twin (same scaling, no casts)."""
        if self.head_precision == "low":
            return self
        return replace(self, fwd_fmt=None, bwd_fmt=None, fp8=None)

    # ------------------------------------------------------------------ casting and initialisation
    def _quantise(self, x: jax.Array, fwd, bwd) -> jax.Array:
        return quantise(x, fwd, bwd, saturate=self.saturate, rounding=self.rounding)

    def q(self, x: jax.Array) -> jax.Array:
        """At an op boundary: cast the value to the forward format and its gradient to the backward format
        (only when cast_scope is "all")."""
        return self._quantise(x, self.fwd_fmt, self.bwd_fmt) if self._casts and self.cast_scope == "all" else x

    def q_operand(self, x: jax.Array) -> jax.Array:
        """A matmul operand: cast to the forward format. In the "matmul" scope its gradient is left alone: the
        backward matmuls produce it in FP32 (a weight's gradient goes to the FP32 master weight; an activation's
        is cast where the next backward matmul consumes it, at that matmul's q_product)."""
        if not self._casts:
            return x
        return self._quantise(x, self.fwd_fmt, self.bwd_fmt if self.cast_scope == "all" else None)

    def q_product(self, y: jax.Array) -> jax.Array:
        """A matmul's output: in the "matmul" scope its value stays FP32 (FP32 accumulation) but the gradient that
        the backward matmuls consume is cast to the backward format; in the "all" scope, a plain op boundary."""
        if self._casts and self.cast_scope == "matmul":
            return self._quantise(y, None, self.bwd_fmt)
        return self.q(y)

    def init_std(self, *, residual_output: bool = False, depth: int = 1) -> float | None:
        """N(0, std) for weights: 1 for unit scaling; 0.02 (and 0.02/sqrt(2 depth) for residual outputs) regular;
        None for the u-muP paper's parametrizations, whose std depends on the weight (weight_std)."""
        if self.parametrization is not None:
            return None
        if self.unit:
            return 1.0
        return self.regular_init_std / (math.sqrt(2 * depth) if residual_output else 1.0)

    def weight_std(self, kind: str, fan_in: int) -> float:
        """The init std of a weight of `kind` (core.unit_scaling.umup.KINDS) with `fan_in` inputs."""
        if self.parametrization is not None:
            return umup.init_std(self.parametrization, kind, fan_in)
        if kind == "input":
            return self.init_std() if self.unit else 0.02
        return self.init_std()

    # ------------------------------------------------------------------ ops
    def linear(self, x: jax.Array, w: jax.Array, b: jax.Array | None = None) -> jax.Array:
        x, w = self.q_operand(x), self.q_operand(w)
        if self.unit:
            y = us.linear(x, w, b, constraint=self.constraint)
        elif self.scaling == "umup":
            y = umup.linear(x, w)
            if b is not None:
                y = y + us.scale_bwd(b, (x.size // x.shape[-1]) ** -0.5)
        else:
            y = jnp.matmul(x, w) + (0 if b is None else b)
        return self.q_product(y)

    def readout(self, x: jax.Array, w: jax.Array) -> jax.Array:
        """The output layer x @ w: a plain linear layer, except muP's 1/width_ratio multiplier and u-muP's
        unit-scaled readout (1/fan_in)."""
        if self.scaling == "umup":
            return self.q_product(umup.linear_readout(self.q_operand(x), self.q_operand(w)))
        y = self.linear(x, w)
        if self.scaling == "mup":
            fan_in = w.shape[0]
            return y * umup.output_multiplier("mup", fan_in, base_fan_in=fan_in / self.width_ratio)
        return y

    def gelu(self, x: jax.Array) -> jax.Array:
        if self.scaling == "umup":
            return self.q(umup.gelu(x, self.mults.ffn_act))
        y = us.gelu(x, constraint=self.constraint) if self.unit else jax.nn.gelu(x, approximate=False)
        return self.q(y)

    def embedding(self, ids: jax.Array, table: jax.Array) -> jax.Array:
        table = self.q(table)
        return self.q(us.embedding(ids, table) if self.unit_scaled else jnp.take(table, ids, axis=0))

    def layer_norm(self, x: jax.Array, weight: jax.Array, bias: jax.Array | None = None) -> jax.Array:
        weight = self.q(weight)
        bias = None if bias is None else self.q(bias)
        if self.unit_scaled:
            return self.q(us.layer_norm(x, weight, bias))
        y = us.layer_norm(x) * weight  # without affine parameters the unit and regular layer norms coincide
        return self.q(y if bias is None else y + bias)

    def tau(self, kind: str, layer: int, branches: int | None = None) -> float:
        """The residual weight of branch `layer` (1-based over all `branches`) of kind 'attention' or 'mlp'; u-muP
        takes it from its depth rule (core.unit_scaling.umup.residual_tau), which needs `branches`."""
        if self.scaling == "umup":
            if branches is None:
                raise ValueError("Ops.tau: u-muP's residual rule needs the number of branches")
            return umup.tau_fraction(umup.residual_tau(layer - 1, branches, self.mults))
        if self.residual == "running_mean":
            return us.running_mean_tau(layer)
        return self.tau_attention if kind == "attention" else self.tau_mlp

    def residual_split(self, x: jax.Array, tau: float) -> tuple[jax.Array, jax.Array]:
        return us.residual_split(x, tau) if self.unit_scaled else (x, x)

    def residual_add(self, branch: jax.Array, skip: jax.Array, tau: float) -> jax.Array:
        return self.q(us.residual_add(branch, skip, tau) if self.unit_scaled else branch + skip)

    def causal_attention(self, q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        """softmax(q k^T / sqrt(d) + causal mask) v for q, k, v [..., S, d].

        Both models use the standard 1/sqrt(d) temperature (it makes the logits unit-variance, so unit scaling
        needs no other). Unit scaling then scales the mixing op by constants for uniform causal attention at
        initialisation: row i averages i + 1 values, so the output variance is E_i[1/(i+1)], and the gradient
        reaching value j sums (1/(i+1))^2 over the rows i >= j that see it.
        """
        seq, d = q.shape[-2], q.shape[-1]
        if self.scaling == "umup":
            # u-muP's attention (muP's 1/head_dim temperature); like the u-muP paper's FP8 scheme, the casts are
            # in the linear layers only
            return umup.causal_attention(q, k, v, self.mults.attn_softmax)
        if self.scaling in ("sp", "mup"):
            # muP's logits are q.k / head_dim at the width's scale: 1/sqrt(head_dim) at the base width (SP's)
            mask = jnp.tril(jnp.ones((seq, seq), bool))
            probs = jax.nn.softmax(jnp.einsum("...qd,...kd->...qk", q, k) * self._temperature(d), -1, where=mask)
            return jnp.einsum("...qk,...kd->...qd", probs, v)
        q, k, v = self.q_operand(q), self.q_operand(k), self.q_operand(v)
        mask = jnp.tril(jnp.ones((seq, seq), bool))
        scores = self.q_product(jnp.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d))
        probs = jax.nn.softmax(scores, axis=-1, where=mask)
        if not self.unit:
            return self.q_product(jnp.einsum("...qk,...kd->...qd", self.q_operand(probs), v))
        # The probabilities (about 1/(i+1) each) are scaled by seq before they are cast, so the cast sees values
        # of order 1; the product and the values' gradient are scaled back by 1/seq, so that the output is
        # fwd * probs @ v and the values' gradient bwd * probs^T @ dy, exactly as without the detour. The output's
        # forward scale fwd also multiplies the true gradient of the probabilities (and so of q and k): scale_bwd
        # gives it to them, as the constraint ties it to bwd for v.
        fwd, bwd = us.apply_constraint(self.constraint, *_causal_mixing_scales(seq))
        probs = self.q_operand(us.scale_fwd(us.scale_bwd(probs, fwd), float(seq)))
        v = us.scale_bwd(v, bwd / seq)
        return self.q_product(us.scale_fwd(jnp.einsum("...qk,...kd->...qd", probs, v), fwd / seq))

    def masked_attention(self, q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array) -> jax.Array:
        """softmax(q k^T / sqrt(d), over the keys where `mask` is True) v for q [..., Sq, d], k, v [..., Sk, d] and
        a boolean mask broadcastable to [..., Sq, Sk] (True: the query may attend to the key).

        A query row with no key allowed yields zeros, with finite gradients (see masked_softmax). Regular scaling
        only: unit scaling's constant output scales assume a known attention pattern (causal_attention derives them
        for the causal one); under an arbitrary mask they would depend on the data.
        """
        if self.unit_scaled:
            raise NotImplementedError(
                "Ops.masked_attention: unit scaling (scaling='unit') is not implemented for masked attention: its "
                "scales depend on the mask, which is data; use scaling='regular'"
            )
        q, k, v = self.q_operand(q), self.q_operand(k), self.q_operand(v)
        scores = self.q_product(jnp.einsum("...qd,...kd->...qk", q, k) * self._temperature(q.shape[-1]))
        probs = masked_softmax(scores, mask)
        return self.q_product(jnp.einsum("...qk,...kd->...qd", self.q_operand(probs), v))

    def cross_entropy(self, logits: jax.Array, labels: jax.Array) -> jax.Array:
        """Mean next-token cross-entropy in nats (unit: with the gradient of the sum, scaled per the paper). The
        logits are cast only where the head is (head_precision "low")."""
        logits = self.head_ops.q(logits)
        if self.unit:
            return us.cross_entropy(logits, labels)
        if self.scaling == "umup":
            return umup.cross_entropy(logits, labels, self.mults.loss_softmax)
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    def _temperature(self, head_dim: int) -> float:
        """The attention logits' factor: 1/sqrt(head_dim), or muP's 1/sqrt(head_dim * width_ratio) (that is
        sqrt(base head_dim) / head_dim)."""
        return 1.0 / math.sqrt(head_dim * (self.width_ratio if self.scaling == "mup" else 1.0))


def _causal_mixing_scales(seq: int) -> tuple[float, float]:
    rows = 1.0 / np.arange(1, seq + 1, dtype=np.float64)  # the weight each key gets in row i: 1/(i+1)
    out_var = float(np.mean(rows))
    # value j is seen by rows i >= j with weight 1/(i+1): its gradient variance sums those squares
    grad_var = float(np.mean(np.cumsum((rows**2)[::-1])[::-1]))
    return out_var**-0.5, grad_var**-0.5

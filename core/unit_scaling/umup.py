"""The ops of u-muP, the unit-scaled maximal update parametrization (Blake, Eichenberg, Dean et al. 2024, arXiv
2407.17465). Its abc table (init std, multipliers, Adam learning-rate scales per parameter kind), and those of SP and
muP (Yang et al. 2022, "Tensor Programs V") it is compared with, are core.nn.parametrization.umup and .mup; the
per-tensor learning rates are applied by `scale_by_tree`.

u-muP replaces the free scales of the model by hyperparameters with default 1 that are swept instead
(`Mults`): the residual contribution and its attention/MLP ratio (`residual_tau`), the attention softmax's
temperature (`attention`, logits alpha q.k/d_head), the MLP activation's input scale (`gelu`) and the loss softmax's
(`cross_entropy`). Each op is unit-scaled for its multiplier by the reference library's empirical models of the
output std, interpolated between a small-multiplier and a large-multiplier limit (`log_interpolate`).

Our rules follow the paper and the reference PyTorch library graphcore-research/unit-scaling (read, not copied):
`unit_scaling/optim.py` (lr_scale_func_adam, lr_scale_for_depth), `unit_scaling/functional.py` (linear_readout,
gelu, softmax, scaled_dot_product_attention, cross_entropy, residual_split/residual_add), `unit_scaling/core/
functional.py` (transformer_residual_scaling_rule, logarithmic_interpolation) and `unit_scaling/_modules.py` (the
constraint each layer uses, DepthSequential's depth). The model code that uses them is core.nn.parametrization.umup.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from core.unit_scaling.hparams import PARAMETRIZATIONS, Mults  # noqa: F401  (re-exported: no JAX there)
from core.unit_scaling.ops import apply_constraint, matmul, scale_bwd, scale_fwd
from core.unit_scaling.ops import cross_entropy as unit_cross_entropy

# The constraint each u-muP layer ties its forward and input-gradient scales with (unit_scaling/_modules.py): hidden
# linear layers and the elementwise ops give the input gradient the output's scale (the true gradient); the readout
# is unconstrained, its gradient scaled for unit variance (only a constant factor off, harmless for Adam: nothing
# but the readout feeds the loss)
HIDDEN_CONSTRAINT = "to_output_scale"
READOUT_CONSTRAINT = None


class ScaleByTreeState(NamedTuple):
    pass


def scale_by_tree(scales: Any) -> optax.GradientTransformation:
    """Multiply every update by its own constant (a tree like the parameters'): per-tensor learning rates.

    optax.chain(optax.scale_by_adam(), scale_by_tree(lr_scales(params, kinds, "umup")), optax.scale(-lr))
    """

    def init(params):
        del params
        return ScaleByTreeState()

    def update(updates, state, params=None):
        del params
        return jax.tree_util.tree_map(lambda u, s: u * jnp.asarray(s, u.dtype), updates, scales), state

    return optax.GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------- residual rule


def residual_tau(index: int, branches: int, mults: Mults = Mults()) -> float:  # noqa: B008  (frozen)
    """tau of residual branch `index` (0-based; attention and MLP branches alternate, attention first) of
    `branches` in all: the branch enters the stream as (tau b + skip) / sqrt(1 + tau^2).

    Chosen so that every attention branch contributes the same variance to the final stream, every MLP branch the
    same, the attention branches together and the MLP branches together mults.residual^2 times the embedding on
    average, and the attention branches mults.residual_attn_ratio^2 times the MLP branches (the paper's Appendix G;
    transformer_residual_scaling_rule).
    """
    if branches < 1 or not 0 <= index < branches:
        raise ValueError(f"residual_tau: need 0 <= index < branches, got index {index} of {branches}")
    alpha_mlp = mults.residual * (2 / (1 + mults.residual_attn_ratio**2)) ** 0.5
    alpha_attn = mults.residual_attn_ratio * alpha_mlp
    n_attn, n_mlp = (index + 1) // 2, index // 2  # branches of each kind before this one
    alpha = alpha_attn if index % 2 == 0 else alpha_mlp
    return alpha / (branches / 2 + n_attn * alpha_attn**2 + n_mlp * alpha_mlp**2) ** 0.5


def tau_fraction(tau: float) -> float:
    """The same weighting as core.unit_scaling.residual_split/residual_add's tau (the branch's share of the
    variance, in (0, 1)): tau^2 / (1 + tau^2)."""
    return tau**2 / (1 + tau**2)


# ---------------------------------------------------------------------------------------------- ops


def log_interpolate(alpha: float, lower: float, upper: float) -> float:
    """exp(alpha log(upper) + (1 - alpha) log(lower)): from `lower` at alpha 0 to `upper` at 1, geometrically."""
    if lower <= 0 or upper <= 0:
        raise ValueError(f"log_interpolate: limits must be > 0, got {lower}, {upper}")
    return math.exp(alpha * math.log(upper) + (1 - alpha) * math.log(lower))


def _sigmoid_of_log(x: float) -> float:
    """sigmoid(log x) = x / (1 + x): the interpolation weight of the library's empirical models."""
    return x / (1 + x)


def _scaled_elementwise(fn: Callable[[jax.Array], jax.Array], x, fwd: float, bwd: float, constraint):
    fwd, bwd = apply_constraint(constraint, fwd, bwd)
    return scale_fwd(fn(scale_bwd(x, bwd)), fwd)


def linear(x: jax.Array, w: jax.Array) -> jax.Array:
    """A hidden layer: x @ w / sqrt(fan_in), whose input gradient is the true one (to_output_scale) and weight
    gradient is scaled by batch^-1/2."""
    return matmul(x, w, constraint=HIDDEN_CONSTRAINT)


def linear_readout(x: jax.Array, w: jax.Array) -> jax.Array:
    """The readout: x @ w / fan_in (muP's output multiplier in unit-scaled form); the input gradient is scaled by
    fan_out^-1/2 and the weight gradient by batch^-1/2, so both are unit at initialisation (unconstrained)."""
    fan_in, fan_out = w.shape
    batch = x.size // x.shape[-1]
    fwd, bwd = apply_constraint(READOUT_CONSTRAINT, 1.0 / fan_in, fan_out**-0.5)
    y = jnp.matmul(scale_bwd(x, bwd), scale_bwd(w, batch**-0.5))
    return scale_fwd(y, fwd)


def gelu_scales(mult: float) -> tuple[float, float]:
    """(output scale, input-gradient scale) of gelu(mult x)/mult for unit x: 2 for small mult (gelu ~ x/2), and
    the ReLU limits sqrt(2/(1 - 1/pi)) and sqrt(2) for large."""
    alpha = _sigmoid_of_log(4 * mult**2)
    return (
        log_interpolate(alpha, 2.0, (2 / (1 - 1 / math.pi)) ** 0.5),
        log_interpolate(alpha, 2.0, 2**0.5),
    )


def gelu(x: jax.Array, mult: float = 1.0) -> jax.Array:
    def fn(v):
        return jax.nn.gelu(v * mult, approximate=False) / mult

    return _scaled_elementwise(fn, x, *gelu_scales(mult), HIDDEN_CONSTRAINT)


def attention_scale(seq: int, head_dim: int, mult: float = 1.0, causal: bool = True) -> float:
    """The scale of u-muP attention's values' path for logits mult q.k/head_dim: from sqrt(seq / log seq) (causal)
    or sqrt(seq) at small mult (near-uniform attention averages many values) to 1 at large (one-hot)."""
    alpha = _sigmoid_of_log(mult**2 / (4 * head_dim))
    lower = ((math.log(seq) if causal else 1.0) / seq) ** 0.5
    return 1.0 / log_interpolate(alpha, lower, 1.0)


def causal_attention(q: jax.Array, k: jax.Array, v: jax.Array, mult: float = 1.0) -> jax.Array:
    """softmax(mult q.k^T / head_dim + causal mask) v for q, k, v [..., S, d], with q, k, v's gradients and the
    output scaled by attention_scale (muP's 1/head_dim temperature; the reference's scaled_dot_product_attention)."""
    seq, d = q.shape[-2], q.shape[-1]
    scale = attention_scale(seq, d, mult, causal=True)
    q, k, v = (scale_bwd(t, scale) for t in (q, k, v))
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    probs = jax.nn.softmax(jnp.einsum("...qd,...kd->...qk", q, k) * (mult / d), axis=-1, where=mask)
    return scale_fwd(jnp.einsum("...qk,...kd->...qd", probs, v), scale)


def cross_entropy(logits: jax.Array, labels: jax.Array, mult: float = 1.0) -> jax.Array:
    """Mean cross-entropy of softmax(mult * logits): value the mean, gradient that of the sum with the logits'
    gradient scaled by vocab / sqrt(vocab - 1) (core.unit_scaling.cross_entropy; the multiplier scales only the
    value, so the gradient reaching the logits is the same whichever scale is applied first)."""
    return unit_cross_entropy(scale_fwd(logits, mult), labels)

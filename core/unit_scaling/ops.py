"""Unit-scaled ops (Blake, Orr & Luschi, "Unit Scaling", ICML 2023).

Each op multiplies its output by a forward scale and the gradient of each input by a backward scale, chosen from
shapes alone so that unit-variance inputs give a unit-variance output and unit-variance incoming gradients give
unit-variance input gradients. `scale_fwd(x, s)` scales only the value, `scale_bwd(x, s)` only the gradient.

Where an op's forward scale and its input-gradient scale must agree (the gradient would otherwise be wrong by a
constant factor relative to other paths), a *constraint* ties them:

    "gmean"               sqrt(fwd * bwd) for both (the paper's default)
    "hmean"               2 / (1/fwd + 1/bwd) for both
    "to_output_scale"     fwd for both
    "to_grad_input_scale" bwd for both
    None                  unconstrained: the values are exact gradients only up to a per-op constant

Weight-gradient scales are always free: weights are leaves of the graph, so a constant factor there only changes
the effective learning rate of an optimiser like Adam, which is invariant to it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from functools import partial

import jax
import jax.numpy as jnp

CONSTRAINTS = ("gmean", "hmean", "to_output_scale", "to_grad_input_scale", None)

# Empirical scales of the paper (Table A.2): the std of gelu(x) and of its gradient for x ~ N(0, 1), and of
# softmax over `dim` unit-Gaussian logits times dim.
GELU_FWD_STD = 0.588
GELU_BWD_STD = 0.675
SOFTMAX_FWD_STD = 1.31
SOFTMAX_BWD_STD = 1.65


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scale_fwd(x: jax.Array, scale: float) -> jax.Array:
    return x * jnp.asarray(scale, x.dtype)


_scale_fwd.defvjp(lambda x, s: (x * jnp.asarray(s, x.dtype), None), lambda s, _, g: (g,))


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scale_bwd(x: jax.Array, scale: float) -> jax.Array:
    return x


_scale_bwd.defvjp(lambda x, s: (x, None), lambda s, _, g: (g * jnp.asarray(s, g.dtype),))

# True inside `plain_autodiff()`: the scales become ordinary multiplications (read when a function is traced)
_PLAIN = contextvars.ContextVar("unit_scaling_plain_autodiff", default=False)


def scale_fwd(x: jax.Array, scale: float) -> jax.Array:
    """x * scale in the forward pass; the gradient passes unchanged."""
    return x * jnp.asarray(scale, x.dtype) if _PLAIN.get() else _scale_fwd(x, scale)


def scale_bwd(x: jax.Array, scale: float) -> jax.Array:
    """x unchanged in the forward pass; the gradient is multiplied by scale."""
    return x if _PLAIN.get() else _scale_bwd(x, scale)


@contextlib.contextmanager
def plain_autodiff() -> Iterator[None]:
    """Functions traced inside take ordinary derivatives: scale_fwd multiplies value and gradient alike and
    scale_bwd is the identity. The forward values are unchanged, so comparing a unit-scaled model's gradients with
    and without this block shows whether its scaled backward pass points along the true gradient of its own
    forward function (every parameter's gradient should differ only by a positive constant)."""
    token = _PLAIN.set(True)
    try:
        yield
    finally:
        _PLAIN.reset(token)


def apply_constraint(constraint: str | None, fwd: float, bwd: float) -> tuple[float, float]:
    """(forward scale, input-gradient scale) after the constraint."""
    if constraint == "gmean":
        s = math.sqrt(fwd * bwd)
        return s, s
    if constraint == "hmean":
        s = 2.0 / (1.0 / fwd + 1.0 / bwd)
        return s, s
    if constraint == "to_output_scale":
        return fwd, fwd
    if constraint == "to_grad_input_scale":
        return bwd, bwd
    if constraint is None:
        return fwd, bwd
    raise ValueError(f"unknown constraint {constraint!r}: choose one of {', '.join(map(str, CONSTRAINTS))}")


def _scaled(fn, x: jax.Array, fwd: float, bwd: float, constraint: str | None) -> jax.Array:
    fwd, bwd = apply_constraint(constraint, fwd, bwd)
    return scale_fwd(fn(scale_bwd(x, bwd)), fwd)


# ---------------------------------------------------------------------------------------------- ops


def matmul(x: jax.Array, w: jax.Array, *, constraint: str | None = "gmean") -> jax.Array:
    """x @ w for x [..., fan_in] and w [fan_in, fan_out], with w ~ N(0, 1) at initialisation.

    Output scale fan_in^-1/2, input-gradient scale fan_out^-1/2 (tied by the constraint), weight-gradient scale
    batch^-1/2 where batch is the number of rows of x.
    """
    fan_in, fan_out = w.shape[-2], w.shape[-1]
    batch = x.size // x.shape[-1]
    fwd, bwd = apply_constraint(constraint, fan_in**-0.5, fan_out**-0.5)
    y = jnp.matmul(scale_bwd(x, bwd), scale_bwd(w, batch**-0.5))
    return scale_fwd(y, fwd)


def linear(x: jax.Array, w: jax.Array, b: jax.Array | None = None, *, constraint: str | None = "gmean"):
    """matmul plus a bias whose gradient is scaled by batch^-1/2 (it sums `batch` unit terms)."""
    y = matmul(x, w, constraint=constraint)
    if b is None:
        return y
    batch = x.size // x.shape[-1]
    return y + scale_bwd(b, batch**-0.5)


def gelu(x: jax.Array, *, constraint: str | None = "gmean") -> jax.Array:
    return _scaled(partial(jax.nn.gelu, approximate=False), x, 1 / GELU_FWD_STD, 1 / GELU_BWD_STD, constraint)


def softmax(x: jax.Array, axis: int = -1, *, constraint: str | None = "gmean", where=None) -> jax.Array:
    """softmax scaled to unit std: forward x dim/1.31, backward x dim/1.65 (dim = size along `axis`)."""
    dim = x.shape[axis]
    return _scaled(
        partial(jax.nn.softmax, axis=axis, where=where), x, dim / SOFTMAX_FWD_STD, dim / SOFTMAX_BWD_STD, constraint
    )


def dropout(x: jax.Array, rate: float, key: jax.Array | None, *, deterministic: bool = False) -> jax.Array:
    """Inverted dropout, then x sqrt(1 - rate): net 1/sqrt(1 - rate), which keeps a unit variance."""
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if deterministic or rate == 0:
        return x
    if key is None:
        raise ValueError("dropout: a key is needed unless deterministic=True or rate=0")
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / jnp.sqrt(1 - rate), 0).astype(x.dtype)


def add(a: jax.Array, b: jax.Array) -> jax.Array:
    """(a + b) / sqrt(2): the sum of two independent unit branches, kept at unit variance."""
    return (a + b) * jnp.asarray(2**-0.5, a.dtype)


def residual_split(x: jax.Array, tau: float) -> tuple[jax.Array, jax.Array]:
    """Split the residual stream into (branch input, skip). Their gradients are scaled by sqrt(tau) and
    sqrt(1 - tau), so that the gradient summed at the split has unit variance."""
    _check_tau(tau)
    return scale_bwd(x, math.sqrt(tau)), scale_bwd(x, math.sqrt(1 - tau))


def residual_add(branch: jax.Array, skip: jax.Array, tau: float) -> jax.Array:
    """sqrt(tau) branch + sqrt(1 - tau) skip, scaling only the forward values (see residual_split)."""
    _check_tau(tau)
    return scale_fwd(branch, math.sqrt(tau)) + scale_fwd(skip, math.sqrt(1 - tau))


def running_mean_tau(layer: int) -> float:
    """tau of the 'running mean' residual scheme for residual branch `layer` (1-based): 1 / (1 + layer), so the
    stream is the running mean of the embedding and every branch so far, each with equal weight."""
    if layer < 1:
        raise ValueError(f"running_mean_tau: layer is 1-based, got {layer}")
    return 1.0 / (1 + layer)


def _check_tau(tau: float) -> None:
    if not 0 < tau < 1:
        raise ValueError(f"residual tau must be in (0, 1), got {tau}")


def embedding(ids: jax.Array, table: jax.Array) -> jax.Array:
    """table[ids] with table ~ N(0, 1); its gradient is scaled by sqrt(vocab / batch) (batch = number of ids):
    each row receives on average batch/vocab unit-variance gradients."""
    vocab = table.shape[0]
    return jnp.take(scale_bwd(table, math.sqrt(vocab / ids.size)), ids, axis=0)


def layer_norm(
    x: jax.Array, weight: jax.Array | None = None, bias: jax.Array | None = None, *, eps: float = 1e-5
) -> jax.Array:
    """Layer norm over the last axis; the affine parameters' gradients are scaled by sqrt(normalized / numel)."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    y = (x - mean) * jax.lax.rsqrt(var + eps)
    s = math.sqrt(x.shape[-1] / x.size)
    if weight is not None:
        y = y * scale_bwd(weight, s)
    if bias is not None:
        y = y + scale_bwd(bias, s)
    return y


def cross_entropy(logits: jax.Array, labels: jax.Array, *, mask: jax.Array | None = None) -> jax.Array:
    """Mean cross-entropy whose gradient needs no loss scale.

    The value is the usual mean over positions. The gradient is that of the *sum* (not divided by the number of
    positions) times vocab / sqrt(vocab - 1): at initialisation softmax(logits) - onehot then has unit std.
    """
    vocab = logits.shape[-1]
    logits = scale_bwd(logits, vocab / math.sqrt(vocab - 1))
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    if mask is not None:
        nll = jnp.where(mask, nll, 0.0)
        count = jnp.maximum(jnp.sum(mask), 1)
    else:
        count = nll.size
    total = jnp.sum(nll)
    # value total / count, gradient that of total: stop_gradient carries the difference without a derivative
    return total + jax.lax.stop_gradient(total / count - total)

"""Scaling strategies that keep low-precision tensors inside their format's range.

- Loss scaling (static, and dynamic with back-off and growth): multiply the loss by S so small gradients stay
  above the format's smallest value, divide the gradients by S before the update.
- Per-tensor amax scaling (Perez et al. 2023, "Training and inference of large language models using 8-bit
  floating point"): b = clip(floor(log2(fmt_max / amax)), -31, 31); cast x * 2^b; undo 2^-b after the matmul.
- Delayed scaling (NVIDIA Transformer Engine): the scale comes from a history of past amaxes, so it is known
  before the tensor is computed: scale = (fmt_max / amax_ref) / 2^margin.

State is held in NamedTuples and updated by pure functions, so everything runs under jit and inside lax.scan.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp

from core.numerics.cast import cast_to_format
from core.numerics.formats import FloatFormat, get_format
from core.numerics.stats import max_abs

# ---------------------------------------------------------------------------------------------- loss scaling


def all_finite(tree) -> jax.Array:
    """True when every leaf of `tree` is free of Inf and NaN."""
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def scale_loss(loss: jax.Array, scale) -> jax.Array:
    return loss * scale


def unscale_grads(grads, scale):
    """Divide every gradient by the loss scale (in float32, before any update)."""
    return jax.tree_util.tree_map(lambda g: (g.astype(jnp.float32) / scale).astype(g.dtype), grads)


class DynamicLossScale(NamedTuple):
    """Dynamic loss scaling state: the current scale and the number of finite steps since it last changed."""

    scale: jax.Array
    good_steps: jax.Array


def dynamic_loss_scale_init(initial_scale: float = 2.0**15) -> DynamicLossScale:
    if not initial_scale > 0:
        raise ValueError(f"dynamic_loss_scale_init: initial_scale must be > 0, got {initial_scale}")
    return DynamicLossScale(jnp.float32(initial_scale), jnp.int32(0))


def dynamic_loss_scale_update(
    state: DynamicLossScale,
    grads_finite: jax.Array,
    *,
    growth_interval: int = 2000,
    factor: float = 2.0,
    min_scale: float = 1.0,
    max_scale: float = 2.0**24,
) -> DynamicLossScale:
    """Back off (scale / factor) after a step with non-finite gradients, which the caller skips; grow
    (scale * factor) after `growth_interval` finite steps in a row. The scale stays within [min_scale, max_scale].
    """
    if growth_interval < 1 or not factor > 1:
        raise ValueError(
            f"dynamic_loss_scale_update: need growth_interval >= 1 and factor > 1, got {growth_interval}, {factor}"
        )
    good = state.good_steps + 1
    grow = grads_finite & (good >= growth_interval)
    scale = jnp.where(grads_finite, jnp.where(grow, state.scale * factor, state.scale), state.scale / factor)
    scale = jnp.clip(scale, min_scale, max_scale).astype(jnp.float32)
    good = jnp.where(grads_finite & ~grow, good, 0).astype(jnp.int32)
    return DynamicLossScale(scale, good)


# ---------------------------------------------------------------------------------------------- amax scaling


def amax(x: jax.Array) -> jax.Array:
    """max |x| in float32 (NaN if x holds a NaN, as the scale must then not be trusted: core.numerics.stats.max_abs,
    which finds NaN apart from XLA's CPU max-reduction)."""
    return max_abs(x).astype(jnp.float32)


def amax_scale_bias(amax_value: jax.Array, fmt: str | FloatFormat, max_bias: int = 31) -> jax.Array:
    """b = clip(floor(log2(fmt_max / amax)), -max_bias, max_bias), an int32.

    amax = 0 gives +max_bias (nothing to scale); a non-finite amax gives 0 (no scaling rather than a wild one).
    """
    fmt = get_format(fmt)
    a = jnp.asarray(amax_value, jnp.float32)
    # log2 of a float32 ratio can land a hair off an integer; frexp-based exponents are exact
    ratio = jnp.float32(fmt.max) / a
    _, exponent = jnp.frexp(ratio)  # ratio = mantissa * 2^exponent, mantissa in [0.5, 1)
    b = exponent - 1  # floor(log2(ratio)) for finite positive ratio
    b = jnp.where(a == 0, max_bias, b)
    b = jnp.where(jnp.isfinite(a), b, 0)
    return jnp.clip(b, -max_bias, max_bias).astype(jnp.int32)


def scaled_cast(x: jax.Array, fmt: str | FloatFormat, bias: jax.Array, *, saturate: bool = False) -> jax.Array:
    """cast(x * 2^bias) to `fmt`: the scaled value, still carrying the scale (undo with 2^-bias)."""
    return cast_to_format(jnp.ldexp(jnp.asarray(x, jnp.float32), bias), fmt, saturate=saturate)


def amax_scaled_dot(
    x: jax.Array,
    w: jax.Array,
    x_fmt: str | FloatFormat = "e4m3",
    w_fmt: str | FloatFormat = "e4m3",
    grad_fmt: str | FloatFormat = "e5m2",
) -> jax.Array:
    """x @ w in FP8 with per-tensor amax scaling of x, w and the output gradient (the FP8-AMAX linear).

    Forward: b_x, b_w from the current amaxes; y = (cast(x 2^b_x) @ cast(w 2^b_w)) 2^-(b_x + b_w), FP32
    accumulation. Backward: b_g from amax(dy); dx = (cast(dy 2^b_g) @ w_q^T) 2^-(b_g + b_w) and
    dw = (x_q^T @ cast(dy 2^b_g)) 2^-(b_x + b_g), with x_q, w_q the forward's scaled casts. This is
    core.numerics.fp8.fp8_dot with the "amax" policy, which also offers the other policies and the statistics.
    """
    from core.numerics.fp8 import FP8Formats, fp8_dot  # fp8 builds on this module's amax helpers

    return fp8_dot(x, w, policy="amax", formats=FP8Formats.of(x_fmt, w_fmt, grad_fmt))


# ---------------------------------------------------------------------------------------------- delayed scaling


class DelayedScaling(NamedTuple):
    """Transformer-Engine-style state: the scale in use and the amaxes of the last `len(amax_history)` steps."""

    scale: jax.Array
    amax_history: jax.Array


def delayed_scaling_init(history_length: int = 1024, initial_scale: float = 1.0) -> DelayedScaling:
    if history_length < 1:
        raise ValueError(f"delayed_scaling_init: history_length must be >= 1, got {history_length}")
    return DelayedScaling(jnp.float32(initial_scale), jnp.zeros((history_length,), jnp.float32))


def delayed_scaling_update(
    state: DelayedScaling,
    new_amax: jax.Array,
    fmt: str | FloatFormat,
    *,
    margin: int = 0,
    algorithm: Literal["max", "most_recent"] = "max",
) -> DelayedScaling:
    """Push `new_amax` into the history and recompute scale = (fmt_max / amax_ref) / 2^margin, where amax_ref is
    the history's max or its newest entry. If amax_ref is zero or non-finite the previous scale is kept (as in
    Transformer Engine, the raw amax still enters the history).
    """
    if algorithm not in ("max", "most_recent"):
        raise ValueError(f"delayed_scaling_update: algorithm must be 'max' or 'most_recent', got {algorithm!r}")
    fmt = get_format(fmt)
    history = jnp.roll(state.amax_history, 1).at[0].set(jnp.asarray(new_amax, jnp.float32))
    ref = jnp.max(history) if algorithm == "max" else history[0]
    candidate = (jnp.float32(fmt.max) / ref) / jnp.float32(2.0**margin)
    keep = (ref <= 0) | ~jnp.isfinite(ref)
    return DelayedScaling(jnp.where(keep, state.scale, candidate).astype(jnp.float32), history)


def delayed_scaled_cast(x: jax.Array, state: DelayedScaling, fmt: str | FloatFormat) -> jax.Array:
    """cast(x * scale) with saturation (a delayed scale can be stale: overflow clamps, as in Transformer Engine)."""
    return cast_to_format(jnp.asarray(x, jnp.float32) * state.scale, fmt, saturate=True)

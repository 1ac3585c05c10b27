"""FP8 matmuls with per-tensor scale biases for activations, weights and gradients, and the policies that choose
them (Perez et al. 2023, "Training and inference of large language models using 8-bit floating point").

    y  = (cast(x 2^b_x) @ cast(w 2^b_w)) 2^-(b_x + b_w)                 E4M3 operands, FP32 accumulation
    dx = (cast(dy 2^b_g) @ w_q^T) 2^-(b_g + b_w),  dw = (x_q^T @ cast(dy 2^b_g)) 2^-(b_x + b_g)    dy in E5M2

Policies (POLICIES), per tensor:
    amax     b = clip(floor(log2(fmt_max / amax)), -31, 31) from the tensor itself, every step (the paper's FP8-AMAX)
    cscale   b fixed for the whole run (calibrated once, then constant: the paper's FP8-CSCALE)
    delayed  b from the largest amax of the last L steps (Transformer Engine's delayed scaling, with power-of-two
             scales), so the scale is known before the tensor is
    none     b = 0: a plain cast, no scaling
    mx       no per-tensor bias: OCP MX block scaling, a shared power-of-two scale per 32 elements along each
             product's contraction axis (core.numerics.mx.mx_dot), with the formats' element types (E4M3, E4M3,
             E5M2 by default: MXFP8; E2M1 weights: MXFP4)
Casts saturate: a stale (cscale, delayed) or absent scale clamps overflow to +-max rather than making Inf/NaN.

Statistics flow out through a probe: `fp8_dot(x, w, bias, probe)` takes a [3, 2] array of zeros whose *cotangent*
is [[amax_x, b_x], [amax_w, b_w], [amax_g, b_g]] -- the amaxes seen and the biases used, the gradient's included,
which only the backward pass knows. `jax.grad` with respect to the probes therefore returns every layer's scaling
statistics beside the parameter gradients, and `update_meta` turns them into next step's biases.

Bad amaxes (0, Inf, NaN): `amax` gives b = 31 for an all-zero tensor (anything represents zero) and b = 0 for a
non-finite one (no scaling rather than a wild one); `delayed` keeps the previous bias and leaves the bad amax out of
its history; in every policy `update_meta` counts them, so a run can report them.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from core.numerics.cast import cast_to_format
from core.numerics.formats import FloatFormat, get_format
from core.numerics.scaling import amax, amax_scale_bias

POLICIES = ("amax", "cscale", "delayed", "none", "mx")
TENSORS = ("x", "w", "g")  # activations, weights, output gradients
MAX_BIAS = 31


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"unknown FP8 scaling policy {policy!r}; choose from {', '.join(POLICIES)}")
    return policy


class FP8Formats(NamedTuple):
    """The formats of (x, w, g): element formats, or MX formats (core.numerics.mx, for the "mx" policy only)."""

    x: FloatFormat
    w: FloatFormat
    g: FloatFormat

    @classmethod
    def of(cls, x="e4m3", w="e4m3", g="e5m2") -> FP8Formats:
        """From names: a format's (`e4m3`, ...), or an MX format's (`mxfp4_e2m1`, `mxfp8_e4m3_ceil`, ...)."""
        return cls(*(_format(f) for f in (x, w, g)))


def _format(fmt):
    if isinstance(fmt, str) and fmt.startswith("mx"):
        from core.numerics.mx import get_mx_format

        return get_mx_format(fmt)
    return fmt if type(fmt).__name__ == "MXFormat" else get_format(fmt)


def empty_probe() -> jax.Array:
    return jnp.zeros((3, 2), jnp.float32)


def _cast(v, fmt: FloatFormat, bias):
    return cast_to_format(jnp.ldexp(v.astype(jnp.float32), bias), fmt, saturate=True)


def _mm(a, b):
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST, preferred_element_type=jnp.float32)


def _bias(v, fmt: FloatFormat, given, dynamic: bool):
    return amax_scale_bias(amax(v), fmt, MAX_BIAS) if dynamic else given.astype(jnp.int32)


def _forward(x, w, bias, dynamic, formats):
    bx, bw = _bias(x, formats.x, bias[0], dynamic), _bias(w, formats.w, bias[1], dynamic)
    xq, wq = _cast(x, formats.x, bx), _cast(w, formats.w, bw)
    y = jnp.ldexp(_mm(xq, wq), -(bx + bw))
    return y, (xq, wq, bx, bw, amax(x), amax(w), bias[2])


@partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _fp8_dot(x, w, bias, probe, dynamic, formats):
    return _forward(x, w, bias, dynamic, formats)[0]


def _fp8_dot_fwd(x, w, bias, probe, dynamic, formats):
    return _forward(x, w, bias, dynamic, formats)


def _fp8_dot_bwd(dynamic, formats, residuals, g):
    xq, wq, bx, bw, ax, aw, given_g = residuals
    bg = _bias(g, formats.g, given_g, dynamic)
    gq = _cast(g, formats.g, bg)
    dx = jnp.ldexp(_mm(gq, jnp.swapaxes(wq, -1, -2)), -(bg + bw))
    # batched x (..., n, k): the weight gradient sums over every leading dimension
    dw = jnp.ldexp(_mm(xq.reshape(-1, xq.shape[-1]).T, gq.reshape(-1, gq.shape[-1])), -(bx + bg))
    stats = jnp.stack(
        [
            jnp.stack([ax, bx.astype(jnp.float32)]),
            jnp.stack([aw, bw.astype(jnp.float32)]),
            jnp.stack([amax(g), bg.astype(jnp.float32)]),
        ]
    )
    return dx, dw, None, stats


_fp8_dot.defvjp(_fp8_dot_fwd, _fp8_dot_bwd)


def fp8_dot(x, w, bias=None, probe=None, *, policy: str = "amax", formats: FP8Formats | None = None) -> jax.Array:
    """x [..., k] @ w [k, n] in simulated FP8 with per-tensor scale biases (see the module docstring).

    `bias` [3] int32: the biases of (x, w, g) for the `cscale` and `delayed` policies (ignored by `amax` and `mx`,
    zero for `none`); `probe` [3, 2]: differentiate with respect to it to read the statistics."""
    check_policy(policy)
    formats = formats or FP8Formats.of()
    if policy == "mx":
        from core.numerics.mx import mx_dot

        return mx_dot(x, w, probe, formats=formats)
    if not all(isinstance(f, FloatFormat) for f in formats):
        raise ValueError(f"fp8_dot: policy {policy!r} scales whole tensors; MX formats {formats} need policy 'mx'")
    bias = jnp.zeros((3,), jnp.int32) if bias is None or policy == "none" else jnp.asarray(bias, jnp.int32)
    probe = empty_probe() if probe is None else probe
    return _fp8_dot(jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32), bias, probe, policy == "amax", formats)


class FP8Meta(NamedTuple):
    """One layer's scaling state: the biases of (x, w, g) to use next, the amax histories (delayed) and how many
    bad amaxes (zero or non-finite) each tensor has shown."""

    bias: jax.Array  # [3] int32
    history: jax.Array  # [3, L] float32 (newest first; 0 = empty)
    bad: jax.Array  # [3] int32

    @classmethod
    def init(cls, history_length: int = 16, bias=(0, 0, 0)) -> FP8Meta:
        if history_length < 1:
            raise ValueError(f"FP8Meta: history_length must be >= 1, got {history_length}")
        return cls(jnp.asarray(bias, jnp.int32), jnp.zeros((3, history_length), jnp.float32), jnp.zeros(3, jnp.int32))


def update_meta(meta: FP8Meta, stats: jax.Array, policy: str, formats: FP8Formats | None = None) -> FP8Meta:
    """Next step's state from this step's probe cotangent `stats` [3, 2] (amax, bias used)."""
    check_policy(policy)
    formats = formats or FP8Formats.of()
    amaxes = stats[:, 0]
    good = _usable(amaxes)
    bad = meta.bad + (~good).astype(jnp.int32)
    if policy != "delayed":
        return FP8Meta(meta.bias, meta.history, bad)
    pushed = jnp.concatenate([jnp.where(good, amaxes, 0.0)[:, None], meta.history[:, :-1]], 1)
    history = jnp.where(good[:, None], pushed, meta.history)
    reference = jnp.max(history, 1)
    bias = jnp.where(reference > 0, _amax_biases(reference, formats), meta.bias)
    return FP8Meta(bias.astype(jnp.int32), history, bad)


def calibrate(stats: jax.Array, formats: FP8Formats | None = None, fallback: int = 0) -> jax.Array:
    """cscale's constant biases: the amax biases of one step's statistics (a bad amax gives `fallback`)."""
    formats = formats or FP8Formats.of()
    amaxes = stats[:, 0]
    return jnp.where(_usable(amaxes), _amax_biases(amaxes, formats), fallback).astype(jnp.int32)


def _usable(amaxes) -> jax.Array:
    """Which amaxes can set a scale: finite and positive."""
    return jnp.isfinite(amaxes) & (amaxes > 0)


def _amax_biases(amaxes, formats: FP8Formats) -> jax.Array:
    """[3] amax biases of (x, w, g), each in its own format."""
    return jnp.stack([amax_scale_bias(amaxes[i], f, MAX_BIAS) for i, f in enumerate(formats)])

"""Differentiable casts and simulated low-precision matmuls.

`quantise(x, fwd, bwd)` casts the value to `fwd` on the way forward and the incoming gradient to `bwd` on the way
back (E4M3 forward, E5M2 backward is the FP8 training recipe); a format of None leaves that direction untouched,
so `quantise(x, "e4m3")` is the straight-through estimator: the gradient passes the rounding unchanged.

Both directions round to nearest (ties to even) or stochastically, and overflow to Inf/NaN or saturate to the
format's largest value. Stochastic rounding is keyed and reproducible: pass `key=`, or open
`stochastic_rounding(key)` around the computation, which hands every cast inside it its own key (the context's
key folded with a counter of the casts traced so far, so the same program with the same key rounds the same way).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from core.numerics.bits import ROUNDINGS, next_rounding_key
from core.numerics.cast import cast_to_format
from core.numerics.formats import FloatFormat, get_format

FormatLike = str | FloatFormat | None


def _resolve(fmt: FormatLike) -> FloatFormat | None:
    return None if fmt is None else get_format(fmt)


def _cast(x, fmt, saturate, rounding, key_data, salt):
    if fmt is None:
        return x
    key = None if key_data is None else jax.random.fold_in(jax.random.wrap_key_data(key_data), salt)
    return cast_to_format(x, fmt, saturate=saturate, rounding=rounding, key=key)


@partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4, 5))
def _quantise(x, key_data, fwd, bwd, saturate, rounding):
    return _cast(x, fwd, saturate, rounding, key_data, 0)


def _quantise_fwd(x, key_data, fwd, bwd, saturate, rounding):
    return _quantise(x, key_data, fwd, bwd, saturate, rounding), key_data


def _quantise_bwd(fwd, bwd, saturate, rounding, key_data, g):
    return (_cast(g, bwd, saturate, rounding, key_data, 1).astype(g.dtype), None)


_quantise.defvjp(_quantise_fwd, _quantise_bwd)


def quantise(
    x,
    fwd: FormatLike,
    bwd: FormatLike = None,
    *,
    saturate: bool = False,
    rounding: str = "nearest",
    key: jax.Array | None = None,
) -> jax.Array:
    """Cast `x` to `fwd` and, in the backward pass, its gradient to `bwd`.

    Works under jit, grad and vmap. `saturate` applies to both directions (clamp overflow to +-max instead of
    Inf/NaN). `rounding` is "nearest" (ties to even) or "stochastic" (unbiased: E[cast(x)] = x), which takes its
    bits from `key` or, without one, from the enclosing `stochastic_rounding` block; the forward and backward
    casts use independent bits.
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"quantise: expected a floating-point array, got dtype {x.dtype}")
    if rounding not in ROUNDINGS:
        raise ValueError(f"quantise: rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    fwd, bwd = _resolve(fwd), _resolve(bwd)
    key_data = None
    if rounding == "stochastic" and (fwd is not None or bwd is not None):
        if key is None:
            key = next_rounding_key("quantise")
        key_data = jax.random.key_data(key)
    return _quantise(x.astype(jnp.float32), key_data, fwd, bwd, bool(saturate), rounding)


def quantised_dot(
    a,
    b,
    a_fmt: FormatLike,
    b_fmt: FormatLike,
    *,
    grad_fmt: FormatLike = None,
    out_fmt: FormatLike = None,
    saturate: bool = False,
) -> jax.Array:
    """`a @ b` with both operands cast to their formats and the products accumulated in FP32.

    This simulates an accelerator's low-precision matmul unit: FP8/FP16 operands, exact products (the product of
    two FP8 or FP16 values is exact in FP32) summed in FP32 (XLA's summation order, which differs from any
    particular hardware's; the difference is FP32 rounding, far below the operands' precision). `grad_fmt` casts
    the gradients flowing back into `a` and `b` (E5M2 in the FP8 recipe); `out_fmt` optionally rounds the result.
    """
    aq = quantise(a, a_fmt, grad_fmt, saturate=saturate)
    bq = quantise(b, b_fmt, grad_fmt, saturate=saturate)
    y = jnp.matmul(aq, bq, precision=jax.lax.Precision.HIGHEST, preferred_element_type=jnp.float32)
    return y if out_fmt is None else quantise(y, out_fmt, None, saturate=saturate)

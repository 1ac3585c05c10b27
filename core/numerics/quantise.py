"""Differentiable casts and simulated low-precision matmuls.

`quantise(x, fwd, bwd)` casts the value to `fwd` on the way forward and the incoming gradient to `bwd` on the way
back (E4M3 forward, E5M2 backward is the FP8 training recipe); a format of None leaves that direction untouched,
so `quantise(x, "e4m3")` is the straight-through estimator: the gradient passes the rounding unchanged.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from core.numerics.cast import cast_to_format
from core.numerics.formats import FloatFormat, get_format

FormatLike = str | FloatFormat | None


def _resolve(fmt: FormatLike) -> FloatFormat | None:
    return None if fmt is None else get_format(fmt)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _quantise(x: jax.Array, fwd: FloatFormat | None, bwd: FloatFormat | None, saturate: bool) -> jax.Array:
    return x if fwd is None else cast_to_format(x, fwd, saturate=saturate)


def _quantise_fwd(x, fwd, bwd, saturate):
    return _quantise(x, fwd, bwd, saturate), None


def _quantise_bwd(fwd, bwd, saturate, _, g):
    return (g if bwd is None else cast_to_format(g, bwd, saturate=saturate).astype(g.dtype),)


_quantise.defvjp(_quantise_fwd, _quantise_bwd)


def quantise(x, fwd: FormatLike, bwd: FormatLike = None, *, saturate: bool = False) -> jax.Array:
    """Cast `x` to `fwd` (nearest-even) and, in the backward pass, its gradient to `bwd`.

    Works under jit, grad and vmap. `saturate` applies to both directions (clamp overflow to +-max instead of
    Inf/NaN).
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"quantise: expected a floating-point array, got dtype {x.dtype}")
    return _quantise(x.astype(jnp.float32), _resolve(fwd), _resolve(bwd), bool(saturate))


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

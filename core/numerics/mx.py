"""Block-scaled ("microscaling") formats of the OCP Microscaling Formats (MX) Specification v1.0: blocks of k = 32
elements along one axis share a power-of-two scale X stored as E8M0; each element P_i is stored in a narrow type.

    format       element           element emax   element max
    mxfp8_e4m3   FP8 E4M3 (fn)     8              448
    mxfp8_e5m2   FP8 E5M2 (ieee)   15             57344
    mxfp6_e2m3   FP6 E2M3 (finite) 2              7.5
    mxfp6_e3m2   FP6 E3M2 (finite) 4              28
    mxfp4_e2m1   FP4 E2M1 (finite) 2              6
    mxint8       INT8, 2^-6 units  0              127/64 (-128 unused: the range is symmetric; no -0)

A value is X * P_i. The conversion of a block V (the specification's section 6.3, as its reference emulation
microsoft/microxcaling `mx/mx_ops.py::_quantize_mx` implements it):

    shared_exp = floor(log2(max_i |V_i|)) - emax_elem       the largest element lands in the element's top binade
    shared_exp = clip(shared_exp, -127, 127)                E8M0's range (code = shared_exp + 127; 255 is NaN)
    P_i        = round(V_i / 2^shared_exp), clamped to +-max_elem     round to the element's grid, saturating
    X          = 2^shared_exp

so the largest element may exceed the element's max after scaling (e.g. E4M3: |V|/X in [256, 512) and 448 is the
max) and is clamped: the specification's choice, which loses up to 12.5% of the block's largest value. A block of
zeros takes shared_exp = -127 (the reference emulation takes log2 of the smallest float32 normal, then clips).
A block holding a NaN or an Inf has scale NaN (code 255): every one of its elements decodes as NaN. Rounding is
round-to-nearest-even (the specification leaves it to the implementation; the reference emulation's "nearest"
rounds ties away from zero, its "even" to even) or stochastic, with 32 random bits per element as in
core.numerics.cast_to_format. The block axis is padded with zeros to a multiple of the block size (a zero never
changes a block's max).

Everything is computed on float32 bit patterns: V / 2^shared_exp and X * P_i are exact (XLA's CPU backend flushes
subnormal floats in arithmetic, and MX values reach 2^-143). The result is float32 values lying exactly on the MX
grid, bit for bit what numpy + ml_dtypes give (tested).

    MX_FORMATS, MXFormat, get_mx_format   the six formats (or any element format with a block size)
    mx_shared_exponents(x, fmt, axis)     each block's shared_exp (int32; the NaN scale as 128)
    mx_quantise(x, fmt, axis)             x rounded to the MX grid (float32, x's shape); its gradient is zero
                                          (rounding's), or with straight_through=True the identity
    mx_encode / mx_decode                 element codes (uint8) and E8M0 scale codes (uint8), and back
    mx_dot(x, w)                          x @ w as MX hardware computes it: MX operands, FP32 accumulation, and a
                                          backward whose products each quantise their operands along their own
                                          contraction axis

One module over 400 lines: the format table, the conversion and its inverse share the block layout and the exact
scaling (private here), and mx_dot's backward needs the conversion's internals; split, they would have to be public.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core.numerics.bits import (
    ABS_MASK,
    INF_BITS,
    SIGN_MASK,
    as_float32,
    carries,
    compose,
    decompose,
    float32_bits,
    rounding_bits,
)
from core.numerics.cast import Rounding, cast_to_format, decode, encode
from core.numerics.formats import FloatFormat, get_format
from core.numerics.stats import max_abs

SCALE_EMAX = 127  # E8M0: 2^-127 .. 2^127, code 255 is NaN
SCALE_NAN = SCALE_EMAX + 1  # the shared exponent that stands for the NaN scale
BLOCK_SIZE = 32
SCALE_ROUNDINGS = ("floor", "ceil")
INT8_FRACTION_BITS = 6  # MXINT8's element is a two's-complement integer in units of 2^-6
INT8_MAX = 127


@dataclass(frozen=True)
class MXFormat:
    """An MX format: an element format (a FloatFormat, or None for MXINT8's scaled integer) and a block size."""

    name: str
    element: FloatFormat | None
    block_size: int = field(default=BLOCK_SIZE)
    # "floor": the specification's shared_exp = floor(log2 amax) - emax_elem (the block max may clamp); "ceil": the
    # smallest shared_exp with amax / 2^shared_exp <= the element's max (no clamping: the scale rounded up, the
    # conversion Mishra et al. 2025 recommend for MXFP8 training; not the specification's; a block within an element
    # step of float32's max may then round to Inf, where the specification's rule never overflows)
    scale_rounding: str = "floor"

    def __post_init__(self) -> None:
        if not isinstance(self.block_size, int) or isinstance(self.block_size, bool) or self.block_size < 1:
            raise ValueError(f"MX format {self.name!r}: block_size must be an integer >= 1, got {self.block_size!r}")
        if self.scale_rounding not in SCALE_ROUNDINGS:
            raise ValueError(
                f"MX format {self.name!r}: scale_rounding must be one of {', '.join(SCALE_ROUNDINGS)}, "
                f"got {self.scale_rounding!r}"
            )

    @property
    def emax(self) -> int:
        """Exponent of the element format's largest binade: what the shared exponent subtracts."""
        return 0 if self.element is None else self.element.emax

    @property
    def max(self) -> float:
        """The element format's largest magnitude."""
        return INT8_MAX / 2**INT8_FRACTION_BITS if self.element is None else self.element.max

    @property
    def bits(self) -> int:
        """Bits per element (the shared scale adds 8 per block)."""
        return 8 if self.element is None else self.element.bits


MX_FORMATS: dict[str, MXFormat] = {
    "mxfp8_e4m3": MXFormat("mxfp8_e4m3", get_format("e4m3")),
    "mxfp8_e5m2": MXFormat("mxfp8_e5m2", get_format("e5m2")),
    "mxfp6_e2m3": MXFormat("mxfp6_e2m3", get_format("e2m3")),
    "mxfp6_e3m2": MXFormat("mxfp6_e3m2", get_format("e3m2")),
    "mxfp4_e2m1": MXFormat("mxfp4_e2m1", get_format("e2m1")),
    "mxint8": MXFormat("mxint8", None),
}
_ALIASES = {"mxfp8": "mxfp8_e4m3", "mxfp6": "mxfp6_e2m3", "mxfp4": "mxfp4_e2m1"}


def get_mx_format(
    fmt: str | MXFormat | FloatFormat, block_size: int | None = None, scale_rounding: str | None = None
) -> MXFormat:
    """An MX format from its name (`mxfp8_e4m3`, `mxfp8_e5m2`, `mxfp6_e2m3`, `mxfp6_e3m2`, `mxfp4_e2m1`, `mxint8`;
    `mxfp8`, `mxfp6`, `mxfp4` name the first of each; a `_ceil` suffix rounds the scale up), from an element format
    (any FloatFormat or its name: blocks of 32 of it), or itself; `block_size` and `scale_rounding` replace the
    format's."""
    if isinstance(fmt, MXFormat):
        out = fmt
    elif isinstance(fmt, FloatFormat):
        out = MXFormat(f"mx_{fmt.name}", fmt)
    elif isinstance(fmt, str) and fmt.endswith("_ceil") and fmt.startswith("mx"):
        out = get_mx_format(fmt[: -len("_ceil")], scale_rounding="ceil")
    else:
        name = _ALIASES.get(fmt, fmt)
        if name in MX_FORMATS:
            out = MX_FORMATS[name]
        else:
            try:
                out = MXFormat(f"mx_{name}", get_format(name))
            except ValueError:
                raise ValueError(
                    f"unknown MX format {fmt!r}: choose one of {', '.join([*MX_FORMATS, *_ALIASES])}, "
                    "or an element format's name (e.g. 'e4m3')"
                ) from None
    if block_size is not None and block_size != out.block_size:
        out = MXFormat(out.name, out.element, block_size, out.scale_rounding)
    if scale_rounding is not None and scale_rounding != out.scale_rounding:
        out = MXFormat(f"{out.name}_{scale_rounding}", out.element, out.block_size, scale_rounding)
    return out


# ---------------------------------------------------------------------------------------------- exact scaling


def _ldexp_bits(a: jax.Array, k: jax.Array) -> jax.Array:
    """Bits of |x| * 2^k for |x|'s bits `a` (finite): exact where the result is a float32 value, else truncated
    toward zero (only below 2^-126, far under any element's quantum); Inf above float32's range (only the "ceil"
    scale rounding reaches it, for a block within an element step of float32's max)."""
    sig, u, _ = decompose(a)
    return compose(sig, u + k)  # |x| 2^k = sig 2^(u + k)


def _ldexp(x: jax.Array, k: jax.Array) -> jax.Array:
    bits = lax.bitcast_convert_type(x, jnp.uint32)
    out = (bits & SIGN_MASK) | _ldexp_bits(bits & ABS_MASK, k)
    return lax.bitcast_convert_type(out, jnp.float32)


# ---------------------------------------------------------------------------------------------- blocks


def _to_blocks(x: jax.Array, axis: int, block_size: int) -> jax.Array:
    """x zero-padded along `axis` to a multiple of block_size and split in place: the axis becomes (n_blocks,
    block_size), so each block runs along axis + 1 (no transpose: a reduction over a middle axis is fast on XLA)."""
    pad = -x.shape[axis] % block_size
    if pad:
        x = jnp.pad(x, [(0, pad if i == axis else 0) for i in range(x.ndim)])
    return x.reshape(*x.shape[:axis], -1, block_size, *x.shape[axis + 1 :])


def _from_blocks(blocks: jax.Array, shape: tuple[int, ...], axis: int) -> jax.Array:
    flat = blocks.reshape(*shape[:axis], -1, *shape[axis + 1 :])
    return lax.slice_in_dim(flat, 0, shape[axis], axis=axis)


def _scales_last(shared: jax.Array, axis: int) -> jax.Array:
    """Per-block values [..., n_blocks, 1, ...] (as _block_exponents gives them) -> [..., n_blocks] with the blocks
    last."""
    return jnp.moveaxis(jnp.squeeze(shared, axis + 1), axis, -1)


def _check_axis(x: jax.Array, axis: int, what: str) -> int:
    if not isinstance(axis, int | np.integer) or not -x.ndim <= axis < max(x.ndim, 1):
        raise ValueError(f"{what}: axis {axis!r} is not an axis of an array of shape {x.shape}")
    if x.ndim == 0:
        raise ValueError(f"{what}: needs an array with at least one axis (the block axis), got a scalar")
    return int(axis) % x.ndim


def _block_exponents(blocks: jax.Array, fmt: MXFormat, axis: int) -> jax.Array:
    """int32 shared exponents of the blocks along axis + 1, kept as a size-1 axis (SCALE_NAN for a block holding NaN
    or Inf)."""
    # a float max (faster than an integer one here); were subnormals flushed, a block of them still gets -127. NaN is
    # found apart: XLA's CPU max-reduction of 4,096 or more float32 elements drops it (jaxlib 0.10.2, its YNNPACK
    # fusion), which would leave a NaN block finite and its NaN element garbage
    top = lax.bitcast_convert_type(jnp.max(jnp.abs(blocks), axis=axis + 1, keepdims=True), jnp.uint32) & ABS_MASK
    top = jnp.where(jnp.any(jnp.isnan(blocks), axis=axis + 1, keepdims=True), INF_BITS, top)
    _, _, lead = decompose(top)  # floor(log2 max|V|)
    shared = lead - fmt.emax
    if fmt.scale_rounding == "ceil":  # one more where the block max would exceed the element's max
        shared = shared + (_ldexp_bits(top, -shared) > float32_bits(fmt.max)).astype(jnp.int32)
    shared = jnp.clip(shared, -SCALE_EMAX, SCALE_EMAX)
    shared = jnp.where(top == 0, -SCALE_EMAX, shared)
    return jnp.where(top >= INF_BITS, SCALE_NAN, shared).astype(jnp.int32)


def _round_elements(scaled: jax.Array, fmt: MXFormat, random_bits: jax.Array | None) -> jax.Array:
    """Elements V / X rounded to the element grid, saturating (the scale makes |V / X| < 2^(emax + 1))."""
    rounding = "nearest" if random_bits is None else "stochastic"
    if fmt.element is not None:
        return cast_to_format(scaled, fmt.element, rounding=rounding, saturate=True, random_bits=random_bits)
    # MXINT8: an integer count of 2^-6, which is float32-exact FP with a 2^-6 quantum: round k = V 2^6 as an
    # unbounded-exponent format would, then clamp to the symmetric range
    units = _ldexp(scaled, jnp.int32(INT8_FRACTION_BITS))
    if random_bits is None:
        k = lax.round(units, lax.RoundingMethod.TO_NEAREST_EVEN)
    else:
        whole = jnp.floor(jnp.abs(units))
        fraction = ((jnp.abs(units) - whole) * np.float32(2.0**32)).astype(jnp.uint32)  # exact: < 2^8 integer part
        up = carries(random_bits, fraction)
        k = jnp.sign(units) * (whole + up.astype(jnp.float32))
    k = jnp.clip(k, -INT8_MAX, INT8_MAX)
    return _ldexp(jnp.where(k == 0, 0.0, k), jnp.int32(-INT8_FRACTION_BITS))  # two's complement has no -0


@partial(jax.jit, static_argnames=("fmt", "axis"))
def _quantise(x: jax.Array, random_bits: jax.Array | None, fmt: MXFormat, axis: int):
    """(values of x's shape, shared exponents and elements in blocks along axis + 1)."""
    blocks = _to_blocks(x, axis, fmt.block_size)
    shared = _block_exponents(blocks, fmt, axis)
    finite = shared != SCALE_NAN
    scaled = _ldexp(jnp.where(finite, blocks, 0.0), -shared)
    if random_bits is not None:
        random_bits = _to_blocks(random_bits, axis, fmt.block_size)
    elements = _round_elements(scaled, fmt, random_bits)
    values = jnp.where(finite, _ldexp(elements, shared), jnp.nan)
    return _from_blocks(values, x.shape, axis), shared, elements


# A straight-through rule as a custom_jvp, not as x + stop_gradient(q - x): that sum is not q bit for bit (where q is
# -0, as for every small negative element that rounds to zero, x + (q - x) is +0), and the forward value must be
# mx_quantise's own. A custom_jvp (rather than a custom_vjp) also serves forward-mode derivatives, JAX transposes its
# linear rule for jax.grad, and its rule is bound by a decorator (no new top-level statement in this module's <init>,
# which core.provenance fingerprints for every paper that reaches mx_dot).
@partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def _quantise_straight_through(x: jax.Array, random_bits: jax.Array | None, fmt: MXFormat, axis: int) -> jax.Array:
    """_quantise's values, with the identity as derivative in x."""
    return _quantise(x, random_bits, fmt, axis)[0]


@_quantise_straight_through.defjvp
def _quantise_straight_through_jvp(fmt: MXFormat, axis: int, primals, tangents):
    x, random_bits = primals
    return _quantise_straight_through(x, random_bits, fmt, axis), tangents[0]  # the random bits have no tangent


def mx_quantise(
    x,
    fmt: str | MXFormat | FloatFormat,
    axis: int = -1,
    *,
    rounding: Rounding = "nearest",
    key: jax.Array | None = None,
    random_bits: jax.Array | None = None,
    straight_through: bool = False,
) -> jax.Array:
    """`x` rounded to the MX format's grid with blocks along `axis`: float32 values X * P_i (see the module
    docstring). rounding="stochastic" takes its bits as core.numerics.cast_to_format does (`random_bits` of x's
    shape, else `key`, else the enclosing stochastic_rounding block).

    Gradient: by default, rounding's own: zero almost everywhere, so `jax.grad` through mx_quantise returns zeros
    (no error, no warning). `straight_through=True` keeps the value bit for bit and makes the derivative the
    identity (the straight-through estimator, Bengio et al. 2013): the cotangent passes to x unchanged at every
    element, including a block's largest elements where they clamp to the element's max, elements that underflow
    to 0, and the elements of a block holding NaN or Inf (whose values are NaN). The plain rule, not the "clipped"
    one that zeroes clamped elements: the scale follows each block's max, so only a block's largest elements clamp
    (under the specification's floor scale, by at most 12.5% for E4M3, 25% for E2M1), and zeroing would cut the
    gradient of the elements that carry the block. Forward-mode derivatives (`jax.jvp`) get the same identity.
    (core.numerics.quantise is the cast to an element format whose gradient is cast to a format of its own; `mx_dot`
    is the MX matmul with its own backward.)"""
    fmt = get_mx_format(fmt)
    x = as_float32(x, "mx_quantise")
    axis = _check_axis(x, axis, "mx_quantise")
    bits = rounding_bits(x.shape, rounding, key, random_bits, "mx_quantise")
    if not isinstance(straight_through, bool):
        raise TypeError(f"mx_quantise: straight_through must be True or False, got {straight_through!r}")
    if straight_through:
        return _quantise_straight_through(x, bits, fmt, axis)
    return _quantise(x, bits, fmt, axis)[0]


def mx_shared_exponents(x, fmt: str | MXFormat | FloatFormat, axis: int = -1) -> jax.Array:
    """Each block's shared exponent (int32; SCALE_NAN = 128 for a block holding NaN or Inf), blocks along `axis`,
    which becomes the last axis of the result: [..., n_blocks]."""
    fmt = get_mx_format(fmt)
    x = as_float32(x, "mx_shared_exponents")
    axis = _check_axis(x, axis, "mx_shared_exponents")
    return _scales_last(_block_exponents(_to_blocks(x, axis, fmt.block_size), fmt, axis), axis)


def mx_encode(
    x,
    fmt: str | MXFormat | FloatFormat,
    axis: int = -1,
    *,
    rounding: Rounding = "nearest",
    key: jax.Array | None = None,
    random_bits: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """(element codes, scale codes) of `x` in the MX format: uint8 element codes of x's shape (the element
    format's codes; MXINT8's two's complement byte), and uint8 E8M0 codes [..., n_blocks] (blocks along `axis`
    become the last axis; 255 is the NaN scale, whose block's element codes are 0). `rounding`, `key` and
    `random_bits` as mx_quantise's."""
    fmt = get_mx_format(fmt)
    x = as_float32(x, "mx_encode")
    axis = _check_axis(x, axis, "mx_encode")
    bits = rounding_bits(x.shape, rounding, key, random_bits, "mx_encode")
    _, shared, elements = _quantise(x, bits, fmt, axis)
    if fmt.element is None:
        codes = lax.bitcast_convert_type(
            jnp.round(_ldexp(elements, jnp.int32(INT8_FRACTION_BITS))).astype(jnp.int8), jnp.uint8
        )
    else:
        codes = encode(elements, fmt.element)
    codes = jnp.where(shared == SCALE_NAN, jnp.uint8(0), codes)
    return _from_blocks(codes, x.shape, axis), _scales_last(shared + SCALE_EMAX, axis).astype(jnp.uint8)


def mx_decode(codes, scales, fmt: str | MXFormat | FloatFormat, axis: int = -1) -> jax.Array:
    """float32 values of MX element codes (x's shape) and E8M0 scale codes ([..., n_blocks], as mx_encode)."""
    fmt = get_mx_format(fmt)
    codes, scales = jnp.asarray(codes), jnp.asarray(scales)
    if codes.dtype != jnp.uint8 or scales.dtype != jnp.uint8:
        raise TypeError(f"mx_decode: codes and scales must be uint8, got {codes.dtype} and {scales.dtype}")
    axis = _check_axis(codes, axis, "mx_decode")
    blocks = _to_blocks(codes, axis, fmt.block_size)
    expected = (*codes.shape[:axis], *codes.shape[axis + 1 :], blocks.shape[axis])
    if scales.shape != expected:
        raise ValueError(f"mx_decode: scales must have shape {expected} for codes {codes.shape}, got {scales.shape}")
    if fmt.element is None:
        elements = _ldexp(
            lax.bitcast_convert_type(blocks, jnp.int8).astype(jnp.float32), jnp.int32(-INT8_FRACTION_BITS)
        )
    else:
        elements = decode(blocks, fmt.element)
    scales = jnp.expand_dims(jnp.moveaxis(scales, -1, axis), axis + 1)  # back beside its block
    values = jnp.where(scales == 255, jnp.nan, _ldexp(elements, scales.astype(jnp.int32) - SCALE_EMAX))
    return _from_blocks(values, codes.shape, axis)


# ---------------------------------------------------------------------------------------------- the MX matmul


def _mm(a, b):
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _mx_dot(x, w, probe, formats):
    fx, fw, _ = formats
    return _mm(_quantise(x, None, fx, x.ndim - 1)[0], _quantise(w, None, fw, 0)[0])


def _mx_dot_fwd(x, w, probe, formats):
    return _mx_dot(x, w, probe, formats), (x, w)


def _mx_dot_bwd(formats, residuals, g):
    fx, fw, fg = formats
    x, w = residuals
    # each product is blocked along its own contraction axis, so x, w and g are re-quantised from FP32 for it
    dx = _mm(_quantise(g, None, fg, g.ndim - 1)[0], _quantise(w, None, fw, 1)[0].T)
    x2, g2 = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
    dw = _mm(_quantise(x2, None, fx, 0)[0].T, _quantise(g2, None, fg, 0)[0])
    zero = jnp.float32(0)
    amaxes = (max_abs(x), max_abs(w), max_abs(g))  # NaN kept (core.numerics.stats.max_abs)
    return dx, dw, jnp.stack([jnp.stack([a, zero]) for a in amaxes])


_mx_dot.defvjp(_mx_dot_fwd, _mx_dot_bwd)


def mx_dot(x, w, probe=None, *, formats=("mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e5m2")) -> jax.Array:
    """x [..., k] @ w [k, n] with MX operands and FP32 accumulation, as MX hardware computes a matmul.

    Forward: x in blocks along k, w in blocks along k. Backward (custom_vjp): dx = g @ w^T with g and w in blocks
    along n; dw = x^T @ g with x and g in blocks along the tokens; each operand re-quantised from FP32 along the
    product's contraction axis (the MX paper's training scheme: a tensor quantised along one axis is not reused
    along another). `formats`: the MX formats (or element formats) of x, w and the output gradient g. `probe`
    [3, 2], as core.numerics.fp8.fp8_dot's: its cotangent holds the amaxes of x, w, g (and 0 for the biases, which
    the block scales replace)."""
    formats = tuple(get_mx_format(f) for f in formats)
    if len(formats) != 3:
        raise ValueError(f"mx_dot: formats must name the formats of x, w and g, got {len(formats)}")
    x, w = as_float32(x, "mx_dot"), as_float32(w, "mx_dot")
    if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[0]:
        raise ValueError(f"mx_dot: x [..., k] @ w [k, n] needs matching k, got {x.shape} and {w.shape}")
    probe = jnp.zeros((3, 2), jnp.float32) if probe is None else probe
    return _mx_dot(x, w, probe, formats)

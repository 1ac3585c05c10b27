"""Casts to a format's value grid, in integer arithmetic on float32 bit patterns, and FP8 code encoding.

Why integers: the result must be exact for every float32 input, including float32 subnormals (BF16's subnormal
range lies there), and XLA's CPU backend flushes subnormal *floats* to zero in arithmetic. Working on the bits
also makes each step the textbook one:

    |x| = sig * 2^u                      (sig: the 24-bit float32 significand, u its unit exponent)
    L   = floor(log2 |x|)                (the exponent of the leading bit)
    e_q = max(L, emin) - M               (exponent of the format's quantum at |x|; emin with no subnormals)
    |x| / 2^e_q = sig >> s  (+ rem)      with s = e_q - u dropped bits
    round: up if rem > half, or rem == half and the kept part is odd (nearest-even);
           up with probability rem / 2^s (stochastic, from 32 random bits)
    result = rounded * 2^e_q, then Inf/NaN/saturation if it exceeds the format's max.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core.numerics.bits import (
    ABS_MASK,
    INF_BITS,
    QNAN_BITS,
    ROUNDINGS,
    SIGN_MASK,
    as_float32,
    carries,
    compose,
    decompose,
    fast_random_bits,
    float32_bits,
    next_rounding_key,
    rounding_bits,
    shift_left,
    shift_right,
    stochastic_rounding,
)
from core.numerics.formats import FloatFormat, get_format

Rounding = Literal["nearest", "stochastic"]
__all__ = [  # the bit-level pieces are core.numerics.bits'; these two are re-exported for the package's namespace
    "ROUNDINGS",
    "Rounding",
    "cast_to_format",
    "code_dtype",
    "code_values",
    "decode",
    "encode",
    "fast_random_bits",
    "next_rounding_key",
    "stochastic_rounding",
]


def _quantum_exponent(lead: jax.Array, fmt: FloatFormat) -> jax.Array:
    if fmt.subnormals:
        return jnp.maximum(lead, fmt.emin) - fmt.mantissa_bits
    # Without subnormals the grid below the smallest normal is {0, smallest normal}: a quantum of 2^emin.
    return jnp.where(lead >= fmt.emin, lead - fmt.mantissa_bits, fmt.emin)


def _round_general(a: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat) -> jax.Array:
    """Bits of |x| rounded to the format's grid (before overflow handling), for any format."""
    sig, u, lead = decompose(a)
    q_exp = _quantum_exponent(lead, fmt)
    shift = q_exp - u  # low bits of sig below the format's quantum
    keep = shift_right(sig, shift)
    dropped = sig - shift_left(keep, shift)  # sig & (2^shift - 1), valid for any shift
    if random_bits is None:
        half = jnp.where(shift >= 1, shift_left(np.uint32(1), shift - 1), np.uint32(0))
        half = jnp.where(shift > 32, np.uint32(0xFFFFFFFF), half)  # dropped < 2^24 < half: always down
        up = (dropped > half) | ((dropped == half) & (shift >= 1) & ((keep & 1) == 1))
    else:
        # the dropped bits as a 32-bit fraction T (exact for shift <= 32, else truncated to a multiple of 2^-32)
        threshold = jnp.where(shift <= 32, shift_left(dropped, 32 - shift), shift_right(dropped, shift - 32))
        up = (shift >= 1) & carries(random_bits, threshold)
    rounded = jnp.where(shift >= 1, keep + up.astype(jnp.uint32), sig)
    return compose(rounded, jnp.where(shift >= 1, q_exp, u))


def _fast_path(fmt: FloatFormat) -> bool:
    """True when the format's quantum is a float32 normal everywhere (all FP8 formats, FP16): then the subnormal
    range can be rounded in float32 arithmetic, which XLA does not flush, and the normal range by a fixed shift."""
    return fmt.subnormals and fmt.emin - fmt.mantissa_bits >= -126 and fmt.mantissa_bits <= 22


def _round_fast(a: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat) -> jax.Array:
    drop = 23 - fmt.mantissa_bits  # float32 mantissa bits below the format's, in its normal range
    low = np.uint32((1 << drop) - 1)
    if random_bits is None:
        normal = a + np.uint32((1 << (drop - 1)) - 1) + ((a >> drop) & 1)  # nearest-even: carry into the kept bits
    else:
        normal = a + (random_bits >> (32 - drop))  # add `drop` random bits below the kept ones
    normal = normal & ~low

    quantum = np.float32(2.0 ** (fmt.emin - fmt.mantissa_bits))
    s = lax.bitcast_convert_type(a, jnp.float32) / quantum  # exact: a power-of-two scaling, s < 2^M
    if random_bits is None:
        k = lax.round(s, lax.RoundingMethod.TO_NEAREST_EVEN)
    else:
        whole = jnp.floor(s)
        fraction = ((s - whole) * np.float32(2.0**32)).astype(jnp.uint32)  # exact when s has <= 32 fraction bits
        k = whole + carries(random_bits, fraction).astype(jnp.float32)
    subnormal = lax.bitcast_convert_type(k * quantum, jnp.uint32)
    return jnp.where(a < np.uint32(float32_bits(fmt.smallest_normal)), subnormal, normal)


@partial(jax.jit, static_argnames=("fmt", "saturate"))
def _cast_bits(x: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat, saturate: bool):
    u32 = lax.bitcast_convert_type(x, jnp.uint32)
    sign = u32 & SIGN_MASK
    a = u32 & ABS_MASK
    is_nan = a > INF_BITS
    mag = (_round_fast if _fast_path(fmt) else _round_general)(a, random_bits, fmt)

    max_bits = np.uint32(float32_bits(fmt.max))
    overflow = (a == INF_BITS) | (~is_nan & (mag > max_bits))
    if saturate or fmt.special == "finite":  # a format without Inf and NaN can only saturate
        big = max_bits
    else:
        big = np.uint32(INF_BITS) if fmt.has_inf else np.uint32(QNAN_BITS)
    mag = jnp.where(overflow, big, mag)
    mag = jnp.where(is_nan, np.uint32(QNAN_BITS), mag)
    if not fmt.has_negative_zero:
        sign = jnp.where(mag == 0, np.uint32(0), sign)
    sign = jnp.where(mag == QNAN_BITS, np.uint32(0), sign)
    return lax.bitcast_convert_type(sign | mag, jnp.float32)


def cast_to_format(
    x,
    fmt: str | FloatFormat,
    *,
    rounding: Rounding = "nearest",
    saturate: bool = False,
    key: jax.Array | None = None,
    random_bits: jax.Array | None = None,
) -> jax.Array:
    """Round `x` to the grid of `fmt`; returns float32 values that the format represents exactly.

    - rounding="nearest": round to nearest, ties to even (as ml_dtypes' `astype`).
    - rounding="stochastic": round up with probability equal to the distance from the value below, in units of
      the gap, so E[cast(x)] = x for |x| <= max. Takes its bits from `random_bits` (uint32 of x's shape:
      jax.random.bits, or core.random's xoroshiro128aox as the IPU does), else from `fast_random_bits` keyed by
      `key` (a JAX PRNG key), else by the next key of the enclosing `stochastic_rounding(key)` block.
    - Overflow (after rounding, or an input Inf): +-Inf where the format has Inf, else NaN; with `saturate`,
      +-max instead (always, for a "finite" format, which has neither). NaN stays NaN. Values below half the
      smallest subnormal go to zero, keeping the sign where the format has -0.

    Inputs are converted to float32 first (float64 inputs are thus rounded twice; pass float32).
    """
    fmt = get_format(fmt)
    x = as_float32(x, "cast_to_format")
    random_bits = rounding_bits(x.shape, rounding, key, random_bits, "cast_to_format")
    return _cast_bits(x, random_bits, fmt, bool(saturate))


# ---------------------------------------------------------------------------------------------- codes


def code_dtype(fmt: FloatFormat) -> np.dtype:
    if fmt.bits > 16:
        raise ValueError(f"format {fmt.name!r} has {fmt.bits}-bit codes; encode/decode handle at most 16 bits")
    return np.dtype(np.uint8 if fmt.bits <= 8 else np.uint16)


def code_values(fmt: str | FloatFormat) -> np.ndarray:
    """The float32 value of every code 0 .. 2^bits - 1 of a format (at most 16 bits), from the definition."""
    return _code_values(get_format(fmt)).copy()


@lru_cache(maxsize=64)
def _code_values(fmt: FloatFormat) -> np.ndarray:
    code_dtype(fmt)
    e_bits, m_bits = fmt.exponent_bits, fmt.mantissa_bits
    codes = np.arange(2**fmt.bits, dtype=np.int64)
    sign = np.where(codes >> (e_bits + m_bits), -1.0, 1.0)
    e = (codes >> m_bits) & (2**e_bits - 1)
    m = codes & (2**m_bits - 1)
    normal = np.ldexp(1.0 + m / 2.0**m_bits, e - fmt.bias)
    sub = np.ldexp(m.astype(np.float64), fmt.emin - m_bits) if fmt.subnormals else np.zeros(len(codes))
    values = sign * np.where(e == 0, sub, normal)
    top = e == 2**e_bits - 1
    if fmt.special == "ieee":
        values = np.where(top & (m == 0), sign * np.inf, values)
        values = np.where(top & (m != 0), np.nan, values)
    elif fmt.special == "fn":
        values = np.where(top & (m == 2**m_bits - 1), np.nan, values)
    elif fmt.special == "fnuz":  # fnuz: the negative-zero code is the NaN
        values = np.where(codes == 1 << (e_bits + m_bits), np.nan, values)
    return values.astype(np.float32)


def decode(codes, fmt: str | FloatFormat) -> jax.Array:
    """float32 values of integer codes (uint8 for FP8)."""
    fmt = get_format(fmt)
    codes = jnp.asarray(codes)
    if not jnp.issubdtype(codes.dtype, jnp.integer):
        raise TypeError(f"decode: codes must be integers, got dtype {codes.dtype}")
    return jnp.asarray(_code_values(fmt))[codes.astype(jnp.int32)]


@partial(jax.jit, static_argnames=("fmt",))
def _encode_bits(v: jax.Array, fmt: FloatFormat) -> jax.Array:
    u32 = lax.bitcast_convert_type(v, jnp.uint32)
    a = u32 & ABS_MASK
    negative = (u32 & SIGN_MASK) != 0
    sig, u, lead = decompose(a)
    q_exp = _quantum_exponent(lead, fmt)
    m = fmt.mantissa_bits
    # On the grid |v| = k * 2^q_exp exactly; the code's magnitude is (exponent field << M) + mantissa field.
    k = jnp.where(q_exp >= u, shift_right(sig, q_exp - u), shift_left(sig, u - q_exp))
    normal = lead >= fmt.emin
    field = jnp.where(normal, (lead - fmt.emin + 1).astype(jnp.uint32), np.uint32(0))
    mantissa = jnp.where(normal, k - shift_left(np.uint32(1), jnp.int32(m)), k)
    if not fmt.subnormals:  # below the smallest normal only zero exists
        field = jnp.where(normal, field, np.uint32(0))
        mantissa = jnp.where(normal, mantissa, np.uint32(0))
    mag = shift_left(field, jnp.int32(m)) | mantissa
    mag = jnp.where(a == 0, np.uint32(0), mag)
    sign_bit = np.uint32(1 << (fmt.exponent_bits + m))
    top = np.uint32(2**fmt.exponent_bits - 1)
    if fmt.special == "ieee":
        inf_code = shift_left(top, jnp.int32(m))
        nan_code = inf_code | shift_left(np.uint32(1), jnp.int32(m - 1))
    elif fmt.special == "fn":
        inf_code = nan_code = shift_left(top, jnp.int32(m)) | np.uint32(2**m - 1)
    elif fmt.special == "finite":  # the cast saturated Inf; NaN has no code: -0's, as ml_dtypes gives
        inf_code, nan_code = shift_left(top, jnp.int32(m)) | np.uint32(2**m - 1), sign_bit
    else:
        inf_code = nan_code = sign_bit
    mag = jnp.where(a == INF_BITS, inf_code, mag)
    code = jnp.where(negative & (a <= INF_BITS) & ((a != 0) | fmt.has_negative_zero), mag | sign_bit, mag)
    return jnp.where(a > INF_BITS, nan_code, code)


def encode(x, fmt: str | FloatFormat, **cast_kwargs) -> jax.Array:
    """The codes (uint8 for FP8, uint16 up to 16 bits) of `x` cast to `fmt` (cast_to_format's keyword arguments)."""
    fmt = get_format(fmt)
    dtype = code_dtype(fmt)
    v = cast_to_format(x, fmt, **cast_kwargs)
    return _encode_bits(v, fmt).astype(dtype)

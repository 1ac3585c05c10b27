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

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core.numerics.formats import FloatFormat, get_format

Rounding = Literal["nearest", "stochastic"]
ROUNDINGS = ("nearest", "stochastic")

_QNAN = np.uint32(0x7FC00000)
_INF = np.uint32(0x7F800000)
_ABS = np.uint32(0x7FFFFFFF)
_SIGN = np.uint32(0x80000000)


def _u32(v: int) -> np.uint32:
    return np.uint32(v)


def _shl(x: jax.Array, s: jax.Array) -> jax.Array:
    """x << s for s in [0, 31] (clipped), on uint32."""
    return lax.shift_left(x, jnp.clip(s, 0, 31).astype(jnp.uint32))


def _shr(x: jax.Array, s: jax.Array) -> jax.Array:
    """x >> s, logical, giving 0 for s >= 32 (XLA leaves over-wide shifts implementation-defined)."""
    out = lax.shift_right_logical(x, jnp.clip(s, 0, 31).astype(jnp.uint32))
    return jnp.where(s >= 32, _u32(0), out)


def _bit_length(x: jax.Array) -> jax.Array:
    return 32 - lax.clz(x).astype(jnp.int32)


def _float32_bits(value: float) -> int:
    return int(np.array(value, np.float32).view(np.uint32))


def _decompose(a: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """For |x|'s bits `a`: (sig, u, L) with |x| = sig * 2^u and L = floor(log2 |x|) (for x != 0)."""
    e32 = lax.shift_right_logical(a, _u32(23)).astype(jnp.int32)
    sig = jnp.where(e32 > 0, (a & 0x7FFFFF) | 0x800000, a & 0x7FFFFF)
    u = jnp.maximum(e32, 1) - 150
    lead = jnp.where(e32 > 0, e32 - 127, u + _bit_length(sig) - 1)
    return sig, u, lead


def _quantum_exponent(lead: jax.Array, fmt: FloatFormat) -> jax.Array:
    if fmt.subnormals:
        return jnp.maximum(lead, fmt.emin) - fmt.mantissa_bits
    # Without subnormals the grid below the smallest normal is {0, smallest normal}: a quantum of 2^emin.
    return jnp.where(lead >= fmt.emin, lead - fmt.mantissa_bits, fmt.emin)


def _compose(rounded: jax.Array, q_exp: jax.Array) -> jax.Array:
    """float32 bits of rounded * 2^q_exp (exact: the format's values are float32 values)."""
    nb = _bit_length(rounded)
    lead = q_exp + nb - 1
    mant = jnp.where(nb <= 24, _shl(rounded, 24 - nb), _shr(rounded, nb - 24)) & 0x7FFFFF
    normal = _shl((lead + 127).astype(jnp.uint32), jnp.int32(23)) | mant
    subnormal = _shl(rounded, q_exp + 149)
    out = jnp.where(lead >= -126, normal, subnormal)
    return jnp.where(rounded == 0, _u32(0), out)


def _round_general(a: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat) -> jax.Array:
    """Bits of |x| rounded to the format's grid (before overflow handling), for any format."""
    sig, u, lead = _decompose(a)
    q_exp = _quantum_exponent(lead, fmt)
    shift = q_exp - u  # low bits of sig below the format's quantum
    keep = _shr(sig, shift)
    dropped = sig - _shl(keep, shift)  # sig & (2^shift - 1), valid for any shift
    if random_bits is None:
        half = jnp.where(shift >= 1, _shl(_u32(1), shift - 1), _u32(0))
        half = jnp.where(shift > 32, _u32(0xFFFFFFFF), half)  # dropped < 2^24 < half: always down
        up = (dropped > half) | ((dropped == half) & (shift >= 1) & ((keep & 1) == 1))
    else:
        # the dropped bits as a 32-bit fraction T (exact for shift <= 32, else truncated to a multiple of 2^-32)
        threshold = jnp.where(shift <= 32, _shl(dropped, 32 - shift), _shr(dropped, shift - 32))
        up = (shift >= 1) & _carries(random_bits, threshold)
    rounded = jnp.where(shift >= 1, keep + up.astype(jnp.uint32), sig)
    return _compose(rounded, jnp.where(shift >= 1, q_exp, u))


def _carries(random_bits: jax.Array, threshold: jax.Array) -> jax.Array:
    """Stochastic rounding's decision: does random + T carry out of 32 bits? P = T / 2^32, the dropped fraction.

    This is 'add random bits below the kept ones, then truncate', as hardware does it (and gfloat's
    RoundMode.Stochastic with 32 random bits, bit for bit).
    """
    return (random_bits + threshold) < random_bits


def _fast_path(fmt: FloatFormat) -> bool:
    """True when the format's quantum is a float32 normal everywhere (all FP8 formats, FP16): then the subnormal
    range can be rounded in float32 arithmetic, which XLA does not flush, and the normal range by a fixed shift."""
    return fmt.subnormals and fmt.emin - fmt.mantissa_bits >= -126 and fmt.mantissa_bits <= 22


def _round_fast(a: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat) -> jax.Array:
    drop = 23 - fmt.mantissa_bits  # float32 mantissa bits below the format's, in its normal range
    low = _u32((1 << drop) - 1)
    if random_bits is None:
        normal = a + _u32((1 << (drop - 1)) - 1) + ((a >> drop) & 1)  # nearest-even: carry into the kept bits
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
        k = whole + _carries(random_bits, fraction).astype(jnp.float32)
    subnormal = lax.bitcast_convert_type(k * quantum, jnp.uint32)
    return jnp.where(a < _u32(_float32_bits(fmt.smallest_normal)), subnormal, normal)


@partial(jax.jit, static_argnames=("fmt", "saturate"))
def _cast_bits(x: jax.Array, random_bits: jax.Array | None, fmt: FloatFormat, saturate: bool):
    u32 = lax.bitcast_convert_type(x, jnp.uint32)
    sign = u32 & _SIGN
    a = u32 & _ABS
    is_nan = a > _INF
    mag = (_round_fast if _fast_path(fmt) else _round_general)(a, random_bits, fmt)

    max_bits = _u32(_float32_bits(fmt.max))
    overflow = (a == _INF) | (~is_nan & (mag > max_bits))
    if saturate or fmt.special == "finite":  # a format without Inf and NaN can only saturate
        big = max_bits
    else:
        big = _u32(_INF) if fmt.has_inf else _u32(_QNAN)
    mag = jnp.where(overflow, big, mag)
    mag = jnp.where(is_nan, _u32(_QNAN), mag)
    if not fmt.has_negative_zero:
        sign = jnp.where(mag == 0, _u32(0), sign)
    sign = jnp.where(mag == _QNAN, _u32(0), sign)
    return lax.bitcast_convert_type(sign | mag, jnp.float32)


def _mix32(x: jax.Array) -> jax.Array:
    """A 32-bit integer hash with low bias (the 'lowbias32' constants of Wellons' hash-prospector search)."""
    x = x ^ (x >> 16)
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> 16)


def fast_random_bits(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Uniform uint32 bits for stochastic rounding: a counter-based hash of the element index, keyed by `key`.

    JAX's threefry costs several times a whole cast (about 6x at 16M values on a 2-core CPU); rounding needs
    unbiased, well-mixed bits, not cryptographic ones, and the IPU itself draws them from a cheap hardware
    generator. Two rounds of a strong 32-bit mixer over (index, two key words) fuse into the cast's kernel. Pass
    `random_bits=jax.random.bits(key, shape, jnp.uint32)` to cast_to_format to use threefry instead.
    """
    k = jax.random.bits(key, (2,), jnp.uint32)
    size = int(np.prod(shape, dtype=np.int64))
    counter = lax.iota(jnp.uint32, size).reshape(shape)
    return _mix32(_mix32(counter ^ k[0]) + k[1])


@dataclass
class _KeySource:
    key: jax.Array
    count: int = 0

    def next(self) -> jax.Array:
        self.count += 1
        return jax.random.fold_in(self.key, self.count)


_ROUNDING_KEYS: contextvars.ContextVar[_KeySource | None] = contextvars.ContextVar("rounding_keys", default=None)


@contextlib.contextmanager
def stochastic_rounding(key: jax.Array) -> Iterator[None]:
    """Supply keys to every stochastic cast traced inside the block that is not given its own: `cast_to_format`
    without `key=` or `random_bits=`, and `quantise` without `key=`.

    Each such cast takes the block's key folded with a count of the casts drawn so far, so the same program with
    the same key rounds the same way. Open it inside the function being traced (e.g. in the loss function, with a
    key that is an argument of the jitted step), so that the keys are values of that trace."""
    token = _ROUNDING_KEYS.set(_KeySource(key))
    try:
        yield
    finally:
        _ROUNDING_KEYS.reset(token)


def next_rounding_key(what: str, given: str = "key=") -> jax.Array:
    """The next key of the enclosing `stochastic_rounding` block, for the cast `what`; without a block, a ValueError
    naming `what` and the arguments (`given`) that would have supplied the bits."""
    source = _ROUNDING_KEYS.get()
    if source is None:
        raise ValueError(
            f"{what}: rounding='stochastic' needs {given} or an enclosing core.numerics.stochastic_rounding(key) block"
        )
    return source.next()


def _as_float32(x, what: str) -> jax.Array:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{what}: expected a floating-point array, got dtype {x.dtype}")
    return x.astype(jnp.float32)


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
    x = _as_float32(x, "cast_to_format")
    if rounding not in ROUNDINGS:
        raise ValueError(f"cast_to_format: rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if rounding == "stochastic":
        if random_bits is None:
            if key is None:
                key = next_rounding_key("cast_to_format", "key=, random_bits=")
            random_bits = fast_random_bits(key, x.shape)
        random_bits = jnp.asarray(random_bits)
        if random_bits.dtype != jnp.uint32 or random_bits.shape != x.shape:
            raise ValueError(
                f"cast_to_format: random_bits must be uint32 of shape {x.shape}, "
                f"got {random_bits.dtype} of shape {random_bits.shape}"
            )
    else:
        random_bits = None
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
    a = u32 & _ABS
    negative = (u32 & _SIGN) != 0
    sig, u, lead = _decompose(a)
    q_exp = _quantum_exponent(lead, fmt)
    m = fmt.mantissa_bits
    # On the grid |v| = k * 2^q_exp exactly; the code's magnitude is (exponent field << M) + mantissa field.
    k = jnp.where(q_exp >= u, _shr(sig, q_exp - u), _shl(sig, u - q_exp))
    normal = lead >= fmt.emin
    field = jnp.where(normal, (lead - fmt.emin + 1).astype(jnp.uint32), _u32(0))
    mantissa = jnp.where(normal, k - _shl(_u32(1), jnp.int32(m)), k)
    if not fmt.subnormals:  # below the smallest normal only zero exists
        field = jnp.where(normal, field, _u32(0))
        mantissa = jnp.where(normal, mantissa, _u32(0))
    mag = _shl(field, jnp.int32(m)) | mantissa
    mag = jnp.where(a == 0, _u32(0), mag)
    sign_bit = _u32(1 << (fmt.exponent_bits + m))
    top = _u32(2**fmt.exponent_bits - 1)
    if fmt.special == "ieee":
        inf_code, nan_code = _shl(top, jnp.int32(m)), _shl(top, jnp.int32(m)) | _shl(_u32(1), jnp.int32(m - 1))
    elif fmt.special == "fn":
        inf_code = nan_code = _shl(top, jnp.int32(m)) | _u32(2**m - 1)
    elif fmt.special == "finite":  # the cast saturated Inf; NaN has no code: -0's, as ml_dtypes gives
        inf_code, nan_code = _shl(top, jnp.int32(m)) | _u32(2**m - 1), sign_bit
    else:
        inf_code = nan_code = sign_bit
    mag = jnp.where(a == _INF, inf_code, mag)
    code = jnp.where(negative & (a <= _INF) & ((a != 0) | fmt.has_negative_zero), mag | sign_bit, mag)
    return jnp.where(a > _INF, nan_code, code)


def encode(x, fmt: str | FloatFormat, **cast_kwargs) -> jax.Array:
    """The codes (uint8 for FP8, uint16 up to 16 bits) of `x` cast to `fmt` (cast_to_format's keyword arguments)."""
    fmt = get_format(fmt)
    dtype = code_dtype(fmt)
    v = cast_to_format(x, fmt, **cast_kwargs)
    return _encode_bits(v, fmt).astype(dtype)

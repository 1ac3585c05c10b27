"""Float32 bit patterns as integers, and where stochastic rounding's random bits come from: the pieces every exact cast
builds on (core.numerics.cast for element formats, core.numerics.mx for block-scaled ones).

Why integers: a cast must be exact for every float32 input, float32 subnormals included, and XLA's CPU backend
flushes subnormal *floats* to zero in arithmetic. On the bits of |x| (`a`, the sign cleared):

    |x| = sig * 2^u           sig: the 24-bit significand (with its hidden bit where x is normal), u its unit exponent
    L   = floor(log2 |x|)     the exponent of the leading bit (for x != 0)
    compose(sig, e)           the bits of sig * 2^e, normal or subnormal, Inf above float32's range

Stochastic rounding adds 32 random bits below the kept ones and truncates: a dropped fraction T (in units of 2^-32)
rounds up when random + T carries out of 32 bits, with probability T / 2^32 (`carries`; gfloat's
RoundMode.Stochastic with 32 random bits, bit for bit). `rounding_bits` resolves the bits a stochastic cast uses, the
same way for every cast: given bits, else `fast_random_bits(key)`, else the key of the enclosing
`stochastic_rounding(key)` block.

    ABS_MASK, SIGN_MASK, INF_BITS, QNAN_BITS   float32 masks and patterns (uint32)
    shift_left, shift_right, bit_length        uint32 shifts that are defined for any shift count
    float32_bits, as_float32                   a number's bits; an array checked as floating and made float32
    decompose, compose                         |x| <-> (sig, u, L) and sig * 2^e -> bits
    carries                                    stochastic rounding's decision
    fast_random_bits, stochastic_rounding, next_rounding_key, rounding_bits
                                               the random bits of stochastic rounding and where they come from
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

QNAN_BITS = np.uint32(0x7FC00000)
INF_BITS = np.uint32(0x7F800000)
ABS_MASK = np.uint32(0x7FFFFFFF)
SIGN_MASK = np.uint32(0x80000000)
ROUNDINGS = ("nearest", "stochastic")


def shift_left(x: jax.Array, s: jax.Array) -> jax.Array:
    """x << s for s in [0, 31] (clipped), on uint32."""
    return lax.shift_left(x, jnp.clip(s, 0, 31).astype(jnp.uint32))


def shift_right(x: jax.Array, s: jax.Array) -> jax.Array:
    """x >> s, logical, giving 0 for s >= 32 (XLA leaves over-wide shifts implementation-defined)."""
    out = lax.shift_right_logical(x, jnp.clip(s, 0, 31).astype(jnp.uint32))
    return jnp.where(s >= 32, np.uint32(0), out)


def bit_length(x: jax.Array) -> jax.Array:
    """The number of bits of x (uint32): 0 for 0, else floor(log2 x) + 1."""
    return 32 - lax.clz(x).astype(jnp.int32)


def float32_bits(value: float) -> int:
    """The bits of `value` rounded to float32, as a Python int."""
    return int(np.array(value, np.float32).view(np.uint32))


def as_float32(x, what: str) -> jax.Array:
    """`x` as a float32 array; a TypeError naming `what` where it is not floating-point."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{what}: expected a floating-point array, got dtype {x.dtype}")
    return x.astype(jnp.float32)


def decompose(a: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """For |x|'s bits `a`: (sig, u, L) with |x| = sig * 2^u and L = floor(log2 |x|) (for x != 0)."""
    e32 = lax.shift_right_logical(a, np.uint32(23)).astype(jnp.int32)
    sig = jnp.where(e32 > 0, (a & 0x7FFFFF) | 0x800000, a & 0x7FFFFF)
    u = jnp.maximum(e32, 1) - 150
    lead = jnp.where(e32 > 0, e32 - 127, u + bit_length(sig) - 1)
    return sig, u, lead


def compose(sig: jax.Array, e: jax.Array) -> jax.Array:
    """The float32 bits of sig * 2^e (sig uint32): exact where that is a float32 value; bits below float32's
    smallest subnormal truncated toward zero, and bits past the 24th of a normal result dropped (a cast has rounded
    sig to fewer bits, so they are zeros); Inf above float32's range; 0 for sig = 0."""
    nb = bit_length(sig)
    lead = e + nb - 1
    mant = jnp.where(nb <= 24, shift_left(sig, 24 - nb), shift_right(sig, nb - 24)) & 0x7FFFFF
    normal = shift_left((lead + 127).astype(jnp.uint32), jnp.int32(23)) | mant
    subnormal = jnp.where(e + 149 >= 0, shift_left(sig, e + 149), shift_right(sig, -(e + 149)))
    out = jnp.where(lead >= -126, normal, subnormal)
    out = jnp.where(lead > 127, INF_BITS, out)
    return jnp.where(sig == 0, np.uint32(0), out)


def carries(random_bits: jax.Array, threshold: jax.Array) -> jax.Array:
    """Stochastic rounding's decision: does random + T carry out of 32 bits? P = T / 2^32, the dropped fraction.

    This is 'add random bits below the kept ones, then truncate', as hardware does it (and gfloat's
    RoundMode.Stochastic with 32 random bits, bit for bit).
    """
    return (random_bits + threshold) < random_bits


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
    `random_bits=jax.random.bits(key, shape, jnp.uint32)` to a cast to use threefry instead.
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
    and `mx_quantise` without `key=` or `random_bits=`, and `quantise` without `key=`.

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


def rounding_bits(
    shape: tuple[int, ...], rounding: str, key: jax.Array | None, random_bits, what: str
) -> jax.Array | None:
    """The random bits of a cast of an array of `shape` by `what`: None for rounding="nearest"; for "stochastic",
    `random_bits` (checked: uint32 of that shape), else `fast_random_bits(key)`, else from the next key of the
    enclosing `stochastic_rounding` block. A ValueError naming `what` for any other rounding or bad bits."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"{what}: rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if rounding == "nearest":
        return None
    if random_bits is None:
        key = next_rounding_key(what, "key=, random_bits=") if key is None else key
        random_bits = fast_random_bits(key, shape)
    random_bits = jnp.asarray(random_bits)
    if random_bits.dtype != jnp.uint32 or random_bits.shape != tuple(shape):
        raise ValueError(
            f"{what}: random_bits must be uint32 of shape {tuple(shape)}, got {random_bits.dtype} of shape "
            f"{random_bits.shape}"
        )
    return random_bits

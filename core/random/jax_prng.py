"""xoroshiro128aox as a JAX PRNG implementation: typed keys whose every `jax.random` sampler draws from the IPU's
generator, inside jit and without 64-bit mode, bit for bit reproducible from core.random's numpy streams.

    key = jax_prng.key(42)                                  # or jax.random.key(42, impl=jax_prng.xoroshiro128aox)
    x = jax.random.uniform(jax.random.fold_in(key, step), (8,))
    s0, s1 = jax_prng.state_of(key)                         # the generator state: core.random's (s0, s1)

A key is the xoroshiro128 state (s0, s1), stored as four uint32 words [s0_hi, s0_lo, s1_hi, s1_lo]. Below, `+`, `*`
are modulo 2^64, `^` is XOR, and mix64 is splitmix64's finaliser (Stafford's Mix13, a bijection of 64-bit words):

    mix64(z) = z3 ^ (z3 >> 31),  z3 = (z2 ^ (z2 >> 27)) * 0x94D049BB133111EB,  z2 = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9

1. Seeding, as Vigna recommends for xoroshiro: the state is the first two outputs of splitmix64 started at the seed,

       s0 = mix64(seed + G),  s1 = mix64(seed + 2G),  G = 0x9E3779B97F4A7C15.

   It is never (0, 0): mix64 is a bijection with mix64(0) = 0, so both are zero only if seed + G = seed + 2G = 0,
   i.e. G = 0. `key(seed)` takes any 0 <= seed < 2^64. `jax.random.key(seed, impl=xoroshiro128aox)` sees the seed
   JAX hands it: its bits as an unsigned integer of its own width (int32 -1 is 2^32 - 1; int64 -1, in x64 mode, is
   2^64 - 1). Without x64 mode JAX truncates Python ints to 32 bits first (as it does for threefry): there the two
   agree for 0 <= seed < 2^32 only.

2. Bits. Value i (row-major over `shape`) of `jax.random.bits(key, shape)` comes from lane i mod L at step i div L,
   with L = LANES = 1024 lanes, lane j starting at the key's state jumped j * 2^64 steps:

       raw[i] = aox_generate(*jump^(i mod L)(s0, s1), (i div L) + 1)[-1]      (core.random; jump = core.random.jump)
       uint32: raw >> 32,  uint16: raw >> 48,  uint8: raw >> 56,  uint64 (x64 mode only): raw

   One 64-bit output per value, its high bits (the conservative choice for xoroshiro-family outputs, whatever the
   width). The lanes make a large draw L streams wide (vector work) and ceil(n / L) steps long; a draw of n <= L values
   takes one step of n lanes. The layout does not depend on `shape`: bits(key, (m,)) is the prefix of bits(key, (n,))
   for m <= n. Lane states are computed in-graph as jump^(32 q) jump^r (state) for j = 32 q + r, from GF(2) matrices
   (jump is linear over GF(2)) precomputed on the host from core.random.jump's images of the 128 unit states. Lanes are
   2^64 apart on the generator's single cycle of length 2^128 - 1, so they cannot overlap before 2^64 steps.
   jax.random.uniform and every other sampler build on these bits exactly as they do for JAX's own generators.

3. Children. `split(key, shape)` gives child c = i (the row-major position i), `fold_in(key, d)` child c = d (uint32),
   through the index word x = 2c + t, t = 0 for split and 1 for fold_in (so the two never give the same child):

       child s0 = mix64(s0 ^ mix64(s1 ^ mix64(x ^ K0)))
       child s1 = mix64(s1 ^ mix64(s0 ^ mix64(x ^ K1))),   K0 = G, K1 = 0xD1B54A32D192ED03

   and where both are 0, child s1 = G. Siblings are distinct, guaranteed: for a fixed parent, x -> child s0 is a
   composition of bijections, so distinct (t, c) give distinct child s0. Each child word ends with a full mix64 of a
   word that depends on all 128 parent bits and on the index (the index mixed three times, one parent word twice,
   the other once), and the two words whiten the index with different constants. That children are statistically
   unrelated to each other and to their parent is heuristic, not proven: it rests on Mix13's avalanche (splitmix64,
   Mix13 of a Weyl sequence, passes BigCrush: Steele, Lea & Flood 2014), and papers/prng runs its battery on
   interleaved children's streams. What is only probabilistic: that two keys' streams do not overlap. Children are,
   heuristically, uniform points of the 2^128 - 1 cycle; two keys drawing n values each overlap with probability about
   4n / 2^128 (their lane grids must align within the steps drawn), so N keys of n values each about 2 N^2 n / 2^128:
   below 2^-37 for 2^30 keys of 2^30 values.

Cost: a lane's state is one 128 x 128 GF(2) product (about a thousand word operations), so a draw of n <= 1024 values
costs several times threefry's; large draws amortise it and run faster than threefry (scripts/bench.py, "prng").

`key_from_state(s0, s1)` makes keys from given states (validated: 64-bit words, never (0, 0)); `state_of(keys)` reads
them back as uint64 arrays. `jax.random.wrap_key_data` does no such check: a (0, 0) key draws zeros forever.

By object, not by name: pass `impl=xoroshiro128aox` (this module's object), as in
`jax.random.key(seed, impl=core.random.jax_prng.xoroshiro128aox)`; `jax.random.key(seed, impl="xoroshiro128aox")`
fails ("unrecognized PRNG implementation"). JAX (0.10.2) looks a name up in a private table,
`jax._src.random.prng.prngs`, which only the private `jax._src.random.prng.register_prng` fills (threefry, philox and
rbg register themselves through it); its public `jax.extend.random` defines an implementation
(`define_prng_impl`, used below) but registers no name, and this module uses no private JAX API. Nor can the
generator be JAX's default: `jax.config.update("jax_default_prng_impl", ...)` takes only the six names it lists
(threefry2x32, threefry4x32, rbg, unsafe_rbg, philox2x32, philox4x32) and refuses both "xoroshiro128aox" and the
object. So `jax.random.key_impl` of our keys is the object itself (printed as its tag, "xaox"), not a name.
"""

from __future__ import annotations

import functools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import define_prng_impl

from core.random import jax_xoroshiro as jx
from core.random.xoroshiro import MASK64, as_state, jump

LANES = 1024
LANE_BLOCK = 32  # lane states come from J^r, r < LANE_BLOCK, then J^(LANE_BLOCK q): see lane_states
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment G (2^64 / golden ratio, odd)
CHILD_KEYS = (GOLDEN, 0xD1B54A32D192ED03)  # K0, K1: whiten the index word differently for each child word
SPLIT_TAG, FOLD_IN_TAG = 0, 1
MIX_MULTIPLIERS = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
MIX_SHIFTS = (30, 27, 31)

_U32 = np.uint32
_LOW32 = 0xFFFFFFFF
Word = jx.Word  # (hi, lo) uint32 arrays: one 64-bit word


# ---------------------------------------------------------------------------------------------- 64-bit arithmetic
# in uint32 pairs, so that nothing needs jax's x64 mode


def _const(value: int) -> Word:
    return jnp.asarray(value >> 32, jnp.uint32), jnp.asarray(value & _LOW32, jnp.uint32)


def _xor(a: Word, b: Word) -> Word:
    return a[0] ^ b[0], a[1] ^ b[1]


def _add(a: Word, b: Word) -> Word:
    lo = a[1] + b[1]
    return a[0] + b[0] + (lo < a[1]).astype(jnp.uint32), lo


def _shr(x: Word, k: int) -> Word:  # 0 < k < 32
    hi, lo = x
    return hi >> _U32(k), (lo >> _U32(k)) | (hi << _U32(32 - k))


def _mul_wide(x: jax.Array, y: jax.Array) -> Word:
    """The full 64-bit product of two uint32 arrays, from 16-bit halves (whose products fit in 32 bits)."""
    x1, x0, y1, y0 = x >> _U32(16), x & _U32(0xFFFF), y >> _U32(16), y & _U32(0xFFFF)
    low, cross1, cross2, high = x0 * y0, x0 * y1, x1 * y0, x1 * y1
    middle = (low >> _U32(16)) + (cross1 & _U32(0xFFFF)) + (cross2 & _U32(0xFFFF))  # < 3 * 2^16: no overflow
    lo = (low & _U32(0xFFFF)) | (middle << _U32(16))
    return high + (cross1 >> _U32(16)) + (cross2 >> _U32(16)) + (middle >> _U32(16)), lo


def _mul(a: Word, b: Word) -> Word:
    """a * b modulo 2^64: the hi x hi term falls off, the cross terms only touch the high word."""
    hi, lo = _mul_wide(a[1], b[1])
    return hi + a[0] * b[1] + a[1] * b[0], lo


def mix64(z: Word) -> Word:
    """splitmix64's finaliser (Stafford's Mix13) on (hi, lo) uint32 words: a bijection with full avalanche."""
    (m1, m2), (r1, r2, r3) = MIX_MULTIPLIERS, MIX_SHIFTS
    z = _mul(_xor(z, _shr(z, r1)), _const(m1))
    z = _mul(_xor(z, _shr(z, r2)), _const(m2))
    return _xor(z, _shr(z, r3))


# ---------------------------------------------------------------------------------------------- key data <-> state


def _key_words(state: jx.State) -> jax.Array:
    # written word by word rather than with jnp.stack: XLA on CPU fuses the words' deep arithmetic into a
    # concatenation and recomputes it per element of the result (split became a hundred times slower)
    words = jnp.broadcast_arrays(*state[0], *state[1])
    out = jnp.zeros((*words[0].shape, 4), jnp.uint32)
    for i, word in enumerate(words):
        out = out.at[..., i].set(word)
    return out


def _state(key_data: jax.Array) -> jx.State:
    return (key_data[..., 0], key_data[..., 1]), (key_data[..., 2], key_data[..., 3])


@jax.jit
def _seed_state(seed: Word) -> jax.Array:
    return _key_words((mix64(_add(seed, _const(GOLDEN))), mix64(_add(seed, _const(2 * GOLDEN & MASK64)))))


@jax.jit  # the hooks are jitted: eager jax.random calls run them directly, op by op otherwise
def _seed(seed: jax.Array) -> jax.Array:
    """The key of an integer seed (JAX's `seed` hook): its bits as an unsigned integer of its own width."""
    if seed.shape:
        raise TypeError(f"a xoroshiro128aox seed must be a scalar, got shape {seed.shape}")
    if not jnp.issubdtype(seed.dtype, jnp.integer):
        raise TypeError(f"a xoroshiro128aox seed must be an integer, got dtype {seed.dtype}")
    width = seed.dtype.itemsize * 8
    if width == 64:  # x64 mode
        bits = lax.bitcast_convert_type(seed, jnp.uint64)
        words = ((bits >> np.uint64(32)).astype(jnp.uint32), bits.astype(jnp.uint32))
    else:
        unsigned = lax.bitcast_convert_type(seed, jnp.dtype(f"uint{width}"))
        words = (jnp.zeros((), jnp.uint32), unsigned.astype(jnp.uint32))
    return _seed_state(words)


# ---------------------------------------------------------------------------------------------- lanes


def _gf2_apply_np(matrix: np.ndarray, states: np.ndarray) -> np.ndarray:
    """A GF(2) matrix of 128-bit states, given by its images of the 128 unit states (uint32 [128, 4]: unit state b
    has bit b % 32 of word b // 32 set), applied to states [n, 4] uint32: the XOR of the images of the bits set."""
    bits = ((states[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1).reshape(len(states), 128, 1).astype(bool)
    return np.bitwise_xor.reduce(np.where(bits, matrix[None], np.uint32(0)), axis=1)


@functools.lru_cache(maxsize=1)
def jump_matrices() -> tuple[np.ndarray, np.ndarray]:
    """(J^r for r < LANE_BLOCK, J^(LANE_BLOCK q) for q < LANES / LANE_BLOCK), each uint32 [count, 128, 4] in the
    layout of _gf2_apply_np, where J = core.random.jump (2^64 steps), which is linear over GF(2): its matrix is its
    images of the unit states."""
    identity = np.zeros((128, 4), np.uint32)
    identity[np.arange(128), np.arange(128) // 32] = np.uint32(1) << (np.arange(128, dtype=np.uint32) % 32)
    s0, s1 = ((identity[:, w].astype(np.uint64) << np.uint64(32)) | identity[:, w + 1] for w in (0, 2))
    j0, j1 = jump(s0, s1)
    low32 = np.uint64(_LOW32)
    one_jump = np.stack([j0 >> np.uint64(32), j0 & low32, j1 >> np.uint64(32), j1 & low32], axis=-1).astype(np.uint32)
    small = [identity]
    for _ in range(LANE_BLOCK):  # J^0 .. J^LANE_BLOCK
        small.append(_gf2_apply_np(one_jump, small[-1]))
    large = [identity]
    for _ in range(LANES // LANE_BLOCK - 1):
        large.append(_gf2_apply_np(small[LANE_BLOCK], large[-1]))
    return np.stack(small[:LANE_BLOCK]), np.stack(large)


def _gf2_apply(matrices: np.ndarray, states: jax.Array) -> jax.Array:
    """_gf2_apply_np in JAX, every matrix [m, 128, 4] applied to every state [..., 4]: [m, ..., 4]."""
    bits = (states[..., None] >> jnp.arange(32, dtype=jnp.uint32)) & _U32(1)
    masks = (jnp.zeros_like(bits) - bits).reshape(*states.shape[:-1], 128, 1)  # all ones where the bit is set
    columns = jnp.asarray(matrices).reshape(len(matrices), *(1,) * (states.ndim - 1), 128, 4)
    return lax.reduce(masks[None] & columns, _U32(0), lax.bitwise_xor, (states.ndim,))


def lane_states(key_data: jax.Array, count: int) -> jax.Array:
    """The first `count` (<= LANES) lanes of a key, [count, 4] uint32: lane j = J^j (state), J = core.random.jump,
    computed as J^(B (j div B)) J^(j mod B) (state) with B = LANE_BLOCK: two small in-graph GF(2) products."""
    small, large = jump_matrices()
    first = _gf2_apply(small[: min(count, LANE_BLOCK)], key_data)  # lanes 0 .. B - 1
    if count <= LANE_BLOCK:
        return first
    return _gf2_apply(large[: -(-count // LANE_BLOCK)], first).reshape(-1, 4)[:count]


# ---------------------------------------------------------------------------------------------- the PRNG hooks


def _lane_outputs(lanes: jax.Array, steps: int) -> Word:
    """`steps` outputs of every lane, [steps, lanes] (hi, lo). jx.generate computes the same, but its 16-fold unrolled
    loop takes over a second to compile per shape on CPU and is no faster at 1024 lanes wide."""

    def body(state, _):
        return jx.step(state), jx.output(state, "aox")

    return lax.scan(body, _state(lanes), None, length=steps)[1]


@partial(jax.jit, static_argnums=(1, 2))
def _random_bits(key_data: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    if bit_width not in (8, 16, 32, 64):
        raise TypeError(f"xoroshiro128aox draws 8, 16, 32 or 64-bit values, got bit_width={bit_width}")
    dtype = jnp.dtype(f"uint{bit_width}")
    n = math.prod(shape)
    if n == 0:
        return jnp.zeros(shape, dtype)
    hi, lo = _lane_outputs(lane_states(key_data, min(n, LANES)), -(-n // LANES))
    hi, lo = hi.reshape(-1)[:n], lo.reshape(-1)[:n]  # [step, lane] row-major: value i is lane i % L, step i // L
    if bit_width == 64:
        bits = (hi.astype(dtype) << np.uint64(32)) | lo.astype(dtype)
    else:
        bits = (hi >> _U32(32 - bit_width)).astype(dtype)
    return bits.reshape(shape)


def _child(key_data: jax.Array, index: jax.Array, tag: int) -> jax.Array:
    """Children of one key for uint32 indices of any shape: [*index.shape, 4]."""
    (s0, s1), (k0, k1) = _state(key_data), CHILD_KEYS

    # c = mix64(a2 ^ mix64(a1 ^ mix64(x ^ a0))) with (a0, a1, a2) = (K0, s1, s0) for c0 and (K1, s0, s1) for c1: both
    # words at once along a leading axis of 2, in a loop over the three rounds, so that the compiled graph holds one
    # mix64 rather than six (which took XLA twice threefry's compile time per split shape)
    def side_by_side(a: Word, b: Word) -> Word:  # [2, 1, ..., 1]
        return tuple(jnp.stack([a[w], b[w]]).reshape(2, *(1,) * index.ndim) for w in (0, 1))

    rounds = [side_by_side(_const(k0), _const(k1)), side_by_side(s1, s0), side_by_side(s0, s1)]
    round_keys = tuple(jnp.stack([r[w] for r in rounds]) for w in (0, 1))  # (hi, lo): [3, 2, 1, ..., 1]
    x = (index >> _U32(31), (index << _U32(1)) | _U32(tag))  # the 64-bit word 2 * index + tag
    start = tuple(jnp.broadcast_to(w, (2, *index.shape)) for w in x)

    def mix_round(r, word):
        return mix64(_xor(word, (round_keys[0][r], round_keys[1][r])))

    hi, lo = lax.fori_loop(0, 3, mix_round, start)
    c0, c1 = (hi[0], lo[0]), (hi[1], lo[1])
    zero = (c0[0] | c0[1] | c1[0] | c1[1]) == 0  # about 2^-128 per child: the fixed point is replaced
    golden = _const(GOLDEN)
    c1 = (jnp.where(zero, golden[0], c1[0]), jnp.where(zero, golden[1], c1[1]))
    return _key_words((c0, c1))


@partial(jax.jit, static_argnums=1)
def _split(key_data: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    n = math.prod(shape)
    if n > _LOW32 + 1:
        raise ValueError(f"split into {n} keys: at most 2^32 children per split")
    return _child(key_data, lax.iota(jnp.uint32, n), SPLIT_TAG).reshape(*shape, 4)


@jax.jit
def _fold_in(key_data: jax.Array, data: jax.Array) -> jax.Array:
    return _child(key_data, jnp.asarray(data, jnp.uint32), FOLD_IN_TAG)


xoroshiro128aox = define_prng_impl(
    key_shape=(4,),
    seed=_seed,
    split=_split,
    random_bits=_random_bits,
    fold_in=_fold_in,
    name="xoroshiro128aox",
    tag="xaox",
)


# ---------------------------------------------------------------------------------------------- host-side API


def key(seed: int) -> jax.Array:
    """A typed key from a seed 0 <= seed < 2^64 (all 64 bits, without x64 mode): the splitmix64 seeding above."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) <= MASK64:
        raise ValueError(f"seed={seed!r} must be an integer with 0 <= seed < 2^64")
    words = (jnp.asarray(int(seed) >> 32, jnp.uint32), jnp.asarray(int(seed) & _LOW32, jnp.uint32))
    return jax.random.wrap_key_data(_seed_state(words), impl=xoroshiro128aox)


def key_from_state(s0, s1) -> jax.Array:
    """Typed keys holding given generator states (ints, lists of ints or uint64 arrays of one shape; (0, 0) is
    refused)."""
    # lists go through object arrays: numpy would make floats of a list holding ints above 2^63
    s0, s1 = as_state(*(np.array(s, dtype=object) if isinstance(s, list | tuple) else s for s in (s0, s1)))
    words = [w.astype(np.uint32) for s in (s0, s1) for w in (s >> np.uint64(32), s & np.uint64(_LOW32))]
    return jax.random.wrap_key_data(np.stack(words, axis=-1), impl=xoroshiro128aox)


def state_of(keys: jax.Array) -> tuple[np.ndarray, np.ndarray]:
    """The generator states (s0, s1) of typed xoroshiro128aox keys: uint64 arrays of the keys' shape, which
    core.random's numpy generators take as they are."""
    if not (isinstance(keys, jax.Array) and jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"state_of takes typed keys (jax.random.key(..., impl=xoroshiro128aox)), got {keys!r}")
    if jax.random.key_impl(keys) != xoroshiro128aox:
        raise TypeError(f"state_of takes xoroshiro128aox keys, got keys of {jax.random.key_impl(keys)}")
    data = np.asarray(jax.random.key_data(keys)).astype(np.uint64)
    return (data[..., 0] << np.uint64(32)) | data[..., 1], (data[..., 2] << np.uint64(32)) | data[..., 3]


__all__ = [
    "GOLDEN",
    "LANES",
    "LANE_BLOCK",
    "key",
    "key_from_state",
    "lane_states",
    "mix64",
    "state_of",
    "xoroshiro128aox",
]

"""xoroshiro128aox as a JAX PRNG (core.random.jax_prng) against independent references: core.random's numpy
generator, lanes jumped one core.random.jump at a time, and splitmix64 and the child derivation written out here on
Python integers from the module's documented rules."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.random import generate, jump
from core.random import jax_prng as xp

MASK = (1 << 64) - 1
G = 0x9E3779B97F4A7C15  # splitmix64's increment
K0, K1 = G, 0xD1B54A32D192ED03
LANES = 1024
JIT_BITS = jax.jit(jax.random.bits, static_argnums=(1, 2))


def mix64(z: int) -> int:
    """splitmix64's finaliser (Vigna's splitmix64.c)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def seeded_state(seed: int) -> tuple[int, int]:
    """The first two outputs of splitmix64 started at `seed`."""
    return mix64((seed + G) & MASK), mix64((seed + 2 * G) & MASK)


def child_state(s0: int, s1: int, index: int, tag: int) -> tuple[int, int]:
    x = 2 * index + tag
    c0 = mix64(s0 ^ mix64(s1 ^ mix64(x ^ K0)))
    c1 = mix64(s1 ^ mix64(s0 ^ mix64(x ^ K1)))
    return (c0, G) if c0 == c1 == 0 else (c0, c1)


def state_ints(key) -> tuple[int, int]:
    s0, s1 = xp.state_of(key)
    return int(s0), int(s1)


def brute_force_lanes(s0: int, s1: int, count: int = LANES) -> tuple[np.ndarray, np.ndarray]:
    """Lane j = the state after j jumps of 2^64 steps, one core.random.jump at a time."""
    lanes = [(np.uint64(s0), np.uint64(s1))]
    for _ in range(count - 1):
        lanes.append(jump(*lanes[-1]))
    return np.array([a for a, _ in lanes], np.uint64), np.array([b for _, b in lanes], np.uint64)


@pytest.fixture(scope="module")
def lanes():
    """A key and its 1024 lanes, brute force (about 1.5 s)."""
    key = xp.key(20240611)
    return key, brute_force_lanes(*state_ints(key))


def reference_bits(lanes, shape, bits: int) -> np.ndarray:
    """Value i: lane i mod 1024 at step i div 1024 (core.random.generate), its top `bits` bits."""
    n = int(np.prod(shape, dtype=np.int64))
    steps = -(-n // LANES)
    width = min(n, LANES)
    raw = generate(lanes[0][:width], lanes[1][:width], steps)  # [lane, step]
    i = np.arange(n)
    values = raw[i % LANES, i // LANES] >> np.uint64(64 - bits)
    return values.astype(f"uint{bits}").reshape(shape)


def test_mix64_matches_splitmix64_on_edge_words():
    words = [0, 1, 2**32 - 1, 2**32, 2**63, MASK, G, 0x0123456789ABCDEF, 0xFFFF0000FFFF0000]
    hi = jnp.asarray([w >> 32 for w in words], jnp.uint32)
    lo = jnp.asarray([w & 0xFFFFFFFF for w in words], jnp.uint32)
    got_hi, got_lo = jax.jit(xp.mix64)((hi, lo))
    got = [(int(h) << 32) | int(low) for h, low in zip(np.asarray(got_hi), np.asarray(got_lo), strict=True)]
    assert got == [mix64(w) for w in words]


def test_seeds_map_to_states_by_splitmix64():
    for seed in [0, 1, 42, 2**31 - 1, 2**32 - 1, 2**63, MASK]:
        assert state_ints(xp.key(seed)) == seeded_state(seed), seed
    # jax.random.key hands the seed's bits as an unsigned integer of its own width (int32 without x64 mode)
    for seed in [0, 7, 2**31 - 1, 2**31, 2**32 - 1]:  # JAX wraps Python ints to int32: the bits are kept
        assert state_ints(jax.random.key(seed, impl=xp.xoroshiro128aox)) == seeded_state(seed)
    assert state_ints(jax.random.key(-1, impl=xp.xoroshiro128aox)) == seeded_state(2**32 - 1)
    jitted = jax.jit(lambda s: jax.random.key(s, impl=xp.xoroshiro128aox))
    assert state_ints(jitted(jnp.uint32(2**32 - 5))) == seeded_state(2**32 - 5)
    with jax.enable_x64(True):
        assert state_ints(jax.random.key(2**40 + 3, impl=xp.xoroshiro128aox)) == seeded_state(2**40 + 3)
        assert state_ints(jax.random.key(-1, impl=xp.xoroshiro128aox)) == seeded_state(MASK)


def test_lanes_are_the_key_jumped_j_times_2_to_64(lanes):
    key, (lane_s0, lane_s1) = lanes
    got = np.asarray(jax.jit(xp.lane_states, static_argnums=1)(jax.random.key_data(key), LANES)).astype(np.uint64)
    np.testing.assert_array_equal((got[:, 0] << np.uint64(32)) | got[:, 1], lane_s0)
    np.testing.assert_array_equal((got[:, 2] << np.uint64(32)) | got[:, 3], lane_s1)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2 * LANES + 3,), (2, 0, 3)])
def test_bits_are_the_numpy_stream(lanes, shape):
    key, lane_states = lanes
    for dtype in (jnp.uint8, jnp.uint16, jnp.uint32):
        want = reference_bits(lane_states, shape, jnp.dtype(dtype).itemsize * 8)
        eager, jitted = jax.random.bits(key, shape, dtype), JIT_BITS(key, shape, dtype)
        assert eager.dtype == jitted.dtype == dtype and eager.shape == shape
        np.testing.assert_array_equal(np.asarray(eager), want)
        np.testing.assert_array_equal(np.asarray(jitted), want)


def test_64_bit_values_in_x64_mode(lanes):
    key, lane_states = lanes
    with jax.enable_x64(True):
        got = jax.random.bits(key, (LANES + 5,), jnp.uint64)
        assert got.dtype == jnp.uint64
        np.testing.assert_array_equal(np.asarray(got), reference_bits(lane_states, (LANES + 5,), 64))


def test_uniform_is_jax_s_construction_from_our_bits(lanes):
    # jax.random.uniform: the top mantissa bits of `bits` under the exponent of 1.0, minus 1
    key, lane_states = lanes
    bits32 = reference_bits(lane_states, (4, 9), 32)
    want32 = ((bits32 >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    np.testing.assert_array_equal(np.asarray(jax.random.uniform(key, (4, 9), jnp.float32)), want32)
    bits16 = reference_bits(lane_states, (11,), 16)
    want16 = ((bits16 >> np.uint16(6)) | np.uint16(0x3C00)).view(np.float16) - np.float16(1)
    np.testing.assert_array_equal(np.asarray(jax.random.uniform(key, (11,), jnp.float16)), want16)


def test_split_and_fold_in_follow_the_documented_derivation():
    key = xp.key(5)
    s0, s1 = state_ints(key)
    children = jax.random.split(key, 6)
    assert [state_ints(c) for c in children] == [child_state(s0, s1, i, 0) for i in range(6)]
    for data in [0, 1, 12345, 2**32 - 1]:
        assert state_ints(jax.random.fold_in(key, data)) == child_state(s0, s1, data, 1), data
    # a shaped split is the flat one reshaped; jit changes nothing; the same call gives the same keys
    np.testing.assert_array_equal(
        jax.random.key_data(jax.random.split(key, (2, 3))), jax.random.key_data(children).reshape(2, 3, 4)
    )
    jitted = jax.jit(lambda k: (jax.random.split(k, 6), jax.random.fold_in(k, 12345)))(key)
    np.testing.assert_array_equal(jax.random.key_data(jitted[0]), jax.random.key_data(children))
    assert state_ints(jitted[1]) == child_state(s0, s1, 12345, 1)
    # a child draws the numpy stream of its own state
    c0, c1 = child_state(s0, s1, 3, 0)
    want = generate(np.uint64(c0), np.uint64(c1), 1)[0] >> np.uint64(32)
    assert int(jax.random.bits(children[3], (), jnp.uint32)) == int(want)


def test_children_are_distinct_from_each_other_and_their_parent():
    @jax.jit
    def children(key):
        split = jax.random.split(key, 4096)
        folded = jax.vmap(jax.random.fold_in, (None, 0))(key, jnp.arange(4096, dtype=jnp.uint32))
        grand = jax.vmap(lambda k: jax.random.split(k, 64))(jax.random.split(key, 64))
        return jnp.concatenate([jax.random.key_data(k).reshape(-1, 4) for k in (split, folded, grand)])

    key = xp.key(11)
    words = np.asarray(children(key))
    assert len(np.unique(words, axis=0)) == 3 * 4096
    assert not (words == np.asarray(jax.random.key_data(key))).all(axis=1).any()


def test_the_generator_is_passed_by_object_not_by_name():
    """The documented call, jax.random.key(seed, impl=xoroshiro128aox), is jax_prng.key's seeding; the name is refused
    (JAX 0.10.2 has no public registry of names: should a release add one, this fails, and the module should register
    the name), and so is making it JAX's default."""
    by_object = jax.random.key(0, impl=xp.xoroshiro128aox)
    np.testing.assert_array_equal(
        np.asarray(jax.random.key_data(by_object)), np.asarray(jax.random.key_data(xp.key(0)))
    )
    assert state_ints(by_object) == seeded_state(0)
    assert jax.random.key_impl(by_object) == xp.xoroshiro128aox
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "xoroshiro128aox"'):
        jax.random.key(0, impl="xoroshiro128aox")
    default = jax.config.jax_default_prng_impl
    for impl in ("xoroshiro128aox", xp.xoroshiro128aox):
        with pytest.raises(ValueError, match="threefry2x32"):  # the message lists the names it takes
            jax.config.update("jax_default_prng_impl", impl)
    assert jax.config.jax_default_prng_impl == default


def test_key_data_round_trips():
    rng = np.random.default_rng(3)
    s0 = rng.integers(0, 2**64, (2, 3), dtype=np.uint64, endpoint=False)
    s1 = rng.integers(1, 2**64, (2, 3), dtype=np.uint64, endpoint=False)
    keys = xp.key_from_state(s0, s1)
    assert keys.shape == (2, 3)
    got0, got1 = xp.state_of(keys)
    np.testing.assert_array_equal(got0, s0)
    np.testing.assert_array_equal(got1, s1)
    rewrapped = jax.random.wrap_key_data(jax.random.key_data(keys), impl=xp.xoroshiro128aox)
    np.testing.assert_array_equal(xp.state_of(rewrapped)[0], s0)
    # a key made from a state draws that state's stream (lane 0 first), per key under vmap
    want = generate(s0[0], s1[0], 1)[:, 0] >> np.uint64(32)
    got = jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32))(keys[0])
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.uint32))
    assert state_ints(xp.key_from_state(1, 2**64 - 1)) == (1, 2**64 - 1)
    listed = xp.state_of(xp.key_from_state([2**64 - 1, 5], [1, 2**63]))  # lists of ints above 2^63 stay exact
    assert [int(v) for v in listed[0]] == [2**64 - 1, 5] and [int(v) for v in listed[1]] == [1, 2**63]


def test_bad_input_is_refused_with_the_value_and_the_range():
    for seed in (-1, 2**64, 1.5, True, "7"):
        with pytest.raises(ValueError, match=r"seed=.* must be an integer with 0 <= seed < 2\^64"):
            xp.key(seed)
    with pytest.raises(ValueError, match=r"state \(0, 0\) is a fixed point"):
        xp.key_from_state(0, 0)
    with pytest.raises(ValueError, match=r"s0=18446744073709551616 is outside 64 bits"):
        xp.key_from_state(2**64, 1)
    with pytest.raises(ValueError, match=r"s1 has negative entries"):
        xp.key_from_state(np.array([1]), np.array([-1]))
    with pytest.raises(TypeError, match="state_of takes xoroshiro128aox keys, got keys of threefry2x32"):
        xp.state_of(jax.random.key(0))
    with pytest.raises(TypeError, match="state_of takes typed keys"):
        xp.state_of(np.zeros(4, np.uint32))
    with pytest.raises(TypeError, match="seed must be an integer, got dtype float32"):
        xp.xoroshiro128aox._impl.seed(jnp.float32(1.0))

import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from core.numerics import cast_to_format
from core.random import Xoroshiro128, advance, aox_generate, jump, plus_generate
from core.random import jax_xoroshiro as jx
from core.random.ipu import (
    bernoulli,
    ipu_seed_state,
    normal,
    rounding_bits,
    uniform_float32,
    uniform_float64,
)
from core.random.xoroshiro import next_state
from tests.conftest import REPO_ROOT

MASK = (1 << 64) - 1


def reference_step(s0: int, s1: int) -> tuple[int, int, int, int]:
    """The published definition on Python integers: (aox output, plus output, next s0, next s1)."""

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    sx, sa = s0 ^ s1, s0 & s1
    aox = sx ^ (rotl(sa, 1) | rotl(sa, 2))
    plus = (s0 + s1) & MASK
    return aox, plus, rotl(s0, 55) ^ sx ^ ((sx << 14) & MASK), rotl(sx, 36)


def random_states(n, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False),
        rng.integers(1, 2**64, n, dtype=np.uint64, endpoint=False),
    )


def test_paper_test_vector():
    assert [int(v) for v in aox_generate(1, 2, 4)] == [0x3, 0x8000300000C003, 0x13840E038000363, 0xA080FED030C4C36E]


@pytest.mark.parametrize("kind", ["aox", "plus"])
def test_vectorised_streams_match_the_definition(kind):
    s0, s1 = random_states(8)
    out = (aox_generate if kind == "aox" else plus_generate)(s0, s1, 20)
    assert out.shape == (8, 20) and out.dtype == np.uint64
    for i in range(8):
        a, b = int(s0[i]), int(s1[i])
        for j in range(20):
            aox, plus, a, b = reference_step(a, b)
            assert int(out[i, j]) == (aox if kind == "aox" else plus)


def test_aox_output_is_an_addition_with_a_two_bit_carry_chain():
    # bit i of out = x_i XOR (a_{i-1} OR a_{i-2}) with x = s0 ^ s1, a = s0 & s1 (indices mod 64)
    s0, s1 = random_states(50, seed=3)
    out = aox_generate(s0, s1, 1)[:, 0]
    for a0, a1, o in zip(s0.tolist(), s1.tolist(), out.tolist(), strict=True):
        x, a = a0 ^ a1, a0 & a1
        for i in range(64):
            expected = ((x >> i) & 1) ^ (((a >> ((i - 1) % 64)) & 1) | ((a >> ((i - 2) % 64)) & 1))
            assert (o >> i) & 1 == expected


@pytest.mark.parametrize("kind", ["aox", "plus"])
def test_jax_stream_is_identical_and_resumes(kind):
    s0, s1 = random_states(300, seed=1)
    ref = (aox_generate if kind == "aox" else plus_generate)(s0, s1, 40)
    state = jx.to_jax_state(s0, s1)
    first, state = jx.generate(state, 25, kind)
    second, _ = jx.generate(state, 15, kind)
    got = np.concatenate([jx.join_words(first), jx.join_words(second)], axis=-1)
    np.testing.assert_array_equal(got, ref)
    major, _ = jx.generate(jx.to_jax_state(s0, s1), 40, kind, steps_major=True)
    np.testing.assert_array_equal(jx.join_words(major).T, ref)


def test_stateful_generator_continues_the_stream():
    g = Xoroshiro128(5, 7)
    np.testing.assert_array_equal(np.concatenate([g.next_raw(3), g.next_raw(4)]), aox_generate(5, 7, 7))
    s0, s1 = advance(5, 7, 7)
    assert (int(g.state[0]), int(g.state[1])) == (int(s0), int(s1))


def gf2_transition_matrix() -> np.ndarray:
    """The 128x128 matrix over GF(2) of one state update, built by applying it to every basis state."""
    cols = []
    for bit in range(128):
        s0 = np.array([1 << bit if bit < 64 else 0], dtype=object).astype(np.uint64)
        s1 = np.array([1 << (bit - 64) if bit >= 64 else 0], dtype=object).astype(np.uint64)
        n0, n1 = next_state(s0, s1)
        word = (int(n1[0]) << 64) | int(n0[0])
        cols.append([(word >> k) & 1 for k in range(128)])
    return np.array(cols, dtype=np.uint8).T


def test_jump_is_2_to_the_64_steps_by_independent_linear_algebra():
    t = gf2_transition_matrix().astype(np.int64)
    power = t.copy()
    for _ in range(64):  # T^(2^64) by repeated squaring over GF(2)
        power = (power @ power) % 2
    s0, s1 = random_states(5, seed=2)
    j0, j1 = jump(s0, s1)
    for i in range(5):
        vec = np.array([(int(s0[i]) >> k) & 1 for k in range(64)] + [(int(s1[i]) >> k) & 1 for k in range(64)])
        new = (power @ vec) % 2
        assert int(j0[i]) == sum(int(b) << k for k, b in enumerate(new[:64]))
        assert int(j1[i]) == sum(int(b) << k for k, b in enumerate(new[64:]))


def test_ipu_seeding():
    s0, s1 = ipu_seed_state(seed=0x0123456789ABCDEF, seed_modifier=7, tiles=46, workers=6)
    assert s0.shape == s1.shape == (46, 6)
    # before the 16 discarded outputs: s0 = the seed, s1 packs the modifier, tile and worker
    tile, worker = 45, 5
    raw1 = ((7 ^ 0x55555555) << 32) | (((tile << 4) ^ 0xAAAAAAA0) | worker)
    a, b = 0x0123456789ABCDEF, raw1
    for _ in range(16):
        _, _, a, b = reference_step(a, b)
    assert (int(s0[tile, worker]), int(s1[tile, worker])) == (a, b)
    states = set(zip(s0.ravel().tolist(), s1.ravel().tolist(), strict=True))
    assert len(states) == 46 * 6  # every worker of every tile has its own stream
    full = ipu_seed_state(1)
    assert full[0].shape == (1472, 6)


def test_distribution_recipes():
    x = aox_generate(*random_states(1, seed=4), 200_000)[0]
    u32, u64 = uniform_float32(x), uniform_float64(x)
    assert u32.dtype == np.float32 and 0 <= u32.min() and u32.max() < 1
    np.testing.assert_array_equal(u32, (x >> np.uint64(40)).astype(np.float32) / np.float32(2**24))
    assert abs(u64.mean() - 0.5) < 5 * np.sqrt(1 / 12 / x.size)
    z = normal(x[:100_000], x[100_000:])
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.std() - 1) < 5 / np.sqrt(2 * z.size)
    keep = bernoulli(x, 0.9)
    assert abs(keep.mean() - 0.9) < 5 * np.sqrt(0.09 / x.size)
    assert bernoulli(x, 0.0).sum() == 0 and bernoulli(x, 1.0).all()
    with pytest.raises(ValueError, match=r"p=1.5 must be in \[0, 1\]"):
        bernoulli(x, 1.5)


def test_stochastic_rounding_can_draw_its_bits_from_the_ipu_generator():
    s0, s1 = ipu_seed_state(42, tiles=1, workers=1)
    bits = rounding_bits(aox_generate(s0, s1, 1 << 16)[0, 0])
    x = jnp.full(bits.shape, 1.1, jnp.float32)
    y = np.asarray(cast_to_format(x, "e4m3", rounding="stochastic", random_bits=jnp.asarray(bits)))
    assert set(np.unique(y)) == {1.0, 1.125}
    p = (np.float32(1.1) - 1) / 0.125
    assert abs((y == 1.125).mean() - p) < 5 * np.sqrt(p * (1 - p) / y.size)


def test_bad_input():
    with pytest.raises(ValueError, match=r"state \(0, 0\) is a fixed point"):
        aox_generate(0, 0, 4)
    with pytest.raises(ValueError, match="outside 64 bits"):
        aox_generate(2**64, 1, 4)
    with pytest.raises(ValueError, match="negative entries"):
        aox_generate(np.array([-1]), np.array([1]), 4)
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        aox_generate(1, 2, -1)
    with pytest.raises(ValueError, match="same shape"):
        aox_generate(np.ones(3, np.uint64), np.ones(2, np.uint64), 1)
    with pytest.raises(ValueError, match="output must be one of aox, plus"):
        Xoroshiro128(1, 2, output="star")
    with pytest.raises(ValueError, match="seed_modifier"):
        ipu_seed_state(1, seed_modifier=2**32)


def test_raw_stream_cli_writes_the_generator_output():
    r = subprocess.run(
        [sys.executable, "-m", "core.random", "--generator", "aox", "--seed", "9", "--bytes", "80"],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=60,
        check=True,
    )
    words = np.frombuffer(r.stdout, dtype="<u8")
    np.testing.assert_array_equal(words, aox_generate(9, 9 ^ 0x9E3779B97F4A7C15, 10))

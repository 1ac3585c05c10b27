"""core.numerics.bits against numpy's own float32 arithmetic (np.ldexp, np.frexp, view), on every binade."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.numerics.bits import compose, decompose, float32_bits, rounding_bits, shift_left, shift_right


def _float32_samples(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7F800000, n, dtype=np.uint32)  # every finite non-negative float32, subnormals too
    return np.concatenate([bits, np.uint32([0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF])])


def test_decompose_gives_the_significand_unit_and_leading_exponent_of_every_float32():
    a = _float32_samples()
    sig, u, lead = (np.asarray(v) for v in decompose(jnp.asarray(a)))
    x = a.view(np.float32).astype(np.float64)
    assert np.array_equal(np.ldexp(sig.astype(np.float64), u), x)
    nonzero = x > 0
    assert np.array_equal(lead[nonzero], np.frexp(x[nonzero])[1] - 1)


@pytest.mark.parametrize("k", [-160, -140, -126, -3, 0, 5, 100, 140])
def test_compose_is_ldexp_where_float32_holds_the_value_and_truncates_below_it(k):
    a = _float32_samples(seed=k + 200)
    sig, u, _ = decompose(jnp.asarray(a))
    got = np.asarray(compose(sig, u + k)).view(np.float32)
    x = a.view(np.float32).astype(np.float64)
    want = np.ldexp(x, k)
    tiny = 2.0**-149
    want = np.where(want >= 2.0**128, np.inf, np.trunc(want / tiny) * tiny)  # truncation toward zero below 2^-149
    assert np.array_equal(got.astype(np.float64), want.astype(np.float32).astype(np.float64))


def test_shifts_are_defined_for_every_count():
    x = jnp.uint32(0x80000001)
    assert int(shift_right(x, jnp.int32(32))) == 0 and int(shift_right(x, jnp.int32(31))) == 1
    assert int(shift_left(jnp.uint32(1), jnp.int32(40))) == 0x80000000  # clipped to 31
    assert float32_bits(1.0) == 0x3F800000


def test_rounding_bits_resolve_alike_for_every_cast_and_name_the_caller_on_bad_input():
    key = jax.random.key(3)
    assert rounding_bits((4,), "nearest", key, None, "f") is None
    a = rounding_bits((4, 2), "stochastic", key, None, "f")
    assert a.shape == (4, 2) and a.dtype == jnp.uint32
    with pytest.raises(ValueError, match="f: rounding must be one of nearest, stochastic, got 'up'"):
        rounding_bits((4,), "up", key, None, "f")
    with pytest.raises(ValueError, match=r"g: random_bits must be uint32 of shape \(4,\)"):
        rounding_bits((4,), "stochastic", None, jnp.zeros(3, jnp.uint32), "g")
    with pytest.raises(ValueError, match="h: rounding='stochastic' needs key=, random_bits= or an enclosing"):
        rounding_bits((4,), "stochastic", None, None, "h")

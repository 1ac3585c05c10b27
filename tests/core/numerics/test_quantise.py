import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics import quantise, quantised_dot, stochastic_rounding

E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2


def ml(x, dtype):
    return np.asarray(x, np.float32).astype(dtype).astype(np.float32)


def data(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def test_forward_casts_and_backward_casts_the_gradient():
    x, g = data(1000, 0, 30), data(1000, 1, 1e-3)
    y, vjp = jax.vjp(lambda v: quantise(v, "e4m3", "e5m2"), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(y), ml(x, E4M3))
    np.testing.assert_array_equal(np.asarray(vjp(jnp.asarray(g))[0]), ml(g, E5M2))


def test_none_is_straight_through():
    x, g = data(100, 0, 30), data(100, 1)
    y, vjp = jax.vjp(lambda v: quantise(v, "e4m3"), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(y), ml(x, E4M3))
    np.testing.assert_array_equal(np.asarray(vjp(jnp.asarray(g))[0]), g)  # the rounding is invisible to grad
    y2, vjp2 = jax.vjp(lambda v: quantise(v, None, "e5m2"), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(y2), x)
    np.testing.assert_array_equal(np.asarray(vjp2(jnp.asarray(g))[0]), ml(g, E5M2))


def test_works_under_jit_grad_and_vmap():
    x = jnp.asarray(data((4, 32), 2, 10))

    def loss(v):
        return jnp.sum(quantise(v, "e4m3", "e5m2") ** 2)

    g = jax.jit(jax.grad(loss))(x)
    # d/dv sum(q(v)^2) = 2 q(v), then the backward cast to E5M2
    np.testing.assert_array_equal(np.asarray(g), ml(2 * ml(np.asarray(x), E4M3), E5M2))
    per_row = jax.vmap(jax.grad(loss))(x)
    np.testing.assert_array_equal(np.asarray(per_row), np.asarray(g))


def test_saturation_applies_in_both_directions():
    y, vjp = jax.vjp(lambda v: quantise(v, "e4m3", "e5m2", saturate=True), jnp.float32([1000.0]))
    assert float(y[0]) == 448.0 and float(vjp(jnp.float32([1e6]))[0][0]) == 57344.0


def test_quantised_dot_is_the_fp32_sum_of_exact_products():
    a, b = data((16, 64), 3, 4), data((64, 8), 4, 4)
    ref = ml(a, E4M3).astype(np.float64) @ ml(b, E4M3).astype(np.float64)  # products exact, sums in float64
    out = np.asarray(quantised_dot(a, b, "e4m3", "e4m3"))
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
    np.testing.assert_array_equal(
        np.asarray(quantised_dot(a, b, "e4m3", "e4m3", out_fmt="bf16")), ml(out, ml_dtypes.bfloat16)
    )


def test_quantised_dot_gradients_use_the_gradient_format():
    a, b, g = data((8, 32), 5), data((32, 4), 6), data((8, 4), 7, 1e-2)
    _, vjp = jax.vjp(lambda p, q: quantised_dot(p, q, "e4m3", "e4m3", grad_fmt="e5m2"), jnp.asarray(a), jnp.asarray(b))
    da, db = vjp(jnp.asarray(g))
    aq, bq = ml(a, E4M3).astype(np.float64), ml(b, E4M3).astype(np.float64)
    np.testing.assert_allclose(np.asarray(da), ml(g @ bq.T, E5M2), rtol=0, atol=0)
    np.testing.assert_allclose(np.asarray(db), ml(aq.T @ g, E5M2), rtol=0, atol=0)


def test_bad_input():
    with pytest.raises(TypeError, match="floating-point"):
        quantise(jnp.arange(3), "e4m3")
    with pytest.raises(ValueError, match="unknown number format"):
        quantise(jnp.ones(3), "e4m3", "fp7")


def _neighbours(x, dtype):
    """The grid points of `dtype` just below-or-at and above each x, from all 256 codes of the ml_dtypes type."""
    grid = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    grid = np.unique(grid[np.isfinite(grid)])
    i = np.searchsorted(grid, x, side="right") - 1
    return grid[i], grid[np.minimum(i + 1, len(grid) - 1)]


def test_stochastic_rounding_is_unbiased_on_the_grid_in_both_directions():
    x = data(64, 8, 3)
    reps = 4000
    xs = jnp.asarray(np.tile(x, (reps, 1)))
    g = np.tile(data(64, 9, 1e-3), (reps, 1))
    y, vjp = jax.vjp(lambda v: quantise(v, "e4m3", "e5m2", rounding="stochastic", key=jax.random.key(3)), xs)
    dy = np.asarray(vjp(jnp.asarray(g))[0])
    for values, ref, dtype in ((np.asarray(y), x, E4M3), (dy, g[0], E5M2)):
        lo, hi = _neighbours(ref, dtype)
        assert np.all((values == lo) | (values == hi))  # every draw is one of the two neighbours
        p_up = (ref - lo) / (hi - lo)  # the probability of rounding up that makes the cast unbiased
        frac_up = (values == hi).mean(axis=0)
        tol = 4 * np.sqrt(p_up * (1 - p_up) / reps) + 1e-9
        assert np.all(np.abs(frac_up - p_up) <= tol)


def test_stochastic_rounding_is_reproducible_and_keyed():
    x = jnp.asarray(data(4096, 10, 5))

    def cast(key):
        return np.asarray(quantise(x, "e5m2", rounding="stochastic", key=key))

    np.testing.assert_array_equal(cast(jax.random.key(0)), cast(jax.random.key(0)))
    assert (cast(jax.random.key(0)) != cast(jax.random.key(1))).mean() > 0.2

    def two_casts(key):  # keys from the enclosing block: a different one per cast, the same on every trace
        with stochastic_rounding(key):
            return quantise(x, "e5m2", rounding="stochastic"), quantise(x, "e5m2", rounding="stochastic")

    a1, b1 = jax.jit(two_casts)(jax.random.key(5))
    a2, b2 = two_casts(jax.random.key(5))
    np.testing.assert_array_equal(np.asarray(a1), np.asarray(a2))
    np.testing.assert_array_equal(np.asarray(b1), np.asarray(b2))
    assert (np.asarray(a1) != np.asarray(b1)).mean() > 0.2
    with pytest.raises(ValueError, match="stochastic_rounding"):
        quantise(x, "e5m2", rounding="stochastic")
    with pytest.raises(ValueError, match="rounding must be one of"):
        quantise(x, "e5m2", rounding="up")


def test_stochastic_rounding_saturates_when_asked():
    y = quantise(jnp.float32([1000.0, -1e6, 3.0]), "e4m3", rounding="stochastic", saturate=True, key=jax.random.key(0))
    assert np.asarray(y)[:2].tolist() == [448.0, -448.0] and float(y[2]) == 3.0
    assert np.isnan(np.asarray(quantise(jnp.float32([1e6]), "e4m3", rounding="stochastic", key=jax.random.key(0))))[0]

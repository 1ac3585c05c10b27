import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics import quantise, quantised_dot

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

"""The FP8 matmul with per-tensor scale biases against an independent numpy + ml_dtypes reference, forward and
backward, for each policy; the probe returns the amaxes and biases used; the delayed policy's history and the
handling of bad amaxes (0, Inf, NaN): no Inf/NaN bias ever, the previous bias kept, the event counted."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics.fp8 import FP8Meta, calibrate, empty_probe, fp8_dot, update_meta

E4M3, E5M2 = (ml_dtypes.float8_e4m3fn, 448.0), (ml_dtypes.float8_e5m2, 57344.0)


def _cast(v, fmt, bias):
    dtype, top = fmt
    scaled = np.clip(np.asarray(v, np.float64) * 2.0**bias, -top, top)  # saturating
    return scaled.astype(np.float32).astype(dtype).astype(np.float64)


def _bias(v, fmt):
    return int(np.clip(np.floor(np.log2(fmt[1] / np.max(np.abs(v)))), -31, 31))


def _reference(x, w, g, bx, bw, bg):
    xq, wq, gq = _cast(x, E4M3, bx), _cast(w, E4M3, bw), _cast(g, E5M2, bg)
    y = xq @ wq * 2.0 ** -(bx + bw)
    dx = gq @ wq.T * 2.0 ** -(bg + bw)
    dw = xq.T @ gq * 2.0 ** -(bx + bg)
    return y, dx, dw


def _run(x, w, g, policy, bias=None):
    def f(x, w, probe):
        return jnp.sum(fp8_dot(x, w, bias, probe, policy=policy) * g)

    y = fp8_dot(x, w, bias, policy=policy)
    dx, dw, stats = jax.grad(f, argnums=(0, 1, 2))(jnp.asarray(x), jnp.asarray(w), empty_probe())
    return np.asarray(y), np.asarray(dx), np.asarray(dw), np.asarray(stats)


@pytest.fixture
def tensors():
    rng = np.random.default_rng(0)
    # magnitudes far from 1, as in real layers: small activations, tiny gradients
    x = (rng.normal(size=(16, 32)) * 3e-3).astype(np.float32)
    w = (rng.normal(size=(32, 8)) * 0.02).astype(np.float32)
    g = (rng.normal(size=(16, 8)) * 1e-6).astype(np.float32)
    return x, w, g


def test_amax_policy_equals_the_reference_forward_and_backward(tensors):
    x, w, g = tensors
    bx, bw, bg = _bias(x, E4M3), _bias(w, E4M3), _bias(g, E5M2)
    y, dx, dw, stats = _run(x, w, g, "amax")
    ry, rdx, rdw = _reference(x, w, g, bx, bw, bg)
    for ours, ref in ((y, ry), (dx, rdx), (dw, rdw)):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=0)
    np.testing.assert_allclose(stats[:, 0], [np.abs(x).max(), np.abs(w).max(), np.abs(g).max()], rtol=1e-6)
    np.testing.assert_array_equal(stats[:, 1], [bx, bw, bg])
    assert bg > 15  # the gradients need the largest bias


@pytest.mark.parametrize("policy", ["cscale", "delayed"])
def test_given_biases_are_used_and_overflow_saturates(tensors, policy):
    x, w, g = tensors
    bias = np.array([_bias(x, E4M3) + 3, _bias(w, E4M3) - 2, _bias(g, E5M2) + 1])  # x and g now overflow
    y, dx, dw, stats = _run(x, w, g, policy, bias)
    ry, rdx, rdw = _reference(x, w, g, *bias)
    for ours, ref in ((y, ry), (dx, rdx), (dw, rdw)):
        assert np.isfinite(ours).all()
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=0)
    np.testing.assert_array_equal(stats[:, 1], bias)


def test_no_scaling_loses_small_gradients_that_amax_keeps(tensors):
    x, w, g = tensors
    g = g * 1e-3  # 1e-9: below E5M2's smallest subnormal (2^-16 ~ 1.5e-5)
    _, dx_none, _, stats = _run(x, w, g, "none")
    _, dx_amax, _, _ = _run(x, w, g, "amax")
    assert np.all(dx_none == 0) and np.all(stats[:, 1] == 0)
    exact = g @ w.T
    assert np.abs(dx_amax - exact).max() < 0.2 * np.abs(exact).max()


def test_delayed_bias_follows_the_history_and_ignores_bad_amaxes():
    meta = FP8Meta.init(history_length=3, bias=(1, 2, 3))
    seen = [[4.0, 0.5, 1e-4], [2.0, 0.25, 1e-3], [1.0, 0.125, 1e-5], [0.5, 0.1, 1e-5]]
    for step, amaxes in enumerate(seen):
        stats = jnp.stack([jnp.asarray(amaxes), jnp.zeros(3)], 1)
        meta = update_meta(meta, stats, "delayed")
        window = np.array(seen[max(0, step - 2) : step + 1])  # the last 3 steps
        expected = [_bias(window[:, 0], E4M3), _bias(window[:, 1], E4M3), _bias(window[:, 2], E5M2)]
        np.testing.assert_array_equal(np.asarray(meta.bias), expected)
    before = np.asarray(meta.bias)
    history = np.asarray(meta.history)
    bad = jnp.array([[0.0, 0.0], [np.inf, 0.0], [np.nan, 0.0]])
    meta = update_meta(meta, bad, "delayed")
    np.testing.assert_array_equal(np.asarray(meta.bias), before)  # kept, finite
    np.testing.assert_array_equal(np.asarray(meta.history), history)  # bad amaxes stay out
    np.testing.assert_array_equal(np.asarray(meta.bad), [1, 1, 1])  # and are counted


def test_amax_policy_never_makes_a_non_finite_bias_and_counts_bad_amaxes():
    w = np.ones((4, 2), np.float32)
    for x, bias in ((np.zeros((3, 4), np.float32), 31), (np.full((3, 4), np.nan, np.float32), 0)):
        _, _, _, stats = _run(x, w, np.ones((3, 2), np.float32), "amax")
        assert stats[0, 1] == bias
        meta = update_meta(FP8Meta.init(), jnp.asarray(stats), "amax")
        assert int(meta.bad[0]) == 1 and int(meta.bad[1]) == 0
    np.testing.assert_array_equal(
        np.asarray(calibrate(jnp.array([[0.0, 0], [np.nan, 0], [1e-3, 0]]), fallback=5)),
        [5, 5, _bias(np.array([1e-3]), E5M2)],
    )


def test_bad_policy_is_named():
    with pytest.raises(ValueError, match="unknown FP8 scaling policy 'dynamic'"):
        fp8_dot(np.ones((2, 2)), np.ones((2, 2)), policy="dynamic")

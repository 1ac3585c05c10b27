import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics import (
    FORMATS,
    all_finite,
    amax,
    amax_scale_bias,
    amax_scaled_dot,
    delayed_scaled_cast,
    delayed_scaling_init,
    delayed_scaling_update,
    dynamic_loss_scale_init,
    dynamic_loss_scale_update,
    quantised_dot,
    unscale_grads,
)


def reference_bias(amax, fmt_max, limit=31):
    if amax == 0:
        return limit
    if not math.isfinite(amax):
        return 0
    return max(-limit, min(limit, math.floor(math.log2(fmt_max / amax))))


@pytest.mark.parametrize("shape", [(7,), (64, 64), (3, 100, 100)])
def test_amax_is_nan_when_x_holds_a_nan_whatever_its_size(shape):
    """jnp.max alone drops NaN over 4,096 or more float32 values on XLA's CPU backend (jaxlib 0.10.2)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert float(amax(jnp.asarray(x))) == np.abs(x).max()
    x.reshape(-1)[x.size // 2] = np.nan
    assert np.isnan(float(amax(jnp.asarray(x)))) and np.isnan(float(jax.jit(amax)(jnp.asarray(x))))


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e4m3fnuz"])
def test_amax_scale_bias_is_floor_log2_of_max_over_amax(name):
    fmt_max = FORMATS[name].max
    rng = np.random.default_rng(0)
    amaxes = np.concatenate(
        [
            np.exp2(rng.uniform(-60, 60, 2000)),
            fmt_max * np.exp2(np.arange(-40, 40)),  # exact powers of two: floor(log2) has no slack there
            np.nextafter(np.float32(fmt_max * np.exp2(np.arange(-20, 20))), np.float32(np.inf)),
            [0.0, np.inf, np.nan],
        ]
    ).astype(np.float32)
    ours = np.asarray(amax_scale_bias(jnp.asarray(amaxes), name))
    ref = [reference_bias(float(a), fmt_max) for a in amaxes]
    np.testing.assert_array_equal(ours, ref)


def ml(x, dtype):
    return np.asarray(x, np.float64).astype(np.float32).astype(dtype).astype(np.float64)


@pytest.mark.parametrize("scale", [1e-7, 1.0, 1e7])
def test_amax_scaled_dot_follows_the_papers_recipe(scale):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((16, 32)) * scale).astype(np.float32)
    w = (rng.standard_normal((32, 8)) * 0.1).astype(np.float32)
    g = (rng.standard_normal((16, 8)) * scale * 1e-3).astype(np.float32)
    y, vjp = jax.vjp(amax_scaled_dot, jnp.asarray(x), jnp.asarray(w))
    dx, dw = vjp(jnp.asarray(g))

    e4, e5 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    bx = reference_bias(float(np.abs(x).max()), 448.0)
    bw = reference_bias(float(np.abs(w).max()), 448.0)
    bg = reference_bias(float(np.abs(g).max()), 57344.0)
    xq, wq, gq = ml(x * 2.0**bx, e4), ml(w * 2.0**bw, e4), ml(g * 2.0**bg, e5)
    for ours, ref in [
        (y, xq @ wq * 2.0 ** -(bx + bw)),
        (dx, gq @ wq.T * 2.0 ** -(bg + bw)),
        (dw, xq.T @ gq * 2.0 ** -(bx + bg)),
    ]:
        np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())

    # and the point of it: close to FP32 at any scale, where an unscaled FP8 matmul under- or overflows
    exact = x.astype(np.float64) @ w
    rel = np.abs(np.asarray(y) - exact).max() / np.abs(exact).max()
    assert rel < 0.1
    plain = np.asarray(quantised_dot(x, w, "e4m3", "e4m3"))
    if scale != 1.0:
        assert not np.isfinite(plain).all() or np.abs(plain - exact).max() / np.abs(exact).max() > 0.5


def test_amax_scaled_dot_batched_weight_gradient_sums_over_the_batch():
    x = jnp.asarray(np.random.default_rng(2).standard_normal((3, 4, 8)).astype(np.float32))
    w = jnp.asarray(np.random.default_rng(3).standard_normal((8, 5)).astype(np.float32))
    dw = jax.grad(lambda w_: jnp.sum(amax_scaled_dot(x, w_)))(w)
    ref = jax.grad(lambda w_: jnp.sum(x @ w_))(w)
    assert dw.shape == w.shape
    assert float(jnp.abs(dw - ref).max() / jnp.abs(ref).max()) < 0.15


def test_dynamic_loss_scale_backs_off_and_grows():
    finite = [True, True, False, True, True, True, True, False, False, True]
    state = dynamic_loss_scale_init(1024.0)
    scales = []
    for f in finite:
        state = dynamic_loss_scale_update(state, jnp.bool_(f), growth_interval=3, factor=2.0, max_scale=2048.0)
        scales.append(float(state.scale))
    # by hand: grow after 3 finite steps in a row (capped at 2048), halve on every non-finite step
    assert scales == [1024, 1024, 512, 512, 512, 1024, 1024, 512, 256, 256]
    assert int(state.good_steps) == 1


def test_dynamic_loss_scale_runs_in_jit_and_respects_min():
    step = jax.jit(lambda s, f: dynamic_loss_scale_update(s, f, min_scale=1.0))
    state = dynamic_loss_scale_init(4.0)
    for _ in range(5):
        state = step(state, jnp.bool_(False))
    assert float(state.scale) == 1.0


def test_loss_scale_helpers():
    tree = {"a": jnp.ones(3), "b": jnp.array([1.0, jnp.inf])}
    assert not bool(all_finite(tree)) and bool(all_finite({"a": jnp.ones(3)}))
    out = unscale_grads({"a": jnp.full(3, 8.0, jnp.float16)}, 4.0)
    assert out["a"].dtype == jnp.float16 and float(out["a"][0]) == 2.0


def test_delayed_scaling_uses_the_history_and_keeps_scale_on_bad_amax():
    fmt_max = 448.0
    state = delayed_scaling_init(history_length=3, initial_scale=1.0)
    amaxes = [2.0, 8.0, 1.0, 0.5, 0.25, 0.0, np.inf]
    history: list[float] = []
    expected_scale = 1.0
    for a in amaxes:
        state = delayed_scaling_update(state, jnp.float32(a), "e4m3", margin=1)
        history = [a, *history][:3]
        ref = max(history)  # the 'max' algorithm: the largest amax still in the window
        if ref > 0 and math.isfinite(ref):
            expected_scale = fmt_max / ref / 2.0
        assert float(state.scale) == pytest.approx(expected_scale, rel=1e-7)
    recent = delayed_scaling_update(delayed_scaling_init(4), jnp.float32(7.0), "e5m2", algorithm="most_recent")
    assert float(recent.scale) == pytest.approx(57344.0 / 7.0, rel=1e-7)


def test_delayed_scaled_cast_saturates_a_stale_scale():
    state = delayed_scaling_init(4, initial_scale=100.0)
    out = delayed_scaled_cast(jnp.float32([10.0, -10.0, 0.01]), state, "e4m3")
    assert list(np.asarray(out)) == [448.0, -448.0, 1.0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="initial_scale must be > 0"):
        dynamic_loss_scale_init(0.0)
    with pytest.raises(ValueError, match="history_length must be >= 1"):
        delayed_scaling_init(0)
    with pytest.raises(ValueError, match="algorithm must be 'max' or 'most_recent'"):
        delayed_scaling_update(delayed_scaling_init(2), 1.0, "e4m3", algorithm="mean")

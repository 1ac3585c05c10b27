"""Pieces of the unit-scaling training: FP16 storage of weights and optimiser state."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.charlm import to_fp16_grid


def test_fp16_storage_rounds_every_float_leaf_of_params_and_adam_state_and_keeps_the_rest():
    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.standard_normal((8, 4)) * 1e-3, jnp.float32), "b": jnp.float32([1e-9, 7e4])}
    opt = optax.adamw(1e-3)
    state = opt.init(params)
    grads = jax.tree_util.tree_map(lambda x: x * 1e-4 + 3e-8, params)
    _, state = opt.update(grads, state, params)
    stored_params, stored_state = to_fp16_grid(params), to_fp16_grid(state)
    for before, after in zip(
        jax.tree_util.tree_leaves((params, state)),
        jax.tree_util.tree_leaves((stored_params, stored_state)),
        strict=True,
    ):
        before, after = np.asarray(before), np.asarray(after)
        assert after.dtype == before.dtype
        if np.issubdtype(before.dtype, np.floating):  # numpy's float16 is the reference rounding
            np.testing.assert_array_equal(after, before.astype(np.float16).astype(before.dtype))
        else:  # Adam's step count is an integer and is kept as it is
            np.testing.assert_array_equal(after, before)
    nu = np.asarray(stored_state[0].nu["w"])
    assert (nu == 0).mean() > 0.9  # squared gradients of 1e-7 flush to zero in FP16: what pure FP16 Adam faces


def test_adam_on_loss_scaled_gradients_with_scaled_eps_equals_adam_and_rescaling_follows_the_scale():
    from core.charlm import UNIT_SCALING_ADAM, rescale_moments

    rng = np.random.default_rng(1)
    params = {"w": jnp.asarray(rng.standard_normal((6, 3)), jnp.float32)}
    grads = [{"w": jnp.asarray(rng.standard_normal((6, 3)) * 1e-6, jnp.float32)} for _ in range(3)]
    scale = 2048.0

    def run(eps, factor):  # the arms' Adam (papers/unit_scaling/train.py), eps as given
        opt = replace(UNIT_SCALING_ADAM, eps=eps, weight_decay=0.1).optimizer(1e-2)
        state, p = opt.init(params), params
        for g in grads:
            updates, state = opt.update(jax.tree_util.tree_map(lambda x: x * factor, g), state, p)
            p = optax.apply_updates(p, updates)
        return p, state

    plain, plain_state = run(UNIT_SCALING_ADAM.eps, 1.0)
    scaled, scaled_state = run(UNIT_SCALING_ADAM.eps * scale, scale)
    np.testing.assert_allclose(np.asarray(scaled["w"]), np.asarray(plain["w"]), rtol=1e-5)
    # the moments of the scaled gradient are the plain ones times scale (mu) and scale^2 (nu); rescaling by
    # 1/scale brings them back
    back = rescale_moments(scaled_state, 1 / scale)
    np.testing.assert_allclose(np.asarray(back[0].mu["w"]), np.asarray(plain_state[0].mu["w"]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(back[0].nu["w"]), np.asarray(plain_state[0].nu["w"]), rtol=1e-4)
    assert int(back[0].count) == 3


def test_paper_storage_rounds_weights_and_first_moment_stochastically_and_keeps_the_second_moment_fp32():
    from core.charlm import store_moments, to_fp16_stochastic

    rng = np.random.default_rng(2)
    params = {"w": jnp.asarray(rng.standard_normal((64, 32)) * 1e-2, jnp.float32)}
    opt = optax.adamw(1e-3)
    state = opt.init(params)
    _, state = opt.update(jax.tree_util.tree_map(lambda x: x * 1e-3, params), state, params)
    stored = store_moments(state, "paper", jax.random.key(0))
    w = np.asarray(params["w"])
    lo = w.astype(np.float16)  # each value lands on one of its two FP16 neighbours (numpy's float16 the reference)
    hi = np.nextafter(lo, np.where(lo.astype(np.float32) < w, np.float16(np.inf), np.float16(-np.inf)))
    got = np.asarray(to_fp16_stochastic(params, jax.random.key(1))["w"])
    assert np.all((got == lo.astype(np.float32)) | (got == hi.astype(np.float32)))
    assert 0.2 < (got != lo.astype(np.float32)).mean() < 0.8  # not round-to-nearest: both neighbours are drawn
    # unbiased: the mean over many draws of one value approaches it far closer than an FP16 step
    x = {"v": jnp.full((20000,), 1.0 + 2.0**-12, jnp.float32)}  # a quarter of the way from 1 to 1 + 2^-10
    mean = float(np.asarray(to_fp16_stochastic(x, jax.random.key(3))["v"]).mean())
    assert abs(mean - (1.0 + 2.0**-12)) < 2.0**-15
    mu, nu = np.asarray(stored[0].mu["w"]), np.asarray(stored[0].nu["w"])
    assert np.array_equal(mu.astype(np.float16).astype(np.float32), mu)  # the first moment on the FP16 grid
    np.testing.assert_array_equal(nu, np.asarray(state[0].nu["w"]))  # the second moment untouched (FP32)
    assert (nu > 0).all() and (nu.astype(np.float16) == 0).mean() > 0.5  # which FP16 would have flushed


def test_gradient_underflow_is_measured_at_the_loss_scale_it_is_given():
    """A dynamic arm's final underflow is measured at its final scale: FP16's underflow share falls as the loss
    scale rises (the gradients move up past FP16's smallest subnormal), and 1 and 2^15 give different shares."""
    from core.data.shakespeare import load_shakespeare
    from papers.unit_scaling.arms import ARMS
    from papers.unit_scaling.config import Config, ModelConfig
    from papers.unit_scaling.train import build_model, gradient_underflow

    cfg = Config(model=ModelConfig(d_model=16, depth=1, heads=2, seq_len=16), batch_size=4)
    corpus = load_shakespeare()
    arm = ARMS["fp16_regular_dynamic"]
    model = build_model(cfg, corpus, arm)
    variables = model.init(jax.random.key(0), jnp.zeros((1, 16), jnp.int32))
    stacked = jax.tree_util.tree_map(lambda x: x[None], variables)  # one seed, as train_arm stacks them
    shares = [gradient_underflow(cfg, corpus, arm, model, stacked, s) for s in (1.0, 2.0**15)]
    assert shares[0] > shares[1] >= 0.0, shares


def test_the_fp16_moment_wrapper_is_adam_then_its_moments_stored_and_refuses_an_unknown_storage():
    import pytest

    from core.charlm import fp16_moments, store_moments

    rng = np.random.default_rng(3)
    params = {"w": jnp.asarray(rng.standard_normal((5, 4)), jnp.float32)}
    adam = optax.adamw(1e-2)
    for moments in ("fp16", "paper"):
        wrapped, state, plain_state = fp16_moments(adam, moments), adam.init(params), adam.init(params)
        for k in range(3):
            g = {"w": jnp.asarray(rng.standard_normal((5, 4)) * 1e-3, jnp.float32)}
            key = jax.random.key(k)
            got, state = wrapped.update(g, state, params, key=key)
            want, plain_state = adam.update(g, plain_state, params)
            plain_state = store_moments(plain_state, moments, key)
            np.testing.assert_array_equal(np.asarray(got["w"]), np.asarray(want["w"]))
            for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(plain_state), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        mu = np.asarray(state[0].mu["w"])
        np.testing.assert_array_equal(mu, mu.astype(np.float16).astype(np.float32))  # on the FP16 grid
    with pytest.raises(ValueError, match="moments='bf16' is not one of fp16, paper"):
        fp16_moments(adam, "bf16")

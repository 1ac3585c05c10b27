"""u-muP's rules (core.unit_scaling.umup, core.nn.parametrization) pinned to the paper's formulas, against
references written here: numpy forward/backward passes, a brute-force variance bookkeeping of the residual stream,
Monte-Carlo stds of the activations, and Adam trajectories compared under abc-symmetry."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from core.nn import MuP, TransformerLM, UMuP, param_kinds
from core.nn.parametrization import by_name, lr_scales
from core.unit_scaling import umup
from core.unit_scaling.analysis import collect_tensors

# ---------------------------------------------------------------------------------------------- learning rates


@pytest.mark.parametrize(
    "parametrization, kind, shape, kw, expected",
    [
        # u-muP (lr_scale_func_adam): hidden 1/sqrt(fan_in), embedding 1/sqrt(its fan-out d_model), output 1,
        # norm 1, times depth^-1/2 inside the residual stack
        ("umup", "hidden", (64, 256), {}, 1 / 8),
        ("umup", "hidden", (64, 256), {"depth": 4}, 1 / 16),
        ("umup", "input", (65, 256), {}, 1 / 16),
        ("umup", "output", (256, 65), {}, 1.0),
        ("umup", "norm", (256,), {"depth": 9}, 1 / 3),
        ("umup", "bias", (256,), {}, 1.0),
        # muP (Tensor Programs V, Adam): hidden 1/width multiplier, everything else 1; no depth rule here
        ("mup", "hidden", (64, 256), {"width_ratio": 4.0}, 1 / 4),
        ("mup", "hidden", (64, 256), {"width_ratio": 4.0, "depth": 4}, 1 / 4),
        ("mup", "output", (256, 65), {"width_ratio": 4.0}, 1.0),
        ("mup", "input", (65, 256), {"width_ratio": 4.0}, 1.0),
        ("sp", "hidden", (64, 256), {"width_ratio": 4.0, "depth": 4}, 1.0),
    ],
)
def test_adam_lr_scale_is_the_papers_rule(parametrization, kind, shape, kw, expected):
    p = by_name(parametrization, width_ratio=kw.get("width_ratio", 1.0))
    assert p.lr_scale(kind, shape, depth=kw.get("depth")) == pytest.approx(expected, rel=1e-12)


def test_init_stds_and_output_multipliers():
    umup_p, sp, mup = by_name("umup"), by_name("sp"), by_name("mup", width_ratio=4.0)
    assert umup_p.init_std("hidden", (256, 8)) == umup_p.init_std("output", (256, 8)) == 1.0
    assert sp.init_std("hidden", (256, 8)) == mup.init_std("output", (256, 8)) == 1 / 16
    assert mup.init_std("input", (11, 256)) == 1.0
    assert umup_p.abc("output", (256, 11)).multiplier == 1 / 256
    assert mup.readout_multiplier(256) == 1 / 4
    assert sp.readout_multiplier(256) == 1.0


def test_bad_rule_arguments_are_named():
    with pytest.raises(ValueError, match="unknown parametrization 'ntk'"):
        by_name("ntk")
    with pytest.raises(ValueError, match="unknown parameter kind 'conv'"):
        UMuP().lr_scale("conv", (4, 4))
    with pytest.raises(ValueError, match="depth must be >= 1"):
        UMuP().lr_scale("hidden", (4, 4), depth=0)
    with pytest.raises(ValueError, match=r"Mults\.attn_softmax must be a positive finite number"):
        umup.Mults(attn_softmax=0.0)
    with pytest.raises(ValueError, match="width_ratio must be > 0"):
        MuP(0.0)


def _adam_trajectory(multiplier, init_std, lr, grad_fwd, steps=6):
    """Train y = multiplier * x @ W (W = init_std * Z) with Adam (eps 0) on a fixed regression; y after each step."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(32, 64)))
    target = jnp.asarray(rng.normal(size=(32, 16)))
    w = jnp.asarray(rng.normal(size=(64, 16))) * init_std
    opt = optax.adam(lr, eps=0.0)
    state = opt.init(w)
    outs = []
    for _ in range(steps):
        g = jax.grad(lambda w: jnp.sum((grad_fwd(x, w, multiplier) - target) ** 2))(w)
        updates, state = opt.update(g, state)
        w = w + updates
        outs.append(np.asarray(grad_fwd(x, w, multiplier)))
    return np.stack(outs)


def test_umup_hidden_rule_is_mup_under_abc_symmetry():
    """u-muP's hidden weights (multiplier 1/sqrt(w) through the unit-scaled linear op, init 1, Adam lr
    eta/sqrt(w)) train exactly as muP's (multiplier 1, init 1/sqrt(w), Adam lr eta/w): the paper's abc-symmetry
    with theta = 1/sqrt(w)."""
    fan_in, eta = 64, 0.05
    with jax.enable_x64(True):
        umup_y = _adam_trajectory(
            1.0,
            UMuP().init_std("hidden", (fan_in, 16)),
            eta * UMuP().lr_scale("hidden", (fan_in, 16)),
            lambda x, w, m: umup.linear(x, w),
        )
        # muP's 1/width_ratio with base fan-in 1 is 1/fan_in
        mup_y = _adam_trajectory(
            1.0,
            MuP(fan_in).init_std("hidden", (fan_in, 16)),
            eta * MuP(fan_in).lr_scale("hidden", (fan_in, 16)),
            lambda x, w, m: x @ w,
        )
    np.testing.assert_allclose(umup_y, mup_y, rtol=1e-9, atol=1e-9)
    assert np.abs(np.diff(umup_y, axis=0)).max() > 1e-3  # the weights did move


def test_scale_by_tree_multiplies_each_update_by_its_own_scale():
    params = {"a": jnp.ones(3), "b": jnp.ones((2, 2))}
    t = umup.scale_by_tree({"a": 0.5, "b": 4.0})
    updates, _ = t.update({"a": jnp.full(3, 2.0), "b": jnp.full((2, 2), -1.0)}, t.init(params))
    np.testing.assert_array_equal(updates["a"], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(updates["b"], np.full((2, 2), -4.0))


def test_transformer_param_kinds_and_lr_scales():
    """Kinds come from where the parameters are created, not from their names."""
    model = TransformerLM(vocab=11, d_model=32, depth=3, heads=2, seq_len=8, parametrization=UMuP())
    ids = jnp.zeros((1, 8), jnp.int32)
    params = model.init(jax.random.key(0), ids)
    assert set(params) == {"params"}  # init returns the parameters only: the kinds are asked for
    kinds = param_kinds(model, params, ids)
    assert jax.tree_util.tree_structure(jax.tree.map(lambda _: 0, kinds, is_leaf=lambda x: isinstance(x, tuple))) == (
        jax.tree_util.tree_structure(jax.tree.map(lambda _: 0, params["params"]))
    )
    assert kinds["token_embedding"] == kinds["position_embedding"] == ("input", None)
    assert kinds["head"]["kernel"] == ("output", None)
    assert kinds["final_norm"]["scale"] == ("norm", None)
    assert kinds["block_1"]["attention"]["qkv"]["kernel"] == ("hidden", 3)
    assert kinds["block_0"]["norm_mlp"]["scale"] == ("norm", 3)
    scales = lr_scales(params["params"], kinds, model.parametrization)
    assert scales["block_2"]["mlp"]["down"]["kernel"] == pytest.approx((4 * 32) ** -0.5 * 3**-0.5)
    assert scales["token_embedding"] == pytest.approx(32**-0.5)
    assert scales["head"]["kernel"] == 1.0


# ---------------------------------------------------------------------------------------------- residual rule


@pytest.mark.parametrize("layers", [1, 2, 5])
@pytest.mark.parametrize("res, ratio", [(1.0, 1.0), (0.5, 2.0), (2.0, 0.25)])
def test_residual_rule_shares_the_variance_as_appendix_g(layers, res, ratio):
    """Brute-force bookkeeping: push the embedding and each branch (independent, unit variance) through every
    residual add (tau b + x) / sqrt(1 + tau^2) and read each source's share of the final stream's variance."""
    mults = umup.Mults(residual=res, residual_attn_ratio=ratio)
    n = 2 * layers
    coeff = [1.0]  # variance coefficient of each source in the stream: [embedding, branch 0, branch 1, ...]
    for i in range(n):
        tau = umup.residual_tau(i, n, mults)
        coeff = [c / (1 + tau**2) for c in coeff] + [tau**2 / (1 + tau**2)]
    assert sum(coeff) == pytest.approx(1.0)
    emb, attn, mlp = coeff[0], coeff[1::2], coeff[2::2]
    np.testing.assert_allclose(attn, attn[0], rtol=1e-12)
    np.testing.assert_allclose(mlp, mlp[0], rtol=1e-12)
    # the mean of the attention branches' total and the MLP branches' total, relative to the embedding
    assert (sum(attn) + sum(mlp)) / 2 / emb == pytest.approx(res**2)
    assert sum(attn) / sum(mlp) == pytest.approx(ratio**2)
    # and the project's tau (the branch's variance share) is the same weighting
    tau = umup.residual_tau(0, n, mults)
    assert umup.tau_fraction(tau) == pytest.approx(tau**2 / (1 + tau**2))


def test_residual_tau_checks_its_index():
    with pytest.raises(ValueError, match="0 <= index < branches"):
        umup.residual_tau(4, 4)


# ---------------------------------------------------------------------------------------------- ops


def test_log_interpolate_is_geometric():
    assert umup.log_interpolate(0.0, 1e-3, 1e-1) == pytest.approx(1e-3)
    assert umup.log_interpolate(0.5, 1e-3, 1e-1) == pytest.approx(1e-2)
    assert umup.log_interpolate(1.0, 1e-3, 1e-1) == pytest.approx(1e-1)


def test_gelu_scales_match_the_monte_carlo_limits():
    x = np.random.default_rng(0).normal(size=2_000_000)
    # small multiplier: gelu(m x)/m ~ x/2, std 1/2
    small = np.asarray(jax.nn.gelu(jnp.asarray(x * 1e-4), approximate=False)) / 1e-4
    assert umup.gelu_scales(1e-4)[0] == pytest.approx(1 / small.std(), rel=1e-3)
    # large multiplier: ReLU, std sqrt((1 - 1/pi)/2); a unit gradient through it (a step, passing half the time)
    # has rms sqrt(1/2)
    relu = np.maximum(x, 0)
    fwd, bwd = umup.gelu_scales(1e4)
    assert fwd == pytest.approx(1 / relu.std(), rel=2e-3)
    assert bwd == pytest.approx(1 / np.sqrt(np.mean((x > 0).astype(float))), rel=2e-3)


def test_gelu_forward_and_gradient_scales():
    x = jnp.asarray(np.random.default_rng(1).normal(size=(64, 32)), jnp.float32)
    m = 2.0
    fwd, _ = umup.gelu_scales(m)  # to_output_scale: the input gradient gets the output's scale too
    y, vjp = jax.vjp(lambda v: umup.gelu(v, m), x)
    ref = jax.nn.gelu(x * m, approximate=False) / m
    np.testing.assert_allclose(y, fwd * ref, rtol=1e-5)
    g = jnp.ones_like(x)
    true = jax.vjp(lambda v: jax.nn.gelu(v * m, approximate=False) / m, x)[1](g)[0]
    np.testing.assert_allclose(vjp(g)[0], fwd * true, rtol=1e-5)


def test_readout_forward_and_gradients_against_numpy():
    rng = np.random.default_rng(2)
    x, w, g = rng.normal(size=(6, 5, 32)), rng.normal(size=(32, 11)), rng.normal(size=(6, 5, 11))
    y, vjp = jax.vjp(umup.linear_readout, jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32))
    np.testing.assert_allclose(y, x @ w / 32, rtol=1e-5, atol=1e-6)
    dx, dw = vjp(jnp.asarray(g, jnp.float32))
    np.testing.assert_allclose(dx, (g @ w.T) * 11**-0.5, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, np.einsum("bsi,bso->io", x, g) * 30**-0.5, rtol=1e-4, atol=1e-4)


def test_cross_entropy_multiplier_scales_the_value_not_the_gradient_scale():
    rng = np.random.default_rng(3)
    logits, labels, m, v = rng.normal(size=(4, 7, 13)), rng.integers(0, 13, size=(4, 7)), 0.5, 13
    z = m * logits
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    nll = -np.log(np.take_along_axis(p, labels[..., None], -1))[..., 0]
    value, grad = jax.value_and_grad(umup.cross_entropy)(jnp.asarray(logits, jnp.float32), jnp.asarray(labels), m)
    assert float(value) == pytest.approx(nll.mean(), rel=1e-5)
    onehot = np.eye(v)[labels]
    np.testing.assert_allclose(grad, (p - onehot) * v / np.sqrt(v - 1), rtol=1e-4, atol=1e-5)


def test_attention_scale_limits_and_formula():
    seq, d = 256, 16
    assert umup.attention_scale(seq, d, 1e-6) == pytest.approx(math.sqrt(seq / math.log(seq)), rel=1e-6)
    assert umup.attention_scale(seq, d, 1e-6, causal=False) == pytest.approx(math.sqrt(seq), rel=1e-6)
    assert umup.attention_scale(seq, d, 1e6) == pytest.approx(1.0, rel=1e-6)
    alpha = 1 / (1 + 4 * d)  # mult 1: sigmoid(log(1 / (4 d)))
    lower = math.sqrt(math.log(seq) / seq)
    assert umup.attention_scale(seq, d, 1.0) == pytest.approx(1 / (lower ** (1 - alpha)), rel=1e-9)


def test_attention_uses_mups_temperature():
    rng = np.random.default_rng(4)
    q, k, v = (jnp.asarray(rng.normal(size=(2, 6, 8)), jnp.float32) for _ in range(3))
    out = umup.causal_attention(q, k, v, mult=3.0)
    s = np.einsum("bqd,bkd->bqk", q, k) * 3.0 / 8
    s = np.where(np.tril(np.ones((6, 6), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, umup.attention_scale(6, 8, 3.0) * (p @ np.asarray(v)), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- the model


def test_mup_at_its_base_width_is_sp():
    ids = jnp.asarray(np.random.default_rng(5).integers(0, 11, size=(2, 8)))
    losses = []
    for scaling in ("sp", "mup"):
        m = TransformerLM(vocab=11, d_model=16, depth=2, heads=2, seq_len=8, parametrization=by_name(scaling))
        p = m.init(jax.random.key(0), ids)
        losses.append(jax.value_and_grad(lambda p, m=m: m.apply(p, ids, ids, method=TransformerLM.loss))(p))
    assert float(losses[0][0]) == float(losses[1][0])
    for a, b in zip(jax.tree_util.tree_leaves(losses[0][1]), jax.tree_util.tree_leaves(losses[1][1]), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # ~37 s (2026-11-28): four widths; ops equal to the unit-scaling library: make test
def test_umup_model_is_unit_scaled_at_initialisation_and_its_scales_do_not_move_with_width():
    """u-muP at initialisation (i.i.d. tokens, the rules' assumption): activations have std within a factor 2 of 1;
    activation gradients too, down to the 1/2 that the to_output_scale constraint gives the inputs of layers whose
    fan-out is a few times their fan-in (sqrt(fan_in / fan_out) is the true gradient's scale); the logits are the
    exception by design, std fan_in^-1/2 (the readout's muP multiplier 1/fan_in). And none of it moves with width
    (muP's point): every std at width 128 is within 25% of width 32's, the logits' halving as sqrt(32/128)."""
    rng = np.random.default_rng(6)
    ids = jnp.asarray(rng.integers(0, 64, size=(8, 32)))
    stds = {}
    for width in (32, 128):
        model = TransformerLM(vocab=64, d_model=width, depth=2, heads=2, seq_len=32, parametrization=UMuP())
        params = model.init(jax.random.key(0), ids)
        tensors = collect_tensors(model, params, lambda m: m.loss(ids, ids))
        stds[width] = {key: float(jnp.std(jnp.asarray(v, jnp.float32))) for key, v in tensors.items()}
    for width, table in stds.items():
        logits = table[("head", "activation")]
        assert logits * math.sqrt(width) == pytest.approx(1.0, rel=0.25)
        body = {k: v for k, v in table.items() if k[0] not in ("head", "model")}
        acts = {k: v for k, v in body.items() if k[1] == "activation"}
        grads = {k: v for k, v in body.items() if k[1] == "activation grad"}
        assert len(acts) > 10 and len(grads) > 10
        assert not {k: v for k, v in acts.items() if not 0.5 <= v <= 2.0}
        assert not {k: v for k, v in grads.items() if not 0.4 <= v <= 2.0}
    moved = {
        k: stds[128][k] / stds[32][k]
        for k in stds[32]
        if k[1].startswith("activation")
        and k[0] not in ("head", "model")
        and not 0.8 <= stds[128][k] / stds[32][k] <= 1.25
    }
    assert not moved, moved

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.nn import FP32, Formats, TransformerLM, UnitScaled
from core.nn.parametrization import by_name


def model(scaling="regular", norm="pre", fwd=None, bwd=None, head="low", **kw):
    return TransformerLM(
        vocab=32,
        d_model=16,
        depth=2,
        heads=2,
        seq_len=12,
        norm=norm,
        parametrization=by_name(scaling),
        formats=Formats(fwd=fwd, bwd=bwd, head=head),
        **kw,
    )


IDS = jnp.asarray(np.random.default_rng(0).integers(0, 32, (3, 12)))


@pytest.mark.parametrize("scaling", ["regular", "unit"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_logits_are_causal(scaling, norm):
    m = model(scaling, norm)
    params = m.init(jax.random.key(0), IDS)
    logits = m.apply(params, IDS)
    assert logits.shape == (3, 12, 32)
    changed = IDS.at[:, 7:].set((IDS[:, 7:] + 1) % 32)  # alter the future
    np.testing.assert_allclose(np.asarray(m.apply(params, changed)[:, :7]), np.asarray(logits[:, :7]), atol=1e-5)
    assert not np.allclose(np.asarray(m.apply(params, changed)[:, 7:]), np.asarray(logits[:, 7:]))


def test_unit_and_regular_twins_share_parameters_but_not_initialisation():
    regular, unit = model("regular"), model("unit")
    p_reg, p_unit = regular.init(jax.random.key(0), IDS), unit.init(jax.random.key(0), IDS)
    assert jax.tree_util.tree_structure(p_reg) == jax.tree_util.tree_structure(p_unit)
    w_reg = p_reg["params"]["block_0"]["mlp"]["up"]["kernel"]
    w_unit = p_unit["params"]["block_0"]["mlp"]["up"]["kernel"]
    assert float(jnp.std(w_reg)) == pytest.approx(0.02, rel=0.2)
    assert float(jnp.std(w_unit)) == pytest.approx(1.0, rel=0.2)


@pytest.mark.slow  # ~19 s (2026-11-29): make test-all; make test checks the casts' placement with
# test_matmul_cast_scope_keeps_outputs_in_fp32_but_casts_operands_and_gradients, the head's with
# test_an_fp32_head_keeps_logits_and_their_gradient_out_of_the_casts (scopes all and matmul), and E5M2 gradients with
# test_fp8_regular_gradients_underflow_where_unit_scaled_ones_do_not
def test_casts_put_logits_on_the_forward_grid_and_gradients_on_the_backward_grid():
    m = model("unit", fwd="e4m3", bwd="e5m2")
    params = m.init(jax.random.key(0), IDS)
    logits = np.asarray(m.apply(params, IDS))
    np.testing.assert_array_equal(logits, logits.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    # weights pass a cast point on their way in, so their gradients (already unit-scaled) leave on the E5M2 grid
    g = jax.grad(lambda p: m.apply(p, IDS[:, :-1], IDS[:, 1:], method=TransformerLM.loss))(params)
    for grad in jax.tree_util.tree_leaves(g):
        grad = np.asarray(grad)
        np.testing.assert_array_equal(grad, grad.astype(ml_dtypes.float8_e5m2).astype(np.float32))


def test_loss_is_mean_cross_entropy_in_both_models():
    for scaling in ("regular", "unit"):
        m = model(scaling)
        params = m.init(jax.random.key(1), IDS)
        logits = m.apply(params, IDS[:, :-1])
        ref = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), IDS[:, 1:, None], axis=-1))
        loss = m.apply(params, IDS[:, :-1], IDS[:, 1:], method=TransformerLM.loss)
        assert float(loss) == pytest.approx(float(ref), rel=1e-5)


def test_fp8_regular_gradients_underflow_where_unit_scaled_ones_do_not():
    grads_zero = {}
    for scaling in ("regular", "unit"):
        m = TransformerLM(
            vocab=64,
            d_model=32,
            depth=2,
            heads=2,
            seq_len=32,
            parametrization=by_name(scaling),
            formats=Formats(fwd="e4m3", bwd="e5m2"),
        )
        ids = jnp.asarray(np.random.default_rng(1).integers(0, 64, (8, 33)))
        params = m.init(jax.random.key(0), ids[:, :-1])
        g = jax.grad(lambda p, m=m, ids=ids: m.apply(p, ids[:, :-1], ids[:, 1:], method=TransformerLM.loss))(params)
        w = g["params"]["block_0"]["attention"]["qkv"]["kernel"]
        grads_zero[scaling] = float(jnp.mean(w == 0))
    assert grads_zero["regular"] > 0.5 and grads_zero["unit"] < 0.05


def test_bad_model_arguments():
    with pytest.raises(ValueError, match="unknown parametrization 'ntk': choose one of regular, unit, sp, mup, umup"):
        by_name("ntk")
    with pytest.raises(ValueError, match="unknown number format"):
        Formats(fwd="fp9")
    with pytest.raises(ValueError, match="not divisible by heads"):
        TransformerLM(vocab=8, d_model=10, depth=1, heads=3, seq_len=4).init(jax.random.key(0), IDS[:, :4])
    with pytest.raises(ValueError, match="exceeds seq_len"):
        m = model()
        m.init(jax.random.key(0), jnp.zeros((1, 13), jnp.int32))


def test_matmul_cast_scope_keeps_outputs_in_fp32_but_casts_operands_and_gradients():
    m = TransformerLM(
        vocab=32,
        d_model=16,
        depth=1,
        heads=2,
        seq_len=12,
        parametrization=UnitScaled(),
        formats=Formats(fwd="e4m3", bwd="e5m2", scope="matmul", head="low"),
    )
    params = m.init(jax.random.key(0), IDS)
    logits = np.asarray(m.apply(params, IDS))
    on_grid = logits == logits.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert on_grid.mean() < 0.5  # matmul outputs keep their FP32 accumulation

    # the weight gradient is an FP32 accumulation (of E5M2 output gradients times E4M3 activations), not itself
    # cast to E5M2; and it differs from the gradient without the E5M2 cast of the output gradient
    def head_grad(formats):
        model = m.clone(formats=formats)
        g = jax.grad(lambda p: model.apply(p, IDS[:, :-1], IDS[:, 1:], method=TransformerLM.loss))(params)
        return np.asarray(g["params"]["head"]["kernel"])

    head = head_grad(m.formats)
    assert (head != head.astype(ml_dtypes.float8_e5m2).astype(np.float32)).any()
    no_bwd_cast = head_grad(Formats(fwd="e4m3", bwd=None, scope="matmul", head="low"))
    assert not np.array_equal(head, no_bwd_cast)
    with pytest.raises(ValueError, match="scope must be one of all, matmul"):
        Formats(scope="some")


def test_unit_attention_is_scaled_causal_attention_with_scaled_value_gradients():
    from core.nn.parametrization.unit import causal_mixing_scales

    q, k, v = (jax.random.normal(jax.random.key(i), (2, 8, 4)) for i in range(3))
    unit = UnitScaled(constraint=None)
    fwd, bwd = causal_mixing_scales(8)
    mask = np.tril(np.ones((8, 8), bool))
    probs = jax.nn.softmax(jnp.einsum("bqd,bkd->bqk", q, k) / 2.0, axis=-1, where=mask)
    ref = fwd * jnp.einsum("bqk,bkd->bqd", probs, v)
    out, vjp = jax.vjp(lambda q, k, v: unit.causal_attention(q, k, v, FP32), q, k, v)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    dy = jax.random.normal(jax.random.key(9), out.shape)
    _, _, dv = vjp(dy)
    np.testing.assert_allclose(
        np.asarray(dv), bwd * np.asarray(jnp.einsum("bqk,bqd->bkd", probs, dy)), rtol=1e-5, atol=1e-6
    )
    # with uniform attention (q = 0) and unit values, the output has unit variance, as the scales intend
    big_v = jax.random.normal(jax.random.key(4), (64, 128, 16))
    uniform = unit.causal_attention(jnp.zeros((64, 128, 16)), jnp.zeros((64, 128, 16)), big_v, FP32)
    assert float(jnp.std(uniform)) == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("scope", ["all", "matmul"])
def test_an_fp32_head_keeps_logits_and_their_gradient_out_of_the_casts(scope):
    """head="fp32" (the FP8 recipe): the head's matmul, the logits and the logits' gradient are FP32, so
    the head's weight gradient equals that of the FP32 head on the same (cast) features; the body stays cast."""
    formats = Formats(fwd="e4m3", bwd="e5m2", scope=scope)
    m = TransformerLM(vocab=32, d_model=16, depth=1, heads=2, seq_len=12, parametrization=UnitScaled(), formats=formats)
    params = m.init(jax.random.key(0), IDS)
    feats = []  # the head's input (the final norm's output), recorded by an interceptor

    def grab(next_fun, args, kwargs, context):
        if context.module.name == "head":
            feats.append(args[0])
        return next_fun(*args, **kwargs)

    ids, labels = IDS[:, :-1], IDS[:, 1:]
    with nn.intercept_methods(grab):
        logits = np.asarray(m.apply(params, ids))
    h = np.asarray(feats[0], np.float64)
    assert (logits != logits.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)).mean() > 0.5  # not on the grid
    # the logits' gradient in FP32: a numpy cross-entropy gradient (unit scaling's sum and vocab/sqrt(vocab-1))
    lg = logits.astype(np.float64)
    p = np.exp(lg - lg.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dlogits = (p - np.eye(32)[np.asarray(labels)]) * 32 / np.sqrt(31)
    g = jax.grad(lambda q: m.apply(q, ids, labels, method=TransformerLM.loss))(params)
    head_grad = np.asarray(g["params"]["head"]["kernel"], np.float64)
    ref = h.reshape(-1, 16).T @ dlogits.reshape(-1, 32)
    cos = np.sum(head_grad * ref) / np.linalg.norm(head_grad) / np.linalg.norm(ref)
    assert cos > 0.99999  # an E5M2-cast logits gradient would give ~0.99 (checked with head="low")
    low = m.clone(formats=Formats(fwd="e4m3", bwd="e5m2", scope=scope, head="low"))
    g_low = jax.grad(lambda q: low.apply(q, ids, labels, method=TransformerLM.loss))(params)
    low_grad = np.asarray(g_low["params"]["head"]["kernel"], np.float64)
    assert np.sum(low_grad * ref) / np.linalg.norm(low_grad) / np.linalg.norm(ref) < cos
    with pytest.raises(ValueError, match="head must be one of fp32, low"):
        Formats(head="fp16")


def test_unit_scaled_gradients_point_along_the_true_gradient_of_the_same_forward():
    """Every parameter's gradient under the unit-scaling rules is the true gradient of the model's own forward
    function times a positive constant (core.unit_scaling.plain_autodiff gives the true one): cosine 1."""
    import core.unit_scaling as us

    m = TransformerLM(vocab=32, d_model=32, depth=2, heads=4, seq_len=12, parametrization=UnitScaled())
    params = m.init(jax.random.key(1), IDS)

    def loss(q):
        return m.apply(q, IDS[:, :-1], IDS[:, 1:], method=TransformerLM.loss)

    scaled = jax.grad(loss)(params)
    with us.plain_autodiff():
        true = jax.grad(loss)(params)
        assert float(loss(params)) == pytest.approx(float(jax.jit(loss)(params)), rel=1e-6)  # same forward
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(scaled), jax.tree_util.tree_leaves(true), strict=True):
        a, b = np.ravel(np.asarray(a, np.float64)), np.ravel(np.asarray(b, np.float64))
        cos = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
        assert cos > 0.9999, (jax.tree_util.keystr(path), cos)


# ------------------------------------------------------------------ rotary position embedding
def test_rotary_matches_the_complex_rotation_and_depends_on_offsets_only():
    from core.nn.transformer import rotary

    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 16)).astype(np.float32)
    half = 8
    theta = 10000.0 ** (-np.arange(half) / half)

    def by_complex(x, p):  # channel pair (i, i + half) as the complex number x_i + j x_{i+half}, times e^{j p theta_i}
        z = (x[..., :half] + 1j * x[..., half:]) * np.exp(1j * p * theta)
        return np.concatenate([z.real, z.imag], -1)

    for p in (0, 3, 17):
        np.testing.assert_allclose(rotary(jnp.asarray(q), jnp.asarray([p]))[0], by_complex(q, p), atol=1e-5)

    # the score of a query at position a and a key at b depends on a - b only; norms are kept
    def score(a, b):
        return float(jnp.sum(rotary(jnp.asarray(q), jnp.asarray([a])) * rotary(jnp.asarray(k), jnp.asarray([b]))))

    assert score(7, 2) == pytest.approx(score(105, 100), rel=1e-4)
    assert score(7, 2) != pytest.approx(score(7, 3), rel=1e-3)
    np.testing.assert_allclose(np.linalg.norm(rotary(jnp.asarray(q), jnp.asarray([9]))), np.linalg.norm(q), rtol=1e-5)


def test_rope_model_has_no_position_table_and_rejects_unknown_positions():
    model = TransformerLM(vocab=10, d_model=16, depth=1, heads=2, seq_len=8, position="rope")
    params = model.init(jax.random.key(0), jnp.zeros((1, 8), jnp.int32))
    assert "position_embedding" not in params["params"]
    with pytest.raises(ValueError, match="position must be one of"):
        TransformerLM(vocab=10, d_model=16, depth=1, heads=2, seq_len=8, position="alibi").init(
            jax.random.key(0), jnp.zeros((1, 8), jnp.int32)
        )

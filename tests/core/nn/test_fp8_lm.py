"""The transformer LM with FP8 linear layers (Formats(fp8=policy)): same parameters as the FP32 model, every block's
linear layer (not the head) carries FP8 state and a probe, the loss and gradients stay close to FP32's, the probes'
gradients are the step's statistics (gradients need the largest biases), and the delayed and cscale policies take
their biases from that state."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn import Formats, UnitScaled
from core.nn.fp8 import calibrate_fp8, fp8_statistics, split_fp8, update_fp8
from core.nn.transformer import TransformerLM


def _model(**formats):
    return TransformerLM(vocab=40, d_model=32, depth=2, heads=2, seq_len=16, formats=Formats(**formats))


@pytest.fixture(scope="module")
def batch():
    ids = jax.random.randint(jax.random.PRNGKey(1), (4, 16), 0, 40)
    return ids, jnp.roll(ids, -1, -1)


def _loss_and_grads(model, params, meta, probes, batch):
    def f(params, probes):
        variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
        return model.apply(variables, *batch, method=TransformerLM.loss)

    return jax.value_and_grad(f, argnums=(0, 1))(params, probes)


def test_fp8_lm_tracks_fp32_and_reports_its_scales(batch):
    fp8 = _model(fp8="amax")
    params, meta, probes = split_fp8(fp8.init(jax.random.PRNGKey(0), batch[0]))
    stats_layers = set(fp8_statistics(probes))
    assert stats_layers == {
        f"block_{i}/{part}" for i in range(2) for part in ("attention/qkv", "attention/out", "mlp/up", "mlp/down")
    }  # the head stays out of FP8
    reference = _model()
    ref_loss, ref_grads = jax.value_and_grad(
        lambda p: reference.apply({"params": p}, *batch, method=TransformerLM.loss)
    )(params)
    loss, (grads, stats) = _loss_and_grads(fp8, params, meta, probes, batch)
    assert abs(float(loss) / float(ref_loss) - 1) < 0.01
    for g, r in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
        # E4M3/E5M2 keep 3 and 2 mantissa bits: a few per cent per element, much less on the whole tensor
        assert np.linalg.norm(np.asarray(g) - np.asarray(r)) <= 0.15 * np.linalg.norm(np.asarray(r)) + 1e-12
    per_layer = fp8_statistics(stats)
    biases = np.array([np.asarray(v[:, 1]) for v in per_layer.values()])  # [layers, (x, w, g)]
    assert np.all(biases[:, 2] > biases[:, 1]) and np.all(biases[:, 2] > biases[:, 0])  # gradients: largest
    amaxes = np.array([np.asarray(v[:, 0]) for v in per_layer.values()])
    assert np.all(amaxes > 0) and np.all(np.isfinite(amaxes))


def test_delayed_and_cscale_take_their_biases_from_the_state(batch):
    model = _model(fp8="delayed")
    params, meta0, probes = split_fp8(model.init(jax.random.PRNGKey(0), batch[0]))
    _, (_, stats) = _loss_and_grads(model, params, meta0, probes, batch)
    assert all(np.all(np.asarray(v[:, 1]) == 0) for v in fp8_statistics(stats).values())  # initial state: bias 0
    meta = update_fp8(meta0, stats, "delayed")
    _, (_, stats_next) = _loss_and_grads(model, params, meta, probes, batch)
    # same parameters and batch, a one-entry history: the biases used now are this very step's amax biases
    _, (_, amax_stats) = _loss_and_grads(_model(fp8="amax"), params, meta0, probes, batch)
    used, expected = fp8_statistics(stats_next), fp8_statistics(amax_stats)
    assert len(used) == 8 and set(used) == set(expected)  # every block's four linear layers: the loop below runs
    assert any(np.any(np.asarray(v[:, 1]) != 0) for v in expected.values())  # else bias 0 would pass unnoticed
    for name in used:
        np.testing.assert_array_equal(np.asarray(used[name][:, 1]), np.asarray(expected[name][:, 1]))
    # cscale calibrates once from a step's statistics: from one step, the same biases as the delayed history
    fixed = jax.tree.leaves(calibrate_fp8(meta0, stats), is_leaf=lambda x: hasattr(x, "bias"))
    delayed = jax.tree.leaves(meta, is_leaf=lambda x: hasattr(x, "bias"))
    assert len(fixed) == 8
    for a, b in zip(fixed, delayed, strict=True):
        np.testing.assert_array_equal(np.asarray(a.bias), np.asarray(b.bias))


def test_fp8_settings_are_checked():
    with pytest.raises(ValueError, match="unknown FP8 scaling policy 'fp4'"):
        Formats(fp8="fp4")
    with pytest.raises(ValueError, match="combines with the standard parametrization only"):
        _model(fp8="amax").clone(parametrization=UnitScaled()).init(jax.random.key(0), jnp.zeros((1, 4), jnp.int32))
    with pytest.raises(ValueError, match="combines with no fwd/bwd casts only"):
        Formats(fp8="amax", fwd="e4m3")

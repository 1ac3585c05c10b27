"""GPS++ model: the 44M preset's parameter counts against the paper's Table 1, gathers/scatters against index ops,
molecules in a pack never see each other, 3D enters only through distances, and the ablations remove what they
say they remove."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from papers.gps.batching import MODEL_KEYS, PackLimits, assemble, plan
from papers.gps.config import PRESET_NAMES
from papers.gps.model import (
    PRESETS,
    GPSConfig,
    GPSPlusPlus,
    graph_operators,
    parameter_breakdown,
    parameter_shapes,
    preset,
)
from papers.gps.published import PAPER_PARAMETERS

LIMITS = PackLimits(nodes=24, edges=48, graphs=4)
TINY = dict(layers=2, node=16, edge=8, globals=8, heads=4, ffn=32, encoder=8, embedding=8, kernels=8)

# GPS++ 44M parameters per part: papers/gps/REFERENCES.md [parameters] (Table 1 of arXiv 2212.02229), typed here
# independently of the report's copy
TABLE_1 = {
    "node": 22.1e6, "edge": 6.84e6, "global": 2.11e6, "attention": 4.22e6, "ffn": 8.42e6, "encoder": 0.63e6,
    "total": 44.3e6,
}  # fmt: skip


def test_44m_preset_matches_table_1():
    assert PAPER_PARAMETERS == TABLE_1  # what the report prints and decides the claim on
    counts = parameter_breakdown("gps++_44m")
    assert counts["total"] == pytest.approx(TABLE_1["total"], rel=0.01)
    for part, paper in TABLE_1.items():
        assert counts[part] == pytest.approx(paper, rel=0.05), part
    assert counts["total"] == sum(v for k, v in counts.items() if k != "total")
    # the smaller presets of the paper: 8 layers ~22M, 4 layers ~11M
    assert parameter_breakdown("gps++_22m")["total"] == pytest.approx(22e6, rel=0.1)
    assert parameter_breakdown("gps++_11m")["total"] == pytest.approx(11e6, rel=0.1)


def test_the_config_names_the_model_presets():
    """The config validates gps.model.preset against PRESET_NAMES without loading flax: the same names, in order."""
    assert tuple(PRESETS) == PRESET_NAMES


def _batch(graphs, packs, limits=LIMITS):
    a = assemble(graphs, packs, limits)
    return {k: jnp.asarray(a[k]) for k in MODEL_KEYS}, a


_JITTED = {}


def _predict(cfg, params, batch):
    """The model's prediction, compiled once per config (op-by-op dispatch would compile every op separately)."""
    if cfg not in _JITTED:
        _JITTED[cfg] = jax.jit(lambda p, b: GPSPlusPlus(cfg).apply({"params": p}, b, deterministic=True)["target"])
    return _JITTED[cfg](params, batch)


def _init(cfg):
    """Random parameters of the model's shapes (parameter_shapes: flax's initialisers, run op by op, would compile
    every op of the model; these tests hold for any weights)."""
    rng = np.random.default_rng(0)
    return jax.tree.map(lambda s: jnp.asarray(rng.normal(0.0, 0.3, s.shape), s.dtype), parameter_shapes(cfg))


def test_one_hot_gathers_and_scatters_equal_index_ops(molecules):
    batch, a = _batch(molecules, plan(molecules, np.arange(len(molecules)), LIMITS, None))
    ops = graph_operators(batch)
    x = np.random.default_rng(0).normal(size=(*a["node_mask"].shape, 5)).astype(np.float32)
    for p in range(len(x)):
        em = a["edge_mask"][p]
        np.testing.assert_allclose(np.asarray(ops["S"][p] @ x[p])[em], x[p][a["senders"][p][em]], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(ops["R"][p] @ x[p])[em], x[p][a["receivers"][p][em]], rtol=1e-6)
        scattered = np.zeros_like(x[p])
        np.add.at(scattered, a["receivers"][p][em], x[p][a["senders"][p][em]])
        np.testing.assert_allclose(np.asarray(ops["R"][p].T @ (ops["S"][p] @ x[p])), scattered, rtol=1e-5, atol=1e-6)
        pooled = np.zeros((LIMITS.graphs, 5), np.float32)
        nm = a["node_mask"][p]
        np.add.at(pooled, a["node_graph"][p][nm], x[p][nm])
        np.testing.assert_allclose(np.asarray(ops["P"][p].T @ x[p]), pooled, rtol=1e-5, atol=1e-6)
        same = a["node_graph"][p][:, None] == a["node_graph"][p][None, :]
        np.testing.assert_array_equal(np.asarray(ops["attention_mask"][p]), same & nm[:, None] & nm[None, :])


@pytest.mark.parametrize("arm", [{}, {"attention": False}, {"use_3d": False}])
def test_a_molecule_predicts_the_same_alone_or_packed_with_others(molecules, arm):
    cfg = GPSConfig(**TINY, **arm)
    packed, _ = _batch(molecules, [[3, 5, 8, 1]])
    params = _init(cfg)
    together = np.asarray(_predict(cfg, params, packed))[0]
    for slot, i in enumerate([3, 5, 8, 1]):
        alone, _ = _batch(molecules, [[i]])
        np.testing.assert_allclose(np.asarray(_predict(cfg, params, alone))[0, 0], together[slot], rtol=2e-5, atol=2e-5)
    shuffled, _ = _batch(molecules, [[8, 1, 3, 5]])
    np.testing.assert_allclose(np.asarray(_predict(cfg, params, shuffled))[0], together[[2, 3, 0, 1]], rtol=2e-5)


def test_3d_enters_only_through_distances(molecules):
    cfg = GPSConfig(**TINY)
    batch, _ = _batch(molecules, [[2, 4, 9]])
    params = _init(cfg)
    ref = np.asarray(_predict(cfg, params, batch))
    q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))
    moved = dict(batch, positions=batch["positions"] @ jnp.asarray(q.T, jnp.float32) + jnp.array([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(_predict(cfg, params, moved)), ref, rtol=1e-4, atol=1e-4)
    stretched = dict(batch, positions=batch["positions"] * 1.3)
    assert not np.allclose(np.asarray(_predict(cfg, params, stretched))[0, :3], ref[0, :3], atol=1e-4)
    masked = dict(stretched, keep_3d=jnp.zeros_like(batch["keep_3d"]))  # 3D masked: geometry no longer matters
    np.testing.assert_allclose(
        np.asarray(_predict(cfg, params, masked)),
        np.asarray(_predict(cfg, params, dict(batch, keep_3d=jnp.zeros_like(batch["keep_3d"])))),
        rtol=1e-6,
    )


def test_ablations_remove_their_parameters_and_inputs(molecules):
    batch, _ = _batch(molecules, [[2, 4, 9]])
    no_3d = GPSConfig(**TINY, use_3d=False)
    params = _init(no_3d)
    assert "bias_3d" not in params["encoder"] and "distance_kernels" not in params["encoder"]
    stretched = dict(batch, positions=batch["positions"] * 3.0)
    np.testing.assert_array_equal(_predict(no_3d, params, stretched), _predict(no_3d, params, batch))
    mpnn = GPSConfig(**TINY, attention=False)
    assert not any("attention" in k for k in _init(mpnn)["layer_0"])
    counts = parameter_breakdown(mpnn)
    assert counts["attention"] == 0 and counts["node"] > 0


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match="node=30 must be divisible by heads=4"):
        GPSConfig(node=30, heads=4)
    with pytest.raises(ValueError, match=r"drop_path=1\.5"):
        GPSConfig(drop_path=1.5)
    with pytest.raises(ValueError, match=r"unknown GPS\+\+ preset .huge."):
        preset("huge")

"""GraphSet: graphs in and out unchanged (from_graphs, graph, take), offsets, and .npz round trips."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from papers.gps.features import FEATURE_VERSION, MoleculeGraph, featurise
from papers.gps.graphs import GraphSet
from tests.papers.gps.molecule_checks import SMILES, assert_graphs_equal, assert_sets_equal


@pytest.fixture(scope="module")
def graphs(qm9, sample) -> list[MoleculeGraph]:
    out = [featurise(s) for s in SMILES]
    out += [featurise(qm9.smiles[i], qm9.positions[i], qm9.elements[i]) for i in sample[:6]]
    i = sample[6]
    out.append(featurise(qm9.smiles[i], qm9.positions[i] * 2, qm9.elements[i]))  # a geometry_mismatch
    return out


def _set(graphs: list[MoleculeGraph]) -> GraphSet:
    g = len(graphs)
    return GraphSet.from_graphs(graphs, np.arange(g) * 0.5, np.arange(g) + 100, [f"m{k}" for k in range(g)], {"x": 2})


def test_graphset_round_trip(graphs):
    gs = _set(graphs)
    assert len(gs) == len(graphs)
    np.testing.assert_array_equal(gs.num_nodes, [g.num_nodes for g in graphs])
    np.testing.assert_array_equal(gs.num_edges, [g.num_edges for g in graphs])
    np.testing.assert_array_equal(np.diff(gs.spd_offsets), gs.num_nodes**2)
    assert gs.has_3d.tolist() == [g.positions is not None for g in graphs] and gs.has_3d.sum() >= 5
    assert gs.geometry_issue[-1] == "geometry_mismatch"
    for k, g in enumerate(graphs):
        assert_graphs_equal(gs.graph(k), g)
    assert_graphs_equal(gs.graph(-1), graphs[-1])
    with pytest.raises(IndexError):
        gs.graph(len(graphs))
    assert gs.target.dtype == np.float32 and gs.ids.dtype == np.int64 and gs.skipped == {"x": 2}
    assert np.all(gs.positions[gs.node_offsets[0] : gs.node_offsets[1]] == 0)  # methane: no positions, zeros
    with pytest.raises(ValueError, match="targets"):
        GraphSet.from_graphs(graphs, [0.0], np.arange(len(graphs)), ["x"] * len(graphs))


def test_graphset_take(graphs):
    gs = _set(graphs)
    picks = [3, 0, 3, -1, len(graphs) - 2]
    sub = gs.take(picks)
    assert len(sub) == len(picks)
    for k, p in enumerate(picks):
        assert_graphs_equal(sub.graph(k), graphs[p])
        assert sub.smiles[k] == gs.smiles[p] and sub.ids[k] == gs.ids[p] and sub.target[k] == gs.target[p]
    np.testing.assert_array_equal(sub.node_offsets, np.concatenate([[0], np.cumsum(gs.num_nodes[picks])]))
    mask = np.arange(len(gs)) % 3 == 0
    assert_sets_equal(gs.take(mask), gs.take(np.flatnonzero(mask)))
    assert_sets_equal(gs.take(np.arange(len(gs))), gs)
    assert len(gs.take([])) == 0 and gs.take([]).atoms.shape == (0, 9)
    with pytest.raises(IndexError):
        gs.take([len(gs)])
    with pytest.raises(ValueError, match="indices"):
        gs.take([0.5])


def test_graphset_save_load(graphs, tmp_path):
    gs = _set(graphs)
    path = gs.save(tmp_path / "set.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set.npz"]  # no temporary file left behind
    with zipfile.ZipFile(path) as z:
        assert all(info.compress_type == zipfile.ZIP_STORED for info in z.infolist())
    back = GraphSet.load(path)
    assert_sets_equal(back, gs)
    for k, g in enumerate(graphs):
        assert_graphs_equal(back.graph(k), g)
    empty = GraphSet.from_graphs([], [], [], [])
    assert_sets_equal(GraphSet.load(empty.save(tmp_path / "empty.npz")), empty)


def test_graphset_version_mismatch(graphs, tmp_path):
    path = _set(graphs[:3]).save(tmp_path / "set.npz")
    with np.load(path) as z:
        arrays = dict(z)
    assert int(arrays["feature_version"]) == FEATURE_VERSION
    arrays["feature_version"] = np.int64(FEATURE_VERSION + 1)
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match=f"FEATURE_VERSION {FEATURE_VERSION + 1}"):
        GraphSet.load(tmp_path / "old.npz")
    del arrays["meta"]
    np.savez(tmp_path / "broken.npz", **arrays)
    with pytest.raises(ValueError, match="not a GraphSet"):
        GraphSet.load(tmp_path / "broken.npz")

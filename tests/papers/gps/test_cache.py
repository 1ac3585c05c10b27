"""Featurising many molecules (failures counted, not fatal) and featurised QM9 kept in the memo store (core.memo)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from core.data.molecules import HARTREE_EV, QM9
from papers.gps import cache as C
from papers.gps.cache import featurise_many, featurise_qm9
from papers.gps.features import featurise
from tests.papers.gps.molecule_checks import assert_graphs_equal, assert_sets_equal


def test_featurise_many_counts_failures():
    smiles = ["CCO", "not_smiles", "[H][H]", "c1ccccc1", "C1CC"]
    gs = featurise_many(smiles, target=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert gs.smiles == ["CCO", "c1ccccc1"] and gs.ids.tolist() == [0, 3] and gs.target.tolist() == [1.0, 4.0]
    assert gs.skipped == {"invalid_smiles": 2, "no_heavy_atoms": 1}
    assert_graphs_equal(gs.graph(1), featurise("c1ccccc1"))
    with pytest.raises(ValueError, match="target"):
        featurise_many(smiles, target=[1.0])


def test_featurise_qm9_and_cache(qm9, sample, tmp_path, monkeypatch):
    idx = sample[:40][::-1]  # any order
    gs = featurise_qm9(idx, tmp_path)
    files = list(tmp_path.glob("features/*/graphs.npz"))
    assert len(files) == 1 and re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]{12}", files[0].parent.name)
    assert len(gs) + sum(gs.skipped.values()) == len(idx)
    assert gs.skipped == {} and gs.has_3d.sum() >= len(idx) - 1
    np.testing.assert_array_equal(gs.ids, qm9.index[idx])
    np.testing.assert_array_equal(gs.target, (qm9.gap[idx] * HARTREE_EV).astype(np.float32))
    assert gs.smiles == [qm9.smiles[i] for i in idx]
    k = 5
    assert_graphs_equal(gs.graph(k), featurise(qm9.smiles[idx[k]], qm9.positions[idx[k]], qm9.elements[idx[k]]))

    def forbidden(*args, **kwargs):
        raise AssertionError("featurise called although the cache holds the result")

    monkeypatch.setattr(C, "featurise", forbidden)
    again = featurise_qm9(idx.copy(), tmp_path)  # same arguments: read from the cache
    assert_sets_equal(again, gs)
    with pytest.raises(AssertionError, match="cache"):  # other arguments: another file, computed again
        featurise_qm9(idx, tmp_path, max_spd=5)
    with pytest.raises(AssertionError, match="cache"):
        featurise_qm9(idx[:-1], tmp_path)
    assert len(list(tmp_path.glob("features/*/graphs.npz"))) == 1
    with pytest.raises(ValueError, match="QM9 positions"):
        featurise_qm9(np.array([0, len(qm9)]), tmp_path)
    with pytest.raises(ValueError, match="indices"):
        featurise_qm9(np.array([0.5]), tmp_path)


def test_featurise_qm9_counts_bad_molecules(tmp_path, monkeypatch):
    smiles = ["CO", "C1CC", "[H][H]", "C#N"]
    elements = [["C", "O", "H", "H", "H", "H"], ["C"] * 3, ["H", "H"], ["C", "N", "H"]]
    positions = [np.zeros((len(e), 3)) + np.arange(len(e))[:, None] * 0.3 for e in elements]
    fake = QM9(
        index=np.array([11, 12, 13, 14]),
        smiles=smiles,
        elements=elements,
        positions=positions,
        homo=np.zeros(4),
        lumo=np.ones(4),
        gap=np.array([0.1, 0.2, 0.3, 0.4]),
    )
    monkeypatch.setattr(C, "load_qm9", lambda: fake)
    gs = featurise_qm9(None, tmp_path)
    assert gs.smiles == ["CO", "C#N"] and gs.ids.tolist() == [11, 14]
    assert gs.skipped == {"invalid_smiles": 1, "no_heavy_atoms": 1}
    np.testing.assert_allclose(gs.target, np.array([0.1, 0.4]) * HARTREE_EV, rtol=1e-6)
    assert gs.has_3d.tolist() == [True, True]
    meta = json.loads(np.load(next(tmp_path.glob("features/*/graphs.npz")))["meta"].tobytes())
    assert meta["skipped"] == gs.skipped


@pytest.mark.slow
def test_featurise_all_of_qm9(qm9, tmp_path):
    gs = featurise_qm9(None, tmp_path)
    assert len(gs) + sum(gs.skipped.values()) == len(qm9) and len(gs) > 0.999 * len(qm9)
    assert gs.has_3d.mean() > 0.99
    assert gs.num_nodes.max() <= 9 and gs.num_nodes.min() >= 1
    assert np.all(gs.spd[gs.spd != 255] <= 20)
    np.testing.assert_array_equal(gs.take([0]).ids, gs.ids[:1])


def test_the_features_are_keyed_by_the_featurisation_code_not_the_training_code(tmp_path):
    """Features computed by other featurisation code are not read back: the entry's code is the closure of the code
    featurising them (core.provenance.callable_units), which holds featurise and its helpers, the molecule source
    and how the GraphSet is written and read, and none of the code that trains on them."""
    from core.memo import ENTRY
    from core.provenance import changed_units

    gs = featurise_qm9(np.array([3, 1, 2]), tmp_path)
    (entry,) = tmp_path.glob("features/*/" + ENTRY)
    units = json.loads(entry.read_text())["units"]
    for reached in (
        "papers.gps.features:featurise",
        "papers.gps.features:shortest_path_distances",
        "papers.gps.cache:featurise_many",
        "papers.gps.cache:_save_graphs",
        "papers.gps.graphs:GraphSet",
        "core.data.molecules:load_qm9",
    ):
        assert reached in units, reached  # an edit to any of these gives another entry
    modules = {k.partition(":")[0] for k in units}
    assert not modules & {"papers.gps.train", "papers.gps.model", "papers.gps.batching", "papers.gps.run"}
    assert changed_units(units) == []
    # a changed featurisation unit is reported stale (make prune removes the entry)
    assert changed_units({**units, "papers.gps.features:featurise": "0" * 64}) == ["papers.gps.features:featurise"]
    assert_sets_equal(featurise_qm9(np.array([3, 1, 2]), tmp_path), gs)
    assert len(list(tmp_path.glob("features/*"))) == 1

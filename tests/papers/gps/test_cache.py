"""Featurising many molecules (failures counted, not fatal) and the on-disk cache of featurised QM9."""

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
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1 and re.fullmatch(r"qm9-[0-9a-f]{16}\.npz", files[0].name)
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
    assert len(list(tmp_path.glob("*.npz"))) == 1
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
    meta = json.loads(np.load(next(tmp_path.glob("qm9-*.npz")))["meta"].tobytes())
    assert meta["skipped"] == gs.skipped


@pytest.mark.slow
def test_featurise_all_of_qm9(qm9, tmp_path):
    gs = featurise_qm9(None, tmp_path)
    assert len(gs) + sum(gs.skipped.values()) == len(qm9) and len(gs) > 0.999 * len(qm9)
    assert gs.has_3d.mean() > 0.99
    assert gs.num_nodes.max() <= 9 and gs.num_nodes.min() >= 1
    assert np.all(gs.spd[gs.spd != 255] <= 20)
    np.testing.assert_array_equal(gs.take([0]).ids, gs.ids[:1])


def test_the_cache_key_follows_the_featurisation_code(tmp_path, monkeypatch):
    """Features computed by other featurisation code are not read back: the key holds the code's fingerprint (of
    the featurisation modules only), and the file records it."""
    from core.provenance import paper_fingerprint

    idx = np.array([3, 1, 2])
    expected = paper_fingerprint(
        "gps",
        "papers/gps/cache.py",
        "papers/gps/features.py",
        "papers/gps/graphs.py",
        "core/data/molecules.py",
        "core/io.py",
    )
    assert C.featurisation_fingerprint() == expected
    assert expected != paper_fingerprint("gps")  # narrower than the paper's whole package: training code is not in it
    before = C.qm9_cache_path(idx, tmp_path)
    monkeypatch.setattr(C, "featurisation_fingerprint", lambda: "0123456789ab")
    assert C.qm9_cache_path(idx, tmp_path) != before  # a line of featurisation code changed: another file
    assert C.qm9_cache_path(idx, tmp_path) == C.qm9_cache_path(idx.copy(), tmp_path)
    gs = featurise_many(["CCO", "c1ccccc1"], target=[1.0, 2.0])
    path = tmp_path / "x.npz"
    gs.save(path, code="0123456789ab")
    assert json.loads(np.load(path)["meta"].tobytes())["code"] == "0123456789ab"
    assert_sets_equal(type(gs).load(path), gs)

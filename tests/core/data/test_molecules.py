"""Offline molecule sources against the dataset's published counts, and RDKit conformers against chemistry."""

import numpy as np
import pytest

from core.data.molecules import (
    MoleculeError,
    _parse_positions,
    embed_conformers,
    load_qm9,
    molecule_from_smiles,
    nci_smiles,
    qm9_smiles,
)


@pytest.fixture(scope="module")
def qm9():
    return load_qm9()


def test_qm9_has_the_published_size_and_heavy_atom_counts(qm9):
    # QM9: 130,831 molecules after the authors' consistency filter; 109,031 with 9 heavy atoms, 106,109 of them
    # with at most 14 hydrogens (QM1B's filter)
    assert len(qm9) == 130_831
    heavy = qm9.heavy_atoms()
    hydrogens = np.array([els.count("H") for els in qm9.elements])
    assert heavy.max() == 9 and (heavy == 9).sum() == 109_031
    assert ((heavy == 9) & (hydrogens <= 14)).sum() == 106_109
    assert list(qm9.index[:3]) == [1, 2, 3] and qm9.smiles[:3] == ["C", "N", "O"]
    assert all(len(e) == len(p) for e, p in zip(qm9.elements, qm9.positions, strict=True))
    assert qm9_smiles() == qm9.smiles


def test_qm9_geometry_and_gap_of_water(qm9):
    water = qm9.smiles.index("O")
    assert qm9.elements[water] == ["O", "H", "H"]
    p = qm9.positions[water]
    oh = np.linalg.norm(p[1:] - p[0], axis=1)
    np.testing.assert_allclose(oh, 0.9614, atol=0.002)  # B3LYP O-H bond, Angstrom
    angle = np.degrees(np.arccos(np.dot(p[1] - p[0], p[2] - p[0]) / (oh[0] * oh[1])))
    assert 103 < angle < 106
    np.testing.assert_allclose(qm9.gap[water], qm9.lumo[water] - qm9.homo[water], atol=1e-4)


def test_positions_with_bare_trailing_dots_parse():
    p = _parse_positions("[[0.5995394918,0.,1.],[-1.5,2.e-1,-0.]]")
    np.testing.assert_array_equal(p, [[0.5995394918, 0.0, 1.0], [-1.5, 0.2, 0.0]])


def test_nci_sample_is_rdkits_file():
    smiles = nci_smiles()
    assert len(smiles) == 4999 and smiles[0] == "CC1=CC(=O)C=CC1=O"


def test_conformers_are_seeded_and_chemically_sensible():
    elements, pos = embed_conformers("CCO", 3, seed=7)
    assert elements == ["C", "C", "O"] + ["H"] * 6 and pos.shape == (3, 9, 3)
    _, again = embed_conformers("CCO", 3, seed=7)
    np.testing.assert_array_equal(pos, again)
    _, other = embed_conformers("CCO", 3, seed=8)
    assert np.abs(pos - other).max() > 1e-3
    cc = np.linalg.norm(pos[:, 0] - pos[:, 1], axis=-1)
    co = np.linalg.norm(pos[:, 1] - pos[:, 2], axis=-1)
    assert np.all(np.abs(cc - 1.51) < 0.05) and np.all(np.abs(co - 1.42) < 0.05)


def test_seed_zero_gives_distinct_conformers():
    # RDKit's ETKDG seeded with 0 or 2^31 - 1 returns copies of one conformer; embed_conformers must not
    for seed in (0, 2**31 - 1):
        _, pos = embed_conformers("CC(C)C(=O)OC(C)C", 4, seed=seed)
        assert min(np.abs(pos[i] - pos[j]).max() for i in range(4) for j in range(i)) > 0.1
    with pytest.raises(ValueError, match="seed=-1 must be >= 0"):
        embed_conformers("CCO", 2, seed=-1)


def test_bad_molecules_raise_a_counted_reason():
    with pytest.raises(MoleculeError, match="cannot parse") as e:
        molecule_from_smiles("C1CC(")
    assert e.value.reason == "invalid_smiles"
    with pytest.raises(MoleculeError) as e:
        embed_conformers("not a smiles", 1, seed=0)
    assert e.value.reason == "invalid_smiles"
    with pytest.raises(ValueError, match="count=0"):
        embed_conformers("CCO", 0, seed=0)

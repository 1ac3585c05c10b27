"""GPS++ featurisation: every feature against an independent reference (hand values, OGB-style string lookups,
brute-force matrix powers, a textbook spectrum, a BFS written here, scipy) and QM9 geometries."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from rdkit import Chem
from scipy.sparse.csgraph import shortest_path

from core.data.molecules import MoleculeError
from papers.gps.features import (
    ATOM_FEATURES,
    ATOM_VOCAB,
    BOND_FEATURES,
    BOND_VOCAB,
    featurise,
    laplacian_eigenpairs,
    random_walk_landing,
    shortest_path_distances,
)
from tests.papers.gps.molecule_checks import SMILES

# --------------------------------------------------------------------------------- references written for the tests

MISC = "misc"
REF_ATOM_LISTS = [  # OGB's lists, values as RDKit prints them; a value not listed takes the last entry
    [*range(1, 119), MISC],
    ["CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER", MISC],
    [*range(11), MISC],
    [*range(-5, 6), MISC],
    [*range(9), MISC],
    [*range(5), MISC],
    ["SP", "SP2", "SP3", "SP3D", "SP3D2", MISC],
    [False, True],
    [False, True],
]
REF_BOND_LISTS = [
    ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", MISC],
    ["STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"],
    [False, True],
]


def _safe_index(values: list, value) -> int:
    return values.index(value) if value in values else len(values) - 1


def reference_atoms(mol: Chem.Mol) -> np.ndarray:
    rows = []
    for a in mol.GetAtoms():
        raw = [
            a.GetAtomicNum(),
            str(a.GetChiralTag()),
            a.GetTotalDegree(),
            a.GetFormalCharge(),
            a.GetTotalNumHs(),
            a.GetNumRadicalElectrons(),
            str(a.GetHybridization()),
            a.GetIsAromatic(),
            a.IsInRing(),
        ]
        rows.append([_safe_index(lst, v) for lst, v in zip(REF_ATOM_LISTS, raw, strict=True)])
    return np.array(rows)


def reference_bonds(mol: Chem.Mol) -> list[tuple[int, int, list[int]]]:
    out = []
    for b in mol.GetBonds():
        raw = [str(b.GetBondType()), str(b.GetStereo()), b.GetIsConjugated()]
        out.append(
            (
                b.GetBeginAtomIdx(),
                b.GetEndAtomIdx(),
                [_safe_index(lst, v) for lst, v in zip(REF_BOND_LISTS, raw, strict=True)],
            )
        )
    return out


def adjacency_of(smiles: str) -> np.ndarray:
    mol = Chem.MolFromSmiles(smiles)
    a = np.zeros((mol.GetNumAtoms(),) * 2)
    for b in mol.GetBonds():
        a[b.GetBeginAtomIdx(), b.GetEndAtomIdx()] = a[b.GetEndAtomIdx(), b.GetBeginAtomIdx()] = 1
    return a


def bfs_distances(adjacency: np.ndarray, cap: int) -> np.ndarray:
    n = len(adjacency)
    out = np.full((n, n), 255)
    for s in range(n):
        out[s, s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in np.flatnonzero(adjacency[u]):
                if out[s, v] == 255:
                    out[s, v] = out[s, u] + 1
                    queue.append(v)
    return np.where(out == 255, 255, np.minimum(out, cap))


# ------------------------------------------------------------------------------------------------- atom/bond features


def test_vocabularies():
    assert len(ATOM_FEATURES) == len(ATOM_VOCAB) == 9 and len(BOND_FEATURES) == len(BOND_VOCAB) == 3
    assert ATOM_VOCAB == tuple(len(lst) for lst in REF_ATOM_LISTS) == (119, 5, 12, 12, 10, 6, 6, 2, 2)
    assert BOND_VOCAB == tuple(len(lst) for lst in REF_BOND_LISTS) == (5, 6, 2)


@pytest.mark.parametrize("smiles", SMILES)
def test_features_match_ogb_style_reference(smiles):
    g = featurise(smiles)
    mol = Chem.MolFromSmiles(smiles)
    assert g.atoms.dtype == np.int16 and g.bonds.dtype == np.int16
    np.testing.assert_array_equal(g.atoms, reference_atoms(mol))
    assert np.all(g.atoms < np.array(ATOM_VOCAB)) and np.all(g.bonds < np.array(BOND_VOCAB))
    ref = reference_bonds(mol)
    assert g.num_edges == 2 * len(ref) and g.num_nodes == mol.GetNumAtoms()
    for b, (u, v, feats) in enumerate(ref):  # bond b -> edges 2b (u->v) and 2b+1 (v->u), same features
        assert (g.senders[2 * b], g.receivers[2 * b]) == (u, v)
        assert (g.senders[2 * b + 1], g.receivers[2 * b + 1]) == (v, u)
        assert g.bonds[2 * b].tolist() == feats == g.bonds[2 * b + 1].tolist()
    np.testing.assert_array_equal(g.degree, [a.GetDegree() for a in mol.GetAtoms()])


def test_features_match_reference_on_qm9(qm9, sample):
    for i in sample:
        g, mol = featurise(qm9.smiles[i]), Chem.MolFromSmiles(qm9.smiles[i])
        np.testing.assert_array_equal(g.atoms, reference_atoms(mol))
        pairs = {(u, v) for u, v, _ in reference_bonds(mol)}
        assert set(zip(g.senders[::2].tolist(), g.receivers[::2].tolist(), strict=True)) == pairs


def test_benzene_by_hand():
    g = featurise("c1ccccc1")
    # C (Z=6 -> 5), no chirality, total degree 3 (2 C + 1 H), charge 0 (index 5), 1 H, no radical, SP2 (1), aromatic,
    # in a ring
    assert g.atoms.tolist() == [[5, 0, 3, 5, 1, 0, 1, 1, 1]] * 6
    assert g.bonds.tolist() == [[3, 0, 1]] * 12  # AROMATIC, STEREONONE, conjugated; 6 bonds both ways
    assert g.degree.tolist() == [2] * 6
    assert sorted(zip(g.senders.tolist(), g.receivers.tolist(), strict=True)) == sorted(
        [(i, (i + 1) % 6) for i in range(6)] + [((i + 1) % 6, i) for i in range(6)]
    )


def test_acetic_acid_ammonium_chirality_stereo_by_hand():
    acid = featurise("CC(=O)O")
    assert acid.atoms[:, 4].tolist() == [3, 0, 0, 1]  # hydrogens: CH3, C, =O, OH
    assert acid.atoms[:, 0].tolist() == [5, 5, 7, 7]  # C, C, O, O
    assert acid.bonds[:, 0].tolist() == [0, 0, 1, 1, 0, 0]  # C-C single, C=O double, C-O single
    assert acid.senders[2:4].tolist() == [1, 2]  # the double bond joins the carbonyl C and O

    ammonium = featurise("[NH4+]")
    # N (Z=7 -> 6), charge +1 -> index 6 (list -5..5), 4 H, total degree 4, SP3 -> 2
    assert ammonium.atoms.tolist() == [[6, 0, 4, 6, 4, 0, 2, 0, 0]]
    assert ammonium.num_edges == 0 and ammonium.degree.tolist() == [0]

    assert featurise("C[C@H](N)O").atoms[:, 1].tolist() == [0, 2, 0, 0]  # '@': CHI_TETRAHEDRAL_CCW
    assert featurise("C[C@@H](N)O").atoms[:, 1].tolist() == [0, 1, 0, 0]  # '@@': CHI_TETRAHEDRAL_CW
    assert featurise("CC(N)O").atoms[:, 1].tolist() == [0, 0, 0, 0]
    assert featurise("F/C=C/F").bonds[2:4, 1].tolist() == [2, 2]  # STEREOE
    assert featurise("F/C=C\\F").bonds[2:4, 1].tolist() == [1, 1]  # STEREOZ
    assert featurise("[Fe+6]").atoms[0, 3] == 11  # charge outside -5..5 -> misc
    assert featurise("[C]").atoms[0, 5] == 4 and featurise("[CH3]").atoms[0, 5] == 1  # radical electrons
    assert featurise("[U]").atoms[0, 6] == 5  # hybridization S -> misc


def test_bad_input():
    for bad in ("not a smiles", "C1CC", "", None):
        with pytest.raises(MoleculeError) as err:
            featurise(bad)
        assert err.value.reason == "invalid_smiles"
    for no_heavy in ("[H][H]", "[H+]"):
        with pytest.raises(MoleculeError) as err:
            featurise(no_heavy)
        assert err.value.reason == "no_heavy_atoms"
    with pytest.raises(ValueError, match="together"):
        featurise("CC", positions=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        featurise("CC", positions=np.zeros((3, 2)), elements=["C", "C", "H"])
    for bad in (0, 255, 2.5, True, "3"):
        with pytest.raises(ValueError, match="max_spd"):
            featurise("CC", max_spd=bad)


# ------------------------------------------------------------------------------------------- structural encodings


def test_random_walk_on_a_path_by_hand():
    # CCC is the path 0-1-2: P = [[0, 1, 0], [1/2, 0, 1/2], [0, 1, 0]]. A walk returns only after an even number of
    # steps (bipartite), so odd k give 0. P^2 = [[1/2, 0, 1/2], [0, 1, 0], [1/2, 0, 1/2]] (the middle atom always
    # comes back in 2 steps, an end atom half the time) and P^2 is idempotent here (P^4 = P^2 P^2 has diagonal
    # 1/4 + 1/4, 1, 1/4 + 1/4), so every even k gives [1/2, 1, 1/2].
    rw = featurise("CCC").random_walk
    assert rw.shape == (3, 16) and rw.dtype == np.float32
    for k in range(1, 17):
        expected = [0.5, 1.0, 0.5] if k % 2 == 0 else [0.0, 0.0, 0.0]
        np.testing.assert_allclose(rw[:, k - 1], expected, atol=1e-6)


@pytest.mark.parametrize("smiles", ["C", "CC.O", "c1ccccc1", "CC(=O)O", "c1ccc2ccccc2c1", "C1CC2CC1C2", "O.O.[Na+]"])
def test_random_walk_equals_matrix_powers(smiles):
    a = adjacency_of(smiles)
    deg = a.sum(1)
    p = np.divide(a, deg[:, None], out=np.zeros_like(a), where=deg[:, None] > 0)
    expected = np.stack([np.diag(np.linalg.matrix_power(p, k)) for k in range(1, 17)], axis=1)
    np.testing.assert_allclose(featurise(smiles).random_walk, expected, atol=1e-6)
    np.testing.assert_allclose(random_walk_landing(a), expected, atol=1e-12)
    assert np.all(featurise(smiles).random_walk[deg == 0] == 0)  # isolated atoms: zeros


def _laplacian(a: np.ndarray) -> np.ndarray:
    deg = a.sum(1)
    d = np.array([1 / np.sqrt(x) if x > 0 else 0.0 for x in deg])
    return np.eye(len(a)) - np.diag(d) @ a @ np.diag(d)


@pytest.mark.parametrize(
    "smiles", ["C", "CCC", "c1ccccc1", "CC.O", "c1ccc2ccccc2c1", "CC(C)(C)C1CCC(CC1)C(=O)NC1=CC=CC=N1"]
)
def test_laplacian_eigenpairs(smiles):
    a = adjacency_of(smiles)
    n = len(a)
    lap = _laplacian(a)
    g = featurise(smiles)
    assert g.lap_vec.shape == (n, 7) and g.lap_val.shape == (7,) and g.lap_vec.dtype == np.float32
    keep = min(n - 1, 7)
    vec, val = g.lap_vec[:, :keep].astype(np.float64), g.lap_val[:keep].astype(np.float64)
    np.testing.assert_allclose(lap @ vec, vec * val, atol=1e-5)  # L v = lambda v
    np.testing.assert_allclose(vec.T @ vec, np.eye(keep), atol=1e-5)  # orthonormal
    assert np.all(np.diff(val) >= 0) and np.all((val >= 0) & (val <= 2))
    np.testing.assert_allclose(val, np.sort(np.linalg.eigvals(lap).real)[1 : keep + 1], atol=1e-5)  # first dropped
    assert np.all(g.lap_vec[:, keep:] == 0) and np.all(g.lap_val[keep:] == 0)  # padding when n < 8
    assert np.all(vec.max(0, initial=0) >= (-vec).max(0, initial=0) - 1e-6)  # sign: largest entry positive


def test_laplacian_of_a_six_cycle_is_textbook():
    # benzene is the cycle C6, all degrees 2: L = I - A/2 has eigenvalues 1 - cos(2 pi k / 6), k = 0..5
    expected = np.sort([1 - np.cos(2 * np.pi * k / 6) for k in range(6)])[1:]  # 0.5, 0.5, 1.5, 1.5, 2
    g = featurise("c1ccccc1")
    np.testing.assert_allclose(g.lap_val, [*expected, 0, 0], atol=1e-6)
    vec, val = laplacian_eigenpairs(adjacency_of("c1ccccc1"))
    np.testing.assert_allclose(val[:5], expected, atol=1e-12)
    np.testing.assert_allclose(vec[:, 4] ** 2, 1 / 6, atol=1e-12)  # eigenvalue 2: the alternating vector


@pytest.mark.parametrize("smiles", SMILES)
def test_spd_equals_bfs_and_scipy(smiles):
    a = adjacency_of(smiles)
    g = featurise(smiles)
    assert g.spd.dtype == np.uint8 and g.spd.shape == (len(a), len(a))
    np.testing.assert_array_equal(g.spd, bfs_distances(a, 20))
    d = shortest_path(a, unweighted=True, directed=False)
    np.testing.assert_array_equal(g.spd, np.where(np.isinf(d), 255, np.minimum(d, 20)))


def test_spd_cap_and_fragments():
    a = adjacency_of("CCCCCCCCCC.CC")  # a 10-atom chain and an ethane
    for cap in (1, 3, 9, 20):
        np.testing.assert_array_equal(shortest_path_distances(a, cap), bfs_distances(a, cap))
    spd = featurise("CCCCCCCCCC.CC", max_spd=3).spd
    assert spd[0, 9] == 3 and spd[0, 10] == 255 and spd[10, 11] == 1
    assert featurise("C.O").spd.tolist() == [[0, 255], [255, 0]]


def test_spd_on_qm9(qm9, sample):
    for i in sample[:50]:
        a = adjacency_of(qm9.smiles[i])
        np.testing.assert_array_equal(featurise(qm9.smiles[i]).spd, bfs_distances(a, 20))


# ---------------------------------------------------------------------------------------------------- 3D positions


def test_qm9_positions(qm9, sample):
    with_3d = 0
    for i in sample:
        g = featurise(qm9.smiles[i], qm9.positions[i], qm9.elements[i])
        heavy = np.array(qm9.elements[i]) != "H"
        if g.positions is None:
            assert g.geometry_issue == "geometry_mismatch"
            continue
        with_3d += 1
        assert g.geometry_issue is None and g.positions.dtype == np.float32 and g.positions.shape == (g.num_nodes, 3)
        np.testing.assert_allclose(g.positions, qm9.positions[i][heavy], atol=1e-5)
        mol = Chem.MolFromSmiles(qm9.smiles[i])
        assert [a.GetSymbol() for a in mol.GetAtoms()] == list(np.array(qm9.elements[i])[heavy])
        for b in mol.GetBonds():
            length = np.linalg.norm(g.positions[b.GetBeginAtomIdx()] - g.positions[b.GetEndAtomIdx()])
            assert 0.9 < length < 2.0
    assert with_3d >= len(sample) - 2  # ~1 in 3000 QM9 molecules lists its atoms in another order


def test_geometry_mismatch(qm9):
    i = next(k for k in range(len(qm9)) if {"C", "O"} <= set(qm9.elements[k]) and qm9.smiles[k].startswith("C"))
    smiles, pos, els = qm9.smiles[i], qm9.positions[i], list(qm9.elements[i])
    assert featurise(smiles, pos, els).positions is not None
    c, o = els.index("C"), els.index("O")
    swapped = list(els)
    swapped[c], swapped[o] = "O", "C"  # the heavy symbols no longer follow the SMILES
    g = featurise(smiles, pos, swapped)
    assert g.positions is None and g.geometry_issue == "geometry_mismatch"
    assert np.array_equal(g.atoms, featurise(smiles).atoms)  # the graph itself is unaffected
    stretched = featurise(smiles, pos * 2, els)  # every bond now > 2 * 1.1 Angstrom
    assert stretched.positions is None and stretched.geometry_issue == "geometry_mismatch"
    assert featurise(smiles, pos * 1.1, els).positions is not None  # still < 2.0
    nan = pos.copy()
    nan[c] = np.nan
    assert featurise(smiles, nan, els).geometry_issue == "geometry_mismatch"
    assert featurise(smiles).geometry_issue is None and featurise(smiles).positions is None

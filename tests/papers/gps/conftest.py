"""Small molecule sets with RDKit geometries, shared by the GPS++ batching and model tests, and QM9 with a fixed
sample of it, shared by the featurisation, GraphSet and cache tests."""

import numpy as np
import pytest

from core.data.molecules import QM9, embed_conformers, load_qm9
from papers.gps.cache import featurise_many
from papers.gps.features import featurise

# so that a failing assert_*_equal shows the values compared, as an assert in a test module does (the test modules
# import it after this conftest)
pytest.register_assert_rewrite("tests.papers.gps.molecule_checks")

SMILES = [
    "C",
    "CO",
    "CC(=O)O",
    "c1ccccc1",
    "CC(C)C(=O)N",
    "OC1CCCC1",
    "N#CC=O",
    "CC1=CC=CN1",
    "FC(F)(F)CO",
    "C1CC1C#N",
    "O=C1CCC(=O)N1",
    "CCOC(=O)C",
]


def _geometries(smiles):
    elements, positions = [], []
    for i, s in enumerate(smiles):
        el, pos = embed_conformers(s, 1, seed=i)
        elements.append(el)
        positions.append(pos[0])
    return elements, positions


@pytest.fixture(scope="session")
def molecules():
    """12 molecules (1-8 heavy atoms) with ETKDG geometries; target = heavy atoms + bonds / 2."""
    elements, positions = _geometries(SMILES)
    target = np.array([featurise(s).num_nodes + 0.5 * featurise(s).num_edges / 2 for s in SMILES], np.float64)
    return featurise_many(SMILES, positions=positions, elements=elements, target=target, desc="test molecules")


@pytest.fixture(scope="session")
def molecules_without_3d():
    return featurise_many(SMILES[:4], target=np.arange(4.0), desc="test molecules (no 3D)")


@pytest.fixture(scope="module")
def qm9() -> QM9:
    return load_qm9()


@pytest.fixture(scope="module")
def sample(qm9) -> np.ndarray:
    return np.sort(np.random.default_rng(0).choice(len(qm9), 200, replace=False))

"""Awkward SMILES and exact comparisons of MoleculeGraph and GraphSet, shared by the featurisation, GraphSet and
QM9 cache tests."""

from __future__ import annotations

import numpy as np

from papers.gps import graphs as G
from papers.gps.features import MoleculeGraph
from papers.gps.graphs import GraphSet

SMILES = [
    "C",
    "CCC",
    "c1ccccc1",
    "CC(=O)O",
    "[NH4+]",
    "C[C@H](N)O",
    "C[C@@H](N)O",
    "F/C=C/F",
    "F/C=C\\F",
    "c1ccc2ccccc2c1",
    "[O-][N+](=O)C",
    "C#N",
    "C=C=C",
    "CC.O",
    "O.O.[Na+]",
    "[CH3]",
    "[C]",
    "[Fe+6]",
    "F[S](F)(F)(F)(F)F",
    "[2H]C",
    "CC(C)(C)C1CCC(CC1)C(=O)NC1=CC=CC=N1",
    "C1CC2CC1C2",
]


def assert_graphs_equal(a: MoleculeGraph, b: MoleculeGraph) -> None:
    for name in ("atoms", "bonds", "senders", "receivers", "random_walk", "lap_vec", "lap_val", "degree", "spd"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert (a.positions is None) == (b.positions is None)
    if a.positions is not None:
        assert a.positions.dtype == b.positions.dtype and np.array_equal(a.positions, b.positions)
    assert a.geometry_issue == b.geometry_issue


def assert_sets_equal(a: GraphSet, b: GraphSet) -> None:
    for name in G._ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.smiles == b.smiles and a.geometry_issue == b.geometry_issue and a.skipped == b.skipped

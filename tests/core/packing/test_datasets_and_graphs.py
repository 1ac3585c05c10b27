"""Packing real data: every sequence (or graph) used exactly once, limits respected, arrays laid out as a packed
model expects."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.packing import lengths_histogram, pack_graphs, pack_sequences, packed_arrays


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 30), min_size=1, max_size=200),
    limit=st.integers(1, 6),
    method=st.sampled_from(["spfhp", "lpfhp", "nnlshp"]),
)
def test_every_sequence_is_packed_exactly_once(lengths, limit, method):
    L = 30
    if method == "nnlshp":
        limit = min(limit, 3)
    packs, result = pack_sequences(lengths, L, limit, method)
    flat = [i for p in packs for i in p]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in p) <= L and 1 <= len(p) <= limit for p in packs)
    assert len(packs) == result.num_packs


def test_packed_arrays_layout():
    seqs = [np.array([5, 6, 7]), np.array([8]), np.array([9, 9])]
    packs = [[0, 1], [2]]
    a = packed_arrays(seqs, packs, 5, pad_id=0)
    np.testing.assert_array_equal(a["ids"], [[5, 6, 7, 8, 0], [9, 9, 0, 0, 0]])
    np.testing.assert_array_equal(a["sequence_ids"], [[1, 1, 1, 2, 0], [1, 1, 0, 0, 0]])
    np.testing.assert_array_equal(a["positions"], [[0, 1, 2, 0, 0], [0, 1, 0, 0, 0]])
    np.testing.assert_array_equal(a["starts"], [[0, 3], [0, -1]])
    np.testing.assert_array_equal(a["index"], [[0, 1], [2, -1]])


def test_packed_arrays_reconstruct_the_sequences():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 40, 300)
    seqs = [rng.integers(1, 50, n) for n in lengths]
    packs, _ = pack_sequences(lengths, 64, 5, "lpfhp", seed=3)
    a = packed_arrays(seqs, packs, 64)
    for r in range(len(packs)):
        for j, i in enumerate(a["index"][r]):
            if i < 0:
                continue
            start = a["starts"][r, j]
            np.testing.assert_array_equal(a["ids"][r, start : start + lengths[i]], seqs[i])
            assert (a["sequence_ids"][r] == j + 1).sum() == lengths[i]


def test_sequence_errors_come_before_any_work():
    with pytest.raises(ValueError, match="sequence 1 has length 9 > max_sequence_length=8"):
        pack_sequences([3, 9, 2], 8, 2)
    with pytest.raises(ValueError, match="sequence 0 is empty"):
        lengths_histogram([0, 3], 8)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), max_graphs=st.integers(1, 8))
def test_graph_packs_respect_all_three_limits(data, max_graphs):
    n = data.draw(st.integers(1, 150))
    nodes = np.array(data.draw(st.lists(st.integers(1, 30), min_size=n, max_size=n)))
    edges = np.array(data.draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    g = pack_graphs(nodes, edges, 60, 120, max_graphs)
    flat = sorted(i for p in g.packs for i in p)
    assert flat == list(range(n))
    for p in g.packs:
        assert nodes[p].sum() <= 60 and edges[p].sum() <= 120 and 1 <= len(p) <= max_graphs
    assert g.num_packs >= g.lower_bound


def test_graph_packing_is_close_to_the_bound_on_molecule_like_sizes():
    rng = np.random.default_rng(0)
    nodes = rng.integers(9, 30, 5000)  # QM9-like molecules with hydrogens
    edges = 2 * nodes + rng.integers(-4, 4, nodes.size)
    g = pack_graphs(nodes, edges, 60, 120, 8)
    assert g.num_packs <= 1.05 * g.lower_bound
    assert g.node_efficiency > 0.9


def test_graph_errors():
    with pytest.raises(ValueError, match="graph 1 has 70 nodes and 3 edges, beyond max_nodes=60"):
        pack_graphs([5, 70], [4, 3], 60, 120, 8)
    with pytest.raises(ValueError, match="max_graphs=0 must be an integer >= 1"):
        pack_graphs([5], [4], 60, 120, 0)

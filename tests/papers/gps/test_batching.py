"""Packed batches: every molecule lands whole in exactly one pack, with its own features, local edges and SPD block;
masking and noise follow their rates; padding is inert."""

import numpy as np
import pytest

from papers.gps.batching import (
    MASKING_WEIGHTS,
    SPD_PADDING,
    PackLimits,
    assemble,
    batches,
    efficiency,
    fitting,
    plan,
)
from papers.gps.features import ATOM_VOCAB

LIMITS = PackLimits(nodes=20, edges=40, graphs=4)


def test_every_molecule_lands_whole_in_one_pack(molecules):
    packs = plan(molecules, np.arange(len(molecules)), LIMITS, np.random.default_rng(0))
    assert sorted(i for p in packs for i in p) == list(range(len(molecules)))
    a = assemble(molecules, packs, LIMITS)
    seen = []
    for p in range(len(packs)):
        for s in range(LIMITS.graphs):
            i = int(a["ids"][p, s])
            if i < 0:
                assert not a["graph_mask"][p, s]
                continue
            seen.append(i)
            g = molecules.graph(i)
            nodes = np.flatnonzero(a["node_graph"][p] == s)
            assert len(nodes) == g.num_nodes and np.all(np.diff(nodes) == 1)  # contiguous
            start = nodes[0]
            np.testing.assert_array_equal(a["atoms"][p, nodes], g.atoms)
            np.testing.assert_array_equal(a["random_walk"][p, nodes], g.random_walk)
            np.testing.assert_array_equal(a["lap_val"][p, nodes], np.broadcast_to(g.lap_val, (g.num_nodes, 7)))
            np.testing.assert_array_equal(a["positions"][p, nodes], g.positions)
            edges = np.flatnonzero(a["edge_graph"][p] == s)
            np.testing.assert_array_equal(a["senders"][p, edges] - start, g.senders)
            np.testing.assert_array_equal(a["receivers"][p, edges] - start, g.receivers)
            np.testing.assert_array_equal(a["bonds"][p, edges], g.bonds)
            block = a["spd"][p][np.ix_(nodes, nodes)]
            np.testing.assert_array_equal(block, g.spd)
            others = np.setdiff1d(np.arange(LIMITS.nodes), nodes)
            assert np.all(a["spd"][p][np.ix_(nodes, others)] == SPD_PADDING)
            assert a["target"][p, s] == pytest.approx(molecules.target[i])
    assert sorted(seen) == list(range(len(molecules)))
    # padding: nodes of the padding molecule are masked, edges too
    assert np.all(a["node_mask"] == (a["node_graph"] < LIMITS.graphs))
    assert np.all(a["edge_mask"] == (a["edge_graph"] < LIMITS.graphs))
    assert a["node_mask"].sum() == molecules.num_nodes.sum() and a["edge_mask"].sum() == molecules.num_edges.sum()


def test_efficiency_counts_used_slots(molecules):
    packs = plan(molecules, np.arange(len(molecules)), LIMITS, None)
    e = efficiency(molecules, packs, LIMITS)
    assert e["nodes"] == pytest.approx(molecules.num_nodes.sum() / (len(packs) * LIMITS.nodes))
    assert e["edges"] == pytest.approx(molecules.num_edges.sum() / (len(packs) * LIMITS.edges))
    assert e["graphs_per_pack"] == pytest.approx(len(molecules) / len(packs))


def test_plan_is_seeded_and_shuffles(molecules):
    index = np.arange(len(molecules))
    a = plan(molecules, index, LIMITS, np.random.default_rng(3))
    assert a == plan(molecules, index, LIMITS, np.random.default_rng(3))
    assert any(plan(molecules, index, LIMITS, np.random.default_rng(s)) != a for s in range(4, 10))


def test_masking_groups_follow_1_3_1_and_never_invent_3d(molecules, molecules_without_3d):
    many = molecules.take(np.repeat(np.arange(len(molecules)), 150))
    packs = plan(many, np.arange(len(many)), LIMITS, None)
    a = assemble(many, packs, LIMITS, rng=np.random.default_rng(0), masking=True)
    first = {}  # per molecule, the flags of its first node
    for p in range(len(packs)):
        for s in range(LIMITS.graphs):
            nodes = np.flatnonzero(a["node_graph"][p] == s)
            if len(nodes):
                first[(p, s)] = (bool(a["keep_spd"][p, nodes[0]]), bool(a["keep_3d"][p, nodes[0]]))
    flags = np.array(list(first.values()))
    share = np.array(
        [np.mean(flags[:, 0] & ~flags[:, 1]), np.mean(~flags[:, 0] & flags[:, 1]), np.mean(flags[:, 0] & flags[:, 1])]
    )
    np.testing.assert_allclose(share, np.array(MASKING_WEIGHTS) / sum(MASKING_WEIGHTS), atol=0.03)
    packs = plan(molecules_without_3d, np.arange(4), LIMITS, None)
    b = assemble(molecules_without_3d, packs, LIMITS, rng=np.random.default_rng(0), masking=True)
    assert not b["keep_3d"].any()
    c = assemble(molecules_without_3d, packs, LIMITS)  # evaluation: no masking
    assert np.all(c["keep_spd"] == c["node_mask"]) and not c["keep_3d"].any()


def test_noise_corrupts_at_its_rate_and_keeps_the_clean_copy(molecules):
    many = molecules.take(np.repeat(np.arange(len(molecules)), 100))
    packs = plan(many, np.arange(len(many)), LIMITS, None)
    clean = assemble(many, packs, LIMITS)
    noisy = assemble(many, packs, LIMITS, rng=np.random.default_rng(1), noise=0.2)
    np.testing.assert_array_equal(noisy["atoms_clean"], clean["atoms"])
    mask = clean["node_mask"]
    changed = (noisy["atoms"] != clean["atoms"])[mask]
    # a replacement draws uniformly from the vocabulary, so it changes the value with probability 1 - 1/vocab
    expected = 0.2 * (1 - 1 / np.array(ATOM_VOCAB))
    np.testing.assert_allclose(changed.mean(0), expected, atol=0.02)
    assert np.all((noisy["atoms"] >= 0) & (noisy["atoms"] < np.array(ATOM_VOCAB)))


def test_last_batch_is_padded_with_empty_packs(molecules):
    packs = plan(molecules, np.arange(len(molecules)), LIMITS, None)
    a = assemble(molecules, packs, LIMITS)
    per = len(packs) - 1 if len(packs) > 2 else 2
    out = list(batches(a, per, LIMITS, keys=("node_mask", "node_graph", "spd", "ids", "graph_mask")))
    assert len(out) == -(-len(packs) // per)
    last = out[-1]
    assert last["node_mask"].shape[0] == per
    empty = len(packs) % per
    assert empty and not last["node_mask"][empty:].any()
    assert np.all(last["node_graph"][empty:] == LIMITS.graphs) and np.all(last["spd"][empty:] == SPD_PADDING)
    assert np.all(last["ids"][empty:] == -1) and not last["graph_mask"][empty:].any()


def test_molecules_over_the_limits_are_counted_not_packed(molecules):
    small = PackLimits(nodes=5, edges=8, graphs=2)
    ok, skipped = fitting(molecules, small)
    too_big = (molecules.num_nodes > 5) | (molecules.num_edges > 8)
    assert skipped["over_pack_limits"] == too_big.sum() > 0
    np.testing.assert_array_equal(ok, np.flatnonzero(~too_big))


def test_bad_limits_and_overfull_packs_are_named(molecules):
    with pytest.raises(ValueError, match="nodes=0"):
        PackLimits(nodes=0)
    with pytest.raises(ValueError, match="exceeds the limits"):
        assemble(molecules, [list(range(4))], PackLimits(nodes=4, edges=40, graphs=4))
    with pytest.raises(ValueError, match="need a random generator"):
        assemble(molecules, [[0]], LIMITS, noise=0.1)


def test_concatenate_keeps_every_graph_and_sums_skips(molecules):
    from papers.gps.graphs import GraphSet

    order = [0, 3, 5, 7, 1]
    first, second = molecules.take(order[:3]), molecules.take(order[3:])
    second = GraphSet(**{**second.__dict__, "skipped": {"invalid_smiles": 2}})
    joined = GraphSet.concatenate([first, second])
    assert len(joined) == 5 and joined.skipped == {"invalid_smiles": 2}
    for k, i in enumerate(order):
        a, b = joined.graph(k), molecules.graph(i)
        for name in ("atoms", "bonds", "senders", "receivers", "random_walk", "lap_vec", "lap_val", "spd", "positions"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert joined.target[k] == molecules.target[i] and joined.smiles[k] == molecules.smiles[i]

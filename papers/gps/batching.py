"""Packed, static-shape batches of molecular graphs for GPS++.

Every epoch the molecules are shuffled and packed by core.packing.pack_graphs under three limits at once (GPS++: 60
nodes, 120 directed edges, 8 molecules per pack), then all packs of the epoch are assembled with vectorised numpy
into arrays [packs, ...] and served as batches of `packs_per_batch` packs: one compiled step serves every batch.
Inside a pack, molecule s owns a contiguous run of nodes and edges; `node_graph` / `edge_graph` say which (the
padding "molecule" is `graphs`), and the SPD matrix is block-diagonal (255 between molecules and on padding).

Training batches also carry the paper's regularisers, drawn per epoch from a seeded generator (in the same order
whether or not masking is applied, so that arms trained from one seed see the same molecules, groups and noise):
- grouped input masking: per molecule, with weights 1:3:1, keep only SPD (3D masked), only 3D (SPD masked), or both;
  molecules without a geometry never keep 3D;
- noisy nodes / edges: each categorical feature of each atom (bond) is replaced with probability `noise` by a
  uniformly random category; the clean features travel as `atoms_clean` / `bonds_clean` for the denoising losses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from core.packing import pack_graphs
from papers.gps.features import ATOM_VOCAB, BOND_VOCAB
from papers.gps.graphs import GraphSet

SPD_PADDING = 255
MASKING_GROUPS = ((True, False), (False, True), (True, True))  # (keep SPD, keep 3D): mask 3D, mask SPD, none
MASKING_WEIGHTS = (1.0, 3.0, 1.0)  # papers/gps/REFERENCES.md [regularisers]


@dataclass(frozen=True)
class PackLimits:
    nodes: int = 60
    edges: int = 120
    graphs: int = 8

    def __post_init__(self) -> None:
        for name in ("nodes", "edges", "graphs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"pack limit {name}={v!r} must be a positive integer")


def fitting(graphs: GraphSet, limits: PackLimits) -> tuple[np.ndarray, Counter]:
    """Indices of the molecules that fit in a pack, and the count of those that do not ('over_pack_limits')."""
    ok = (graphs.num_nodes <= limits.nodes) & (graphs.num_edges <= limits.edges)
    skipped = Counter({"over_pack_limits": int((~ok).sum())}) if (~ok).any() else Counter()
    return np.flatnonzero(ok), skipped


def plan(graphs: GraphSet, index: np.ndarray, limits: PackLimits, rng: np.random.Generator | None) -> list[list[int]]:
    """Packs (lists of molecule indices into `graphs`) for the molecules `index`, shuffled first when rng is given."""
    order = np.asarray(index) if rng is None else rng.permutation(index)
    result = pack_graphs(graphs.num_nodes[order], graphs.num_edges[order], limits.nodes, limits.edges, limits.graphs)
    return [[int(order[k]) for k in p] for p in result.packs]


def efficiency(graphs: GraphSet, packs: list[list[int]], limits: PackLimits) -> dict[str, float]:
    """Share of the node, edge and molecule slots of the packs that hold real data."""
    members = np.fromiter((i for p in packs for i in p), np.int64)
    n = max(len(packs), 1)
    return {
        "nodes": float(graphs.num_nodes[members].sum() / (n * limits.nodes)),
        "edges": float(graphs.num_edges[members].sum() / (n * limits.edges)),
        "graphs": float(len(members) / (n * limits.graphs)),
        "graphs_per_pack": float(len(members) / n),
    }


def _ragged(offsets: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items of the molecules `which`: (rows in the flat arrays, owner's position in `which`, index in the owner)."""
    starts, sizes = offsets[which], offsets[which + 1] - offsets[which]
    owner = np.repeat(np.arange(len(which)), sizes)
    local = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return starts[owner] + local, owner, local


def assemble(
    graphs: GraphSet,
    packs: list[list[int]],
    limits: PackLimits,
    *,
    rng: np.random.Generator | None = None,
    noise: float = 0.0,
    masking: bool = False,
) -> dict[str, np.ndarray]:
    """All packs as arrays [P, ...] (the model's batch dict plus `target` [P, G] and `ids` [P, G], -1 on padding).
    `rng` is needed for `noise` > 0 or `masking`; without masking every molecule keeps SPD and its 3D (if any).
    With `rng`, the masking groups are drawn whether or not `masking` applies them: one generator state gives the
    same groups and the same noise to a masked and an unmasked arm (the arms of one seed are paired)."""
    if (noise > 0 or masking) and rng is None:
        raise ValueError("noise and masking need a random generator")
    if not 0 <= noise < 1:
        raise ValueError(f"noise={noise} must be in [0, 1)")
    P, N, E, G = len(packs), limits.nodes, limits.edges, limits.graphs
    which = np.fromiter((i for p in packs for i in p), np.int64)
    pack_of = np.repeat(np.arange(P), [len(p) for p in packs])
    slot = np.concatenate([np.arange(len(p)) for p in packs]) if packs else np.zeros(0, np.int64)
    if packs and (max(len(p) for p in packs) > G):
        raise ValueError(f"a pack holds more than {G} molecules")
    n, e = graphs.num_nodes[which], graphs.num_edges[which]
    # each molecule's first node / edge within its pack
    node_start = _start_in_pack(n, pack_of)
    edge_start = _start_in_pack(e, pack_of)
    if (node_start + n > N).any() or (edge_start + e > E).any():
        raise ValueError(f"a pack exceeds the limits {limits}")

    src, owner, local = _ragged(graphs.node_offsets, which)
    dest = pack_of[owner] * N + node_start[owner] + local
    out: dict[str, np.ndarray] = {}

    def nodes(values: np.ndarray, fill=0, dtype=None) -> np.ndarray:
        a = np.full((P * N, *values.shape[1:]), fill, dtype or values.dtype)
        a[dest] = values
        return a.reshape(P, N, *values.shape[1:])

    out["atoms_clean"] = nodes(graphs.atoms[src].astype(np.int32))
    out["random_walk"] = nodes(graphs.random_walk[src])
    out["lap_vec"] = nodes(graphs.lap_vec[src])
    out["lap_val"] = nodes(graphs.lap_val[which][owner])
    out["degree"] = nodes(graphs.degree[src].astype(np.int32))
    out["positions"] = nodes(graphs.positions[src])
    out["node_graph"] = nodes(slot[owner].astype(np.int32), fill=G)
    out["node_mask"] = nodes(np.ones(len(src), bool), fill=False)

    esrc, eowner, elocal = _ragged(graphs.edge_offsets, which)
    edest = pack_of[eowner] * E + edge_start[eowner] + elocal

    def edges(values: np.ndarray, fill=0) -> np.ndarray:
        a = np.full((P * E, *values.shape[1:]), fill, values.dtype)
        a[edest] = values
        return a.reshape(P, E, *values.shape[1:])

    out["bonds_clean"] = edges(graphs.bonds[esrc].astype(np.int32))
    out["senders"] = edges((graphs.senders[esrc] + node_start[eowner]).astype(np.int32))
    out["receivers"] = edges((graphs.receivers[esrc] + node_start[eowner]).astype(np.int32))
    out["edge_graph"] = edges(slot[eowner].astype(np.int32), fill=G)
    out["edge_mask"] = edges(np.ones(len(esrc), bool), fill=False)

    ssrc, sowner, slocal = _ragged(graphs.spd_offsets, which)
    size = n[sowner]
    row, col = slocal // size, slocal % size
    base = node_start[sowner]
    spd = np.full(P * N * N, SPD_PADDING, np.int32)
    spd[pack_of[sowner] * N * N + (base + row) * N + base + col] = graphs.spd[ssrc]
    out["spd"] = spd.reshape(P, N, N)

    def per_graph(values: np.ndarray, fill) -> np.ndarray:
        a = np.full((P * G,), fill, values.dtype)
        a[pack_of * G + slot] = values
        return a.reshape(P, G)

    out["graph_mask"] = per_graph(np.ones(len(which), bool), False)
    out["target"] = per_graph(graphs.target[which].astype(np.float32), 0.0)
    out["ids"] = per_graph(which.astype(np.int64), -1)

    has_3d = graphs.has_3d[which]
    if rng is not None:  # drawn even when not applied, so the noise after it is the same for masked and unmasked arms
        group = rng.choice(len(MASKING_GROUPS), size=len(which), p=np.asarray(MASKING_WEIGHTS) / sum(MASKING_WEIGHTS))
    if masking:
        keep_spd = np.array([g[0] for g in MASKING_GROUPS])[group]
        keep_3d = np.array([g[1] for g in MASKING_GROUPS])[group] & has_3d
    else:
        keep_spd, keep_3d = np.ones(len(which), bool), has_3d
    out["keep_spd"] = nodes(keep_spd[owner], fill=False)
    out["keep_3d"] = nodes(keep_3d[owner], fill=False)

    out["atoms"] = _corrupt(out["atoms_clean"], ATOM_VOCAB, noise, rng)
    out["bonds"] = _corrupt(out["bonds_clean"], BOND_VOCAB, noise, rng)
    return out


def _start_in_pack(sizes: np.ndarray, pack_of: np.ndarray) -> np.ndarray:
    """Exclusive running sum of `sizes` restarting at each pack (molecules of a pack are consecutive)."""
    total = np.cumsum(sizes) - sizes
    first = np.r_[0, np.flatnonzero(np.diff(pack_of)) + 1] if len(pack_of) else np.zeros(0, np.int64)
    return total - np.repeat(total[first], np.diff(np.r_[first, len(pack_of)]))


def _corrupt(clean: np.ndarray, vocab: tuple[int, ...], p: float, rng) -> np.ndarray:
    if p == 0:
        return clean
    hit = rng.random(clean.shape) < p
    random = (rng.random(clean.shape) * np.asarray(vocab)).astype(clean.dtype)
    return np.where(hit, random, clean)


MODEL_KEYS = (
    "atoms",
    "bonds",
    "senders",
    "receivers",
    "node_graph",
    "edge_graph",
    "node_mask",
    "edge_mask",
    "graph_mask",
    "random_walk",
    "lap_vec",
    "lap_val",
    "degree",
    "spd",
    "positions",
    "keep_3d",
    "keep_spd",
)
TRAIN_KEYS = (*MODEL_KEYS, "atoms_clean", "bonds_clean", "target")


def batches(
    arrays: dict[str, np.ndarray], packs_per_batch: int, limits: PackLimits, keys=TRAIN_KEYS
) -> Iterator[dict[str, np.ndarray]]:
    """Consecutive batches of `packs_per_batch` packs; the last one is padded with empty packs (all masks False)."""
    P = len(arrays["node_mask"])
    for start in range(0, P, packs_per_batch):
        batch = {k: arrays[k][start : start + packs_per_batch] for k in keys}
        short = packs_per_batch - len(batch["node_mask"])
        if short:
            batch = {k: np.concatenate([v, _empty(k, v, short, limits)]) for k, v in batch.items()}
        yield batch


def _empty(key: str, v: np.ndarray, count: int, limits: PackLimits) -> np.ndarray:
    """`count` packs with no molecule in them, shaped like `v`."""
    empty = np.zeros((count, *v.shape[1:]), v.dtype)
    if key in ("node_graph", "edge_graph"):
        empty[:] = limits.graphs  # the padding molecule
    elif key == "spd":
        empty[:] = SPD_PADDING
    elif key == "ids":
        empty[:] = -1
    return empty

"""GraphSet: many featurised molecules (papers.gps.features.MoleculeGraph) stored flat, as concatenated arrays
plus offsets, so that they batch fast and save to one .npz."""

from __future__ import annotations

import json
import operator
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from core.io import atomic_write
from papers.gps.features import (
    ATOM_FEATURES,
    BOND_FEATURES,
    FEATURE_VERSION,
    LAPLACIAN_PAIRS,
    RANDOM_WALK_STEPS,
    MoleculeGraph,
)


def _segments(offsets: np.ndarray, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the picked segments of a flat array (in pick order) and the offsets of the result."""
    starts = offsets[picks]
    lengths = offsets[picks + 1] - starts
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return rows, new_offsets


def _concat(parts: list[np.ndarray], shape: tuple[int, ...], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros((0, *shape), dtype)


def _offsets(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64))]).astype(np.int64)


_ARRAYS = (  # GraphSet's array fields, as saved
    "atoms",
    "bonds",
    "senders",
    "receivers",
    "random_walk",
    "lap_vec",
    "lap_val",
    "degree",
    "spd",
    "positions",
    "has_3d",
    "node_offsets",
    "edge_offsets",
    "spd_offsets",
    "target",
    "ids",
)


@dataclass(frozen=True, eq=False)
class GraphSet:
    """G molecules concatenated: node arrays [sum n, ...], edge arrays [sum e, ...], each graph's spd block flat.

    Graph i owns nodes node_offsets[i]:node_offsets[i+1], edges edge_offsets[i]:edge_offsets[i+1] and spd entries
    spd_offsets[i]:spd_offsets[i+1] (its n x n matrix, row-major). senders/receivers stay LOCAL (0..n-1 within each
    graph): a batcher adds the node offsets it chooses.
    """

    atoms: np.ndarray  # [sum n, 9] int16
    bonds: np.ndarray  # [sum e, 3] int16
    senders: np.ndarray  # [sum e] int32, local
    receivers: np.ndarray  # [sum e] int32, local
    random_walk: np.ndarray  # [sum n, 16] float32
    lap_vec: np.ndarray  # [sum n, 7] float32
    lap_val: np.ndarray  # [G, 7] float32
    degree: np.ndarray  # [sum n] int16
    spd: np.ndarray  # [sum n^2] uint8
    positions: np.ndarray  # [sum n, 3] float32, zeros where has_3d is False
    has_3d: np.ndarray  # [G] bool
    node_offsets: np.ndarray  # [G + 1] int64
    edge_offsets: np.ndarray  # [G + 1] int64
    spd_offsets: np.ndarray  # [G + 1] int64
    target: np.ndarray  # [G] float32
    ids: np.ndarray  # [G] int64
    smiles: list[str]
    geometry_issue: list[str | None]  # per graph, as MoleculeGraph.geometry_issue
    skipped: dict[str, int]  # reason -> molecules that could not be featurised

    def __post_init__(self) -> None:
        g = len(self.smiles)
        per_graph = {"has_3d": self.has_3d, "lap_val": self.lap_val, "target": self.target, "ids": self.ids}
        per_graph |= {"geometry_issue": self.geometry_issue}
        for name, value in per_graph.items():
            if len(value) != g:
                raise ValueError(f"GraphSet.{name} has {len(value)} entries for {g} graphs")
        for name in ("node_offsets", "edge_offsets", "spd_offsets"):
            off = getattr(self, name)
            if off.shape != (g + 1,) or off[0] != 0 or np.any(np.diff(off) < 0):
                raise ValueError(f"GraphSet.{name} must be {g + 1} non-decreasing offsets from 0, got {off[:8]}...")
        sizes = {
            "node_offsets": ("atoms", "random_walk", "lap_vec", "degree", "positions"),
            "edge_offsets": ("bonds", "senders", "receivers"),
            "spd_offsets": ("spd",),
        }
        for off_name, names in sizes.items():
            total = int(getattr(self, off_name)[-1])
            for name in names:
                if len(getattr(self, name)) != total:
                    raise ValueError(f"GraphSet.{name} has {len(getattr(self, name))} rows, {off_name} says {total}")
        if not np.array_equal(np.diff(self.spd_offsets), self.num_nodes.astype(np.int64) ** 2):
            raise ValueError("GraphSet.spd_offsets must step by n^2 per graph")

    def __len__(self) -> int:
        return len(self.smiles)

    @property
    def num_nodes(self) -> np.ndarray:
        return np.diff(self.node_offsets)

    @property
    def num_edges(self) -> np.ndarray:
        return np.diff(self.edge_offsets)

    def graph(self, i: int) -> MoleculeGraph:
        """Graph i as a MoleculeGraph (views into this set's arrays); negative i counts from the end."""
        g = len(self)
        i = operator.index(i)
        if not -g <= i < g:
            raise IndexError(f"graph index {i} out of range for a GraphSet of {g} graphs")
        i %= g
        a, b = self.node_offsets[i], self.node_offsets[i + 1]
        c, d = self.edge_offsets[i], self.edge_offsets[i + 1]
        n = int(b - a)
        return MoleculeGraph(
            atoms=self.atoms[a:b],
            bonds=self.bonds[c:d],
            senders=self.senders[c:d],
            receivers=self.receivers[c:d],
            random_walk=self.random_walk[a:b],
            lap_vec=self.lap_vec[a:b],
            lap_val=self.lap_val[i],
            degree=self.degree[a:b],
            spd=self.spd[self.spd_offsets[i] : self.spd_offsets[i + 1]].reshape(n, n),
            positions=self.positions[a:b] if self.has_3d[i] else None,
            geometry_issue=self.geometry_issue[i],
        )

    def take(self, indices: Sequence[int] | np.ndarray) -> GraphSet:
        """The graphs at `indices` (integers, negatives from the end, repeats allowed; or a [G] bool mask), in that
        order, with offsets rebuilt. `skipped` is carried over unchanged."""
        idx = np.asarray(indices)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or idx.dtype == bool):
            raise ValueError(f"indices must be a 1-D integer array or bool mask, got dtype {idx.dtype} {idx.shape}")
        picks = np.arange(len(self))[idx]  # IndexError for out-of-range, mask-length checks
        nodes, node_offsets = _segments(self.node_offsets, picks)
        edges, edge_offsets = _segments(self.edge_offsets, picks)
        spd, spd_offsets = _segments(self.spd_offsets, picks)
        return GraphSet(
            atoms=self.atoms[nodes],
            bonds=self.bonds[edges],
            senders=self.senders[edges],
            receivers=self.receivers[edges],
            random_walk=self.random_walk[nodes],
            lap_vec=self.lap_vec[nodes],
            lap_val=self.lap_val[picks],
            degree=self.degree[nodes],
            spd=self.spd[spd],
            positions=self.positions[nodes],
            has_3d=self.has_3d[picks],
            node_offsets=node_offsets,
            edge_offsets=edge_offsets,
            spd_offsets=spd_offsets,
            target=self.target[picks],
            ids=self.ids[picks],
            smiles=[self.smiles[p] for p in picks],
            geometry_issue=[self.geometry_issue[p] for p in picks],
            skipped=dict(self.skipped),
        )

    @classmethod
    def concatenate(cls, sets: Sequence[GraphSet]) -> GraphSet:
        """The graphs of `sets` one after another (offsets shifted; `skipped` counts summed)."""
        if not sets:
            raise ValueError("concatenate needs at least one GraphSet")

        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(s, name) for s in sets])

        def offsets(name: str) -> np.ndarray:
            return _offsets(np.concatenate([np.diff(getattr(s, name)) for s in sets]))

        skipped = Counter()
        for s in sets:
            skipped.update(s.skipped)
        per_item = ("atoms", "bonds", "senders", "receivers", "random_walk", "lap_vec", "lap_val", "degree", "spd")
        return cls(
            **{name: joined(name) for name in (*per_item, "positions", "has_3d", "target", "ids")},
            node_offsets=offsets("node_offsets"),
            edge_offsets=offsets("edge_offsets"),
            spd_offsets=offsets("spd_offsets"),
            smiles=[x for s in sets for x in s.smiles],
            geometry_issue=[x for s in sets for x in s.geometry_issue],
            skipped=dict(skipped),
        )

    @classmethod
    def from_graphs(
        cls,
        graphs: Sequence[MoleculeGraph],
        target: Sequence[float] | np.ndarray,
        ids: Sequence[int] | np.ndarray,
        smiles: Sequence[str],
        skipped: dict[str, int] | None = None,
    ) -> GraphSet:
        """Concatenate featurised graphs; target, ids and smiles are parallel to `graphs`."""
        g = len(graphs)
        target = np.asarray(target, np.float32).reshape(-1)
        ids = np.asarray(ids, np.int64).reshape(-1)
        if len(target) != g or len(ids) != g or len(smiles) != g:
            raise ValueError(
                f"{g} graphs need as many targets, ids and smiles; got {len(target)}, {len(ids)}, {len(smiles)}"
            )
        n = [gr.num_nodes for gr in graphs]
        return cls(
            atoms=_concat([gr.atoms for gr in graphs], (len(ATOM_FEATURES),), np.int16),
            bonds=_concat([gr.bonds for gr in graphs], (len(BOND_FEATURES),), np.int16),
            senders=_concat([gr.senders for gr in graphs], (), np.int32),
            receivers=_concat([gr.receivers for gr in graphs], (), np.int32),
            random_walk=_concat([gr.random_walk for gr in graphs], (RANDOM_WALK_STEPS,), np.float32),
            lap_vec=_concat([gr.lap_vec for gr in graphs], (LAPLACIAN_PAIRS,), np.float32),
            lap_val=_concat([gr.lap_val[None] for gr in graphs], (LAPLACIAN_PAIRS,), np.float32),
            degree=_concat([gr.degree for gr in graphs], (), np.int16),
            spd=_concat([gr.spd.reshape(-1) for gr in graphs], (), np.uint8),
            positions=_concat(
                [
                    gr.positions if gr.positions is not None else np.zeros((k, 3))
                    for gr, k in zip(graphs, n, strict=True)
                ],
                (3,),
                np.float32,
            ),
            has_3d=np.array([gr.positions is not None for gr in graphs], bool),
            node_offsets=_offsets(n),
            edge_offsets=_offsets([gr.num_edges for gr in graphs]),
            spd_offsets=_offsets(np.asarray(n, np.int64) ** 2),
            target=target,
            ids=ids,
            smiles=list(smiles),
            geometry_issue=[gr.geometry_issue for gr in graphs],
            skipped=dict(skipped or {}),
        )

    def save(self, path: str | os.PathLike, *, code: str = "") -> Path:
        """One uncompressed .npz (written atomically): the arrays, FEATURE_VERSION, and a JSON blob (uint8) with
        smiles, geometry issues and skipped counts (and `code`, the fingerprint of the code that computed them, when
        given)."""
        meta = {"smiles": self.smiles, "geometry_issue": self.geometry_issue, "skipped": self.skipped}
        if code:
            meta["code"] = code
        blob = np.frombuffer(json.dumps(meta).encode("utf-8"), np.uint8)
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        return atomic_write(path, lambda f: np.savez(f, feature_version=np.int64(FEATURE_VERSION), meta=blob, **arrays))

    @classmethod
    def load(cls, path: str | os.PathLike) -> GraphSet:
        """Read a file written by `save`; ValueError if it is not one or holds another FEATURE_VERSION."""
        with np.load(path, allow_pickle=False) as z:
            missing = {"feature_version", "meta", *_ARRAYS} - set(z.files)
            if missing:
                raise ValueError(f"{path} is not a GraphSet file (missing {sorted(missing)})")
            version = int(z["feature_version"])
            if version != FEATURE_VERSION:
                raise ValueError(
                    f"{path} holds FEATURE_VERSION {version}, this code writes {FEATURE_VERSION}: "
                    "featurise again (delete the file)"
                )
            meta = json.loads(z["meta"].tobytes().decode("utf-8"))
            arrays = {name: z[name] for name in _ARRAYS}
        return cls(**arrays, smiles=meta["smiles"], geometry_issue=meta["geometry_issue"], skipped=meta["skipped"])


assert {f.name for f in fields(GraphSet)} == {*_ARRAYS, "smiles", "geometry_issue", "skipped"}

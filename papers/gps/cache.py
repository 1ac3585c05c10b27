"""Featurising many molecules into a GraphSet, and QM9's featurised molecules (target: HOMO-LUMO gap in eV) kept
in the run's memo store (core.memo, stage "features"), keyed by FEATURE_VERSION, max_spd and the molecules chosen,
and by the code that featurises them (whatever `featurise_qm9_now` can reach: a change to training code reuses
them, a change to featurisation code computes them again)."""

from __future__ import annotations

import functools
import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.data.molecules import HARTREE_EV, MoleculeError, load_qm9
from core.memo import memo
from core.progress import progress
from papers.gps.features import FEATURE_VERSION, check_max_spd, featurise
from papers.gps.graphs import GraphSet


def featurise_many(
    smiles: Sequence[str],
    *,
    positions: Sequence[np.ndarray] | None = None,
    elements: Sequence[Sequence[str]] | None = None,
    target: Sequence[float] | np.ndarray | None = None,
    ids: Sequence[int] | np.ndarray | None = None,
    max_spd: int = 20,
    desc: str = "featurise",
) -> GraphSet:
    """Featurise a list of molecules into a GraphSet, with a progress bar. A molecule that raises MoleculeError is
    left out and counted in `skipped` by its reason. positions/elements/target/ids are parallel to `smiles`
    (target defaults to NaN, ids to the position in `smiles`)."""
    max_spd = check_max_spd(max_spd)
    count = len(smiles)
    target = np.full(count, np.nan) if target is None else np.asarray(target, np.float64).reshape(-1)
    ids = np.arange(count) if ids is None else np.asarray(ids, np.int64).reshape(-1)
    if (positions is None) != (elements is None):
        raise ValueError("positions and elements must be given together (elements names the atom of each row)")
    lengths = {"target": len(target), "ids": len(ids)}
    if positions is not None:
        lengths |= {"positions": len(positions), "elements": len(elements)}
    for name, length in lengths.items():
        if length != count:
            raise ValueError(f"{name} has {length} entries for {count} SMILES")

    graphs, kept, skipped = [], [], Counter()
    for i in progress(range(count), desc=desc, unit="mol"):
        try:
            if positions is None:
                graphs.append(featurise(smiles[i], max_spd=max_spd))
            else:
                graphs.append(featurise(smiles[i], positions[i], elements[i], max_spd=max_spd))
        except MoleculeError as err:
            skipped[err.reason] += 1
            continue
        kept.append(i)
    kept = np.asarray(kept, np.int64)
    return GraphSet.from_graphs(graphs, target[kept], ids[kept], [smiles[i] for i in kept], dict(skipped))


def qm9_features_key(indices: np.ndarray | None, max_spd: int = 20) -> dict:
    """The key of QM9's features at positions `indices` (core.memo): FEATURE_VERSION, max_spd and a hash of the
    positions in order (a split holds thousands)."""
    max_spd = check_max_spd(max_spd)
    chosen = "all" if indices is None else hashlib.sha256(_check_indices(indices).astype("<i8").tobytes()).hexdigest()
    return {"qm9": chosen, "feature_version": FEATURE_VERSION, "max_spd": max_spd}


def _check_indices(indices: np.ndarray) -> np.ndarray:
    idx = np.asarray(indices)
    if idx.size == 0:
        idx = idx.astype(np.int64)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be a 1-D integer array of QM9 positions, got dtype {idx.dtype} {idx.shape}")
    return idx.astype(np.int64)


def featurise_qm9(
    indices: np.ndarray | None, store: str | os.PathLike | None = None, *, max_spd: int = 20, reuse: bool = True
) -> GraphSet:
    """The QM9 molecules at positions `indices` of load_qm9()'s order (None: all 130,831), in that order.

    Target: HOMO-LUMO gap in eV (gap in Hartree * HARTREE_EV); ids: QM9's molecule index; positions: QM9's
    geometries (heavy atoms). Molecules that cannot be featurised are counted in `skipped`, never fatal. The result
    is kept in the memo store `store` (core.memo, stage "features"; None: nothing kept) under `qm9_features_key`
    and the code featurising them (`featurise_qm9_now` and what it reaches, not the code that trains on them): a
    second call with the same arguments and featurisation code reads it back (when `reuse`).
    """
    key = qm9_features_key(indices, max_spd)
    idx = None if indices is None else _check_indices(indices)
    compute = functools.partial(featurise_qm9_now, idx, max_spd)
    return memo(store, "features", key, compute, save=_save_graphs, load=_load_graphs, reuse=reuse)


def _save_graphs(graphs: GraphSet, directory: Path) -> None:
    graphs.save(directory / "graphs.npz")


def _load_graphs(directory: Path) -> GraphSet:
    return GraphSet.load(directory / "graphs.npz")


def featurise_qm9_now(indices: np.ndarray | None, max_spd: int = 20) -> GraphSet:
    """`featurise_qm9` without the store: featurise the molecules now."""
    qm9 = load_qm9()
    idx = np.arange(len(qm9)) if indices is None else _check_indices(indices)
    bad = idx[(idx < 0) | (idx >= len(qm9))]
    if len(bad):
        raise ValueError(f"QM9 positions must be in [0, {len(qm9)}), got {bad[:5].tolist()}")
    return featurise_many(
        [qm9.smiles[i] for i in idx],
        positions=[qm9.positions[i] for i in idx],
        elements=[qm9.elements[i] for i in idx],
        target=np.asarray(qm9.gap)[idx] * HARTREE_EV,
        ids=np.asarray(qm9.index)[idx],
        max_spd=max_spd,
        desc="featurise QM9",
    )

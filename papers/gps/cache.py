"""Featurising many molecules into a GraphSet, and QM9's featurised molecules (target: HOMO-LUMO gap in eV)
cached on disk under a name derived from FEATURE_VERSION, the code fingerprint of the featurisation modules, max_spd
and the molecules chosen."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.data.molecules import HARTREE_EV, MoleculeError, load_qm9
from core.progress import progress
from core.provenance import paper_fingerprint
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


# The modules featurise_qm9's result depends on (core.progress only draws the bar): a change to any of them gives
# another cache file, so features computed by older code are never read back.
FEATURISATION_MODULES = (
    "papers/gps/cache.py",
    "papers/gps/features.py",
    "papers/gps/graphs.py",
    "core/data/molecules.py",
    "core/io.py",
)


def featurisation_fingerprint() -> str:
    """12 hex digits identifying the featurisation code (core.provenance.paper_fingerprint of FEATURISATION_MODULES)."""
    return paper_fingerprint("gps", *FEATURISATION_MODULES)


def qm9_cache_path(indices: np.ndarray | None, cache_dir: str | os.PathLike, *, max_spd: int = 20) -> Path:
    """cache_dir / 'qm9-<16 hex>.npz', the hex from SHA-256 of (FEATURE_VERSION, the featurisation code's
    fingerprint, max_spd, the index bytes)."""
    max_spd = check_max_spd(max_spd)
    key = hashlib.sha256(f"qm9|{FEATURE_VERSION}|{featurisation_fingerprint()}|{max_spd}|".encode())
    key.update(b"all" if indices is None else _check_indices(indices).astype("<i8").tobytes())
    return Path(cache_dir) / f"qm9-{key.hexdigest()[:16]}.npz"


def _check_indices(indices: np.ndarray) -> np.ndarray:
    idx = np.asarray(indices)
    if idx.size == 0:
        idx = idx.astype(np.int64)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be a 1-D integer array of QM9 positions, got dtype {idx.dtype} {idx.shape}")
    return idx.astype(np.int64)


def featurise_qm9(indices: np.ndarray | None, cache_dir: str | os.PathLike, *, max_spd: int = 20) -> GraphSet:
    """The QM9 molecules at positions `indices` of load_qm9()'s order (None: all 130,831), in that order.

    Target: HOMO-LUMO gap in eV (gap in Hartree * HARTREE_EV); ids: QM9's molecule index; positions: QM9's
    geometries (heavy atoms). Molecules that cannot be featurised are counted in `skipped`, never fatal. The result
    is cached in `qm9_cache_path(...)`: a second call with the same arguments (and the same featurisation code)
    reads the file, which records the code's fingerprint in its meta.
    """
    path = qm9_cache_path(indices, cache_dir, max_spd=max_spd)
    if path.is_file():
        return GraphSet.load(path)
    qm9 = load_qm9()
    idx = np.arange(len(qm9)) if indices is None else _check_indices(indices)
    bad = idx[(idx < 0) | (idx >= len(qm9))]
    if len(bad):
        raise ValueError(f"QM9 positions must be in [0, {len(qm9)}), got {bad[:5].tolist()}")
    graphs = featurise_many(
        [qm9.smiles[i] for i in idx],
        positions=[qm9.positions[i] for i in idx],
        elements=[qm9.elements[i] for i in idx],
        target=np.asarray(qm9.gap)[idx] * HARTREE_EV,
        ids=np.asarray(qm9.index)[idx],
        max_spd=max_spd,
        desc="featurise QM9",
    )
    graphs.save(path, code=featurisation_fingerprint())
    return graphs

"""Offline molecule sources and RDKit conformers.

- QM9 (Ramakrishnan et al. 2014) from the files of the PyPI package `qm9pack`: 130,831 molecules of up to 9 heavy
  atoms with SMILES, B3LYP/6-31G(2df,p) geometries (Angstrom) and HOMO/LUMO/gap (Hartree). The CSV files are read
  straight from the installed package directory (the package is not imported: it needs pandas and pkg_resources).
- RDKit's own `Data/NCI/first_5K.smi` (the first 5,000 NCI molecules) for molecules of 9-11 heavy atoms.
- `embed_conformers`: RDKit ETKDG conformers with a recorded seed, the way QM1B made its geometries.

Failures a caller wants to count rather than crash on (unparseable SMILES, embedding failures) raise
`MoleculeError` with a short `reason`.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

HARTREE_EV = 27.211386245988  # CODATA 2018
ANGSTROM_BOHR = 1 / 0.529177210903  # Bohr per Angstrom (CODATA 2018)

QM9_FILES = ("qm9_part1.csv", "qm9_part2.csv", "qm9_part3.csv")
QM9_SIZE = 130_831


class MoleculeError(ValueError):
    """A molecule that cannot be used; `reason` is a short key for counting (e.g. 'invalid_smiles')."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _package_directory(name: str, hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{hint} needs the PyPI package '{name}' (pip install {name})")
    return Path(next(iter(spec.submodule_search_locations)))


def qm9_directory() -> Path:
    root = _package_directory("qm9pack", "QM9") / "data"
    missing = [f for f in QM9_FILES if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(f"the installed qm9pack lacks {missing} in {root}")
    return root


@dataclass(frozen=True)
class QM9:
    """QM9 as parallel arrays, in the dataset's own order (index 1..130,831)."""

    index: np.ndarray  # [N] int: the QM9 molecule number
    smiles: list[str]
    elements: list[list[str]]  # element symbols per atom, hydrogens included
    positions: list[np.ndarray]  # [atoms, 3] float64, Angstrom
    homo: np.ndarray  # [N] Hartree
    lumo: np.ndarray
    gap: np.ndarray

    def __len__(self) -> int:
        return len(self.smiles)

    def heavy_atoms(self) -> np.ndarray:
        return np.array([sum(e != "H" for e in els) for els in self.elements])


def _parse_elements(text: str) -> list[str]:
    return list(ast.literal_eval(text))  # "['C','H','H']": a Python literal, not JSON


def _parse_positions(text: str) -> np.ndarray:
    """ "[[0.59,0.,1.],...]" -> [atoms, 3]; numbers may end in a bare '.', which JSON rejects and float() accepts."""
    return np.array(text.replace("[", "").replace("]", "").split(","), np.float64).reshape(-1, 3)


@lru_cache(maxsize=1)
def load_qm9() -> QM9:
    """All of QM9 from qm9pack's CSV files (~10 s the first time in a process, then cached)."""
    from pyarrow import csv

    columns = ["Index", "SMILES", "Elements", "XYZ_Ang", "HOMO_au", "LUMO_au", "HOMO_LUMO_gap_au"]
    parts = [
        csv.read_csv(qm9_directory() / f, convert_options=csv.ConvertOptions(include_columns=columns))
        for f in QM9_FILES
    ]
    cols = {c: [v for p in parts for v in p.column(c).to_pylist()] for c in columns}
    order = np.argsort(cols["Index"], kind="stable")
    pick = [int(i) for i in order]
    return QM9(
        index=np.asarray(cols["Index"], np.int64)[order],
        smiles=[cols["SMILES"][i] for i in pick],
        elements=[_parse_elements(cols["Elements"][i]) for i in pick],
        positions=[_parse_positions(cols["XYZ_Ang"][i]) for i in pick],
        homo=np.asarray(cols["HOMO_au"], np.float64)[order],
        lumo=np.asarray(cols["LUMO_au"], np.float64)[order],
        gap=np.asarray(cols["HOMO_LUMO_gap_au"], np.float64)[order],
    )


def qm9_smiles() -> list[str]:
    """QM9's SMILES in dataset order (a cheaper read than load_qm9)."""
    from pyarrow import csv

    opts = csv.ConvertOptions(include_columns=["Index", "SMILES"])
    parts = [csv.read_csv(qm9_directory() / f, convert_options=opts) for f in QM9_FILES]
    index = [v for p in parts for v in p.column("Index").to_pylist()]
    smiles = [v for p in parts for v in p.column("SMILES").to_pylist()]
    return [s for _, s in sorted(zip(index, smiles, strict=True))]


def nci_smiles() -> list[str]:
    """The SMILES of RDKit's shipped `Data/NCI/first_5K.smi`, in file order (unfiltered: salts, metals, all)."""
    from rdkit import RDConfig

    path = Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"
    if not path.is_file():
        raise FileNotFoundError(f"RDKit's NCI sample is missing: {path}")
    return [line.split()[0] for line in path.read_text().splitlines() if line.strip()]


def molecule_from_smiles(smiles: str):
    """RDKit molecule with explicit hydrogens; MoleculeError('invalid_smiles') when RDKit cannot parse it."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # a bad SMILES is counted by the caller, not printed
    mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) and smiles else None
    if mol is None:
        raise MoleculeError("invalid_smiles", f"RDKit cannot parse the SMILES {smiles!r}")
    return Chem.AddHs(mol)


RDKIT_SEED_MODULUS = 0x7FFFFFFF  # RDKit's ETKDG seeded with a multiple of this returns copies of one conformer
ZERO_SEED = 0x7FFFFFFE  # the seed RDKit gets instead (embed_conformers)


def embed_conformers(smiles: str, count: int, seed: int) -> tuple[list[str], np.ndarray]:
    """`count` ETKDG (v3) conformers of a SMILES, hydrogens included, seeded (same seed, same geometries).

    Returns (element symbols, positions [count, atoms, 3] in Angstrom). Raises MoleculeError('invalid_smiles') or
    ('embedding_failed') when RDKit returns fewer conformers than asked for. RDKit seeded with 0 or another multiple
    of 2^31 - 1 returns `count` copies of one conformer (and -1 means unseeded), so such seeds are passed to RDKit
    as ZERO_SEED."""
    from rdkit.Chem import AllChem

    if count < 1:
        raise ValueError(f"count={count} must be at least 1")
    if seed < 0:
        raise ValueError(f"seed={seed} must be >= 0 (RDKit treats negative seeds as unseeded)")
    mol = molecule_from_smiles(smiles)
    params = AllChem.ETKDGv3()
    params.randomSeed = int(seed) if int(seed) % RDKIT_SEED_MODULUS else ZERO_SEED
    params.numThreads = 1
    ids = list(AllChem.EmbedMultipleConfs(mol, numConfs=count, params=params))
    if len(ids) < count:
        raise MoleculeError(
            "embedding_failed", f"ETKDG embedded {len(ids)} of {count} conformers of {smiles!r} (seed {seed})"
        )
    elements = [a.GetSymbol() for a in mol.GetAtoms()]
    positions = np.stack([mol.GetConformer(i).GetPositions() for i in ids])
    return elements, positions

"""Label your own molecules with the QM1B DFT, into the generator's Parquet columns (papers.qm1b.generate).

    python -m papers.qm1b.label mols.smi more.xyz -o labelled.parquet [--conformers 4] [--seed 0]
                                [--basis sto-3g] [--dtype float32|float64] [--iterations 20] [--density-fit]
                                [--fixed-iterations] [--workers N]
    make label ARGS="mols.smi -o labelled.parquet --conformers 4"

Inputs, several files allowed, by extension:

- `.smi`, `.txt`: one SMILES per line, optionally followed by whitespace and a name; blank lines and lines starting
  with `#` are skipped. Each SMILES gets `--conformers` ETKDG conformers (core.data.molecules.embed_conformers),
  seeded from `--seed` and the molecule's index as the generator seeds them (generate.conformer_seed).
- `.xyz`: one or more concatenated XYZ blocks (atom count, comment, then `El x y z` lines in Angstrom); the comment
  is the molecule's name.
- `.sdf`, `.mol`: records with 3-D coordinates and explicit hydrogens (read by RDKit with `removeHs=False`).

A given geometry (xyz, sdf) is labelled as it is, as one conformer with `conformer_seed` -1; its `smile` column is
RDKit's SMILES of it (bonds perceived with rdDetermineBonds for xyz, at charge 0), or its formula where RDKit
cannot perceive one. The `molecule` column is the input's index in the combined list of inputs (files in the order
given); names and sources are in the Parquet metadata (`inputs`).

Every input is checked before any DFT runs, and a bad one stops the command with its file, line or record: the
restricted Kohn-Sham DFT needs a neutral closed shell (an even number of electrons, no net charge, no radicals) of
elements the basis covers (PySCF's STO-3G: H to I), so unlike the QM1B generator any such element is allowed.
During labelling, an input whose conformers cannot be embedded or whose DFT raises is a counted drop (the
exception's last line is in the summary's `errors`), and rows are dropped by QM1B's rules (std > 0.01 eV, zero
gap), as in the generator. The Parquet file is written atomically at the end.

One module over 400 lines: the command is one path from a file to Parquet rows (read and check the inputs, run
the DFT, apply QM1B's drop rules, summarise), each step the size of a function.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.data.molecules import MoleculeError, embed_conformers, molecule_from_smiles
from papers.qm1b.generate import (
    COLUMNS,
    Part,
    Selection,
    _write_parquet,
    atom_string,
    atomic_number,
    conformer_seed,
    label_parts,
    part_rows,
)

SMILES_SUFFIXES = (".smi", ".txt")
XYZ_SUFFIXES = (".xyz",)
SDF_SUFFIXES = (".sdf", ".mol")
SUFFIXES = SMILES_SUFFIXES + XYZ_SUFFIXES + SDF_SUFFIXES
DFT = {
    "basis": "sto-3g",
    "xc": "b3lyp5",
    "grid_level": 0,
    "iterations": 20,
    "dtype": "float32",
    "density_fit": False,
    "early_stop": True,
}
MIN_DISTANCE = 0.1  # Angstrom: atoms closer than this are a broken geometry (or one not in Angstrom)


@dataclass(frozen=True, eq=False)
class Input:
    """One molecule to label: a SMILES (its conformers are generated) or a given geometry (one conformer)."""

    where: str  # "file:line" or "file record k", for messages
    smiles: str  # the `smile` column: the given SMILES, RDKit's SMILES of a geometry, or its formula
    name: str = ""
    elements: tuple[str, ...] | None = None  # a given geometry: element symbols, hydrogens included
    positions: np.ndarray | None = None  # [atoms, 3] Angstrom

    @property
    def geometry_given(self) -> bool:
        return self.elements is not None

    def describe(self) -> str:
        return f"{self.where} ({self.name})" if self.name else self.where


def _element(token: str) -> str | None:
    """The standard symbol of an element symbol in any case or an atomic number; None if it is neither."""
    from pyscf.data.elements import ELEMENTS

    if token.isdigit():
        return ELEMENTS[int(token)] if 1 <= int(token) < len(ELEMENTS) else None
    symbol = token.capitalize()
    return symbol if symbol in ELEMENTS[1:] else None


def formula(elements: Sequence[str]) -> str:
    """The Hill formula: C, then H, then the other elements alphabetically (all alphabetically without carbon)."""
    counts = Counter(elements)
    first = ["C", "H"] if "C" in counts else []
    order = first + sorted(e for e in counts if e not in first)
    return "".join(e + (str(counts[e]) if counts[e] > 1 else "") for e in order)


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not a text file ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read: {e.strerror or e}") from None


def read_smiles(path: Path, text: str) -> list[Input]:
    """A .smi/.txt file: `SMILES [name]` per line; blank lines and `#` comments skipped."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        smiles, *rest = line.split(maxsplit=1)
        out.append(Input(where=f"{path}:{lineno}", smiles=smiles, name=rest[0].strip() if rest else ""))
    return out


def _xyz_smiles(elements: Sequence[str], positions: np.ndarray) -> str:
    """RDKit's SMILES of a geometry (bonds and bond orders perceived at charge 0), else its formula."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import rdDetermineBonds

    block = f"{len(elements)}\n\n" + "".join(
        f"{e} {x:.10f} {y:.10f} {z:.10f}\n" for e, (x, y, z) in zip(elements, positions, strict=True)
    )
    with rdBase.BlockLogs():
        try:
            mol = Chem.MolFromXYZBlock(block)
            rdDetermineBonds.DetermineBonds(mol, charge=0)
            return Chem.MolToSmiles(Chem.RemoveHs(mol))
        except Exception:  # RDKit raises several types (ValueError, RuntimeError, its own): any means no SMILES
            return formula(elements)


def read_xyz(path: Path, text: str) -> list[Input]:
    """One or more concatenated XYZ blocks: atom count, comment (the name), `El x y z` lines in Angstrom."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].strip():  # blank lines between or after blocks
            i += 1
            continue
        start, block = i + 1, len(out) + 1
        where = f"{path}:{start} (XYZ block {block})"
        count = lines[i].strip()
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{where}: expected the atom count (a positive integer) of an XYZ block, got {count!r}")
        n = int(count)
        if i + 2 + n > len(lines):
            raise ValueError(f"{where}: the block declares {n} atoms but the file ends after {len(lines) - i - 2}")
        name = lines[i + 1].strip()
        elements, positions = [], []
        for lineno in range(i + 3, i + 3 + n):
            parts = lines[lineno - 1].split()
            if len(parts) < 4:
                raise ValueError(f"{path}:{lineno}: expected 'El x y z' (Angstrom), got {lines[lineno - 1]!r}")
            element = _element(parts[0])
            if element is None:
                raise ValueError(
                    f"{path}:{lineno}: {parts[0]!r} is not an element: give a symbol (H, C, Cl, ...) or atomic number"
                )
            try:
                xyz = [float(v) for v in parts[1:4]]
            except ValueError:
                raise ValueError(f"{path}:{lineno}: the coordinates {parts[1:4]} are not numbers") from None
            elements.append(element)
            positions.append(xyz)
        positions = np.array(positions, np.float64)
        out.append(Input(where, _xyz_smiles(elements, positions), name, tuple(elements), positions))
        i += 2 + n
    return out


def read_sdf(path: Path, text: str) -> list[Input]:
    """SDF/MOL records with 3-D coordinates and explicit hydrogens, taken as given."""
    from rdkit import Chem

    supplier = Chem.SDMolSupplier()
    supplier.SetData(text, removeHs=False)
    out = []
    for k in range(len(supplier)):
        where = f"{path} record {k + 1}"
        mol = supplier[k]
        if mol is None:
            raise ValueError(f"{where}: RDKit cannot read this record (its reason is printed above)")
        name = mol.GetProp("_Name").strip() if mol.HasProp("_Name") else ""
        named = f"{where} ({name})" if name else where
        if mol.GetNumConformers() == 0 or not mol.GetConformer().Is3D():
            raise ValueError(
                f"{named}: no 3-D coordinates (the record is marked 2-D and every z is 0): give 3-D coordinates, "
                "e.g. from RDKit's EmbedMolecule, or the SMILES in a .smi file to have conformers generated"
            )
        implicit = sum(a.GetTotalNumHs() for a in mol.GetAtoms())
        if implicit:
            raise ValueError(
                f"{named}: {implicit} hydrogens are implicit: every atom must be in the record (explicit "
                "hydrogens with coordinates, e.g. RDKit's AddHs(mol, addCoords=True))"
            )
        elements = tuple(a.GetSymbol() for a in mol.GetAtoms())
        positions = np.asarray(mol.GetConformer().GetPositions(), np.float64)
        _check_rdkit_charges(mol, named)
        try:
            smiles = Chem.MolToSmiles(Chem.RemoveHs(mol))
        except Exception:  # RDKit's own exception types: the formula stands in
            smiles = formula(elements)
        out.append(Input(where, smiles, name, elements, positions))
    return out


def _check_rdkit_charges(mol, where: str) -> None:
    charge = sum(a.GetFormalCharge() for a in mol.GetAtoms())
    if charge:
        raise ValueError(
            f"{where}: net charge {charge:+d}: restricted Kohn-Sham here labels neutral closed shells only"
        )
    radicals = sum(a.GetNumRadicalElectrons() for a in mol.GetAtoms())
    if radicals:
        raise ValueError(
            f"{where}: {radicals} radical electrons: restricted Kohn-Sham needs a closed shell (all electrons paired)"
        )


def _basis_lacks(basis, elements: Sequence[str]) -> str | None:
    """PySCF's reason why `basis` (a name) has no functions for one of `elements`, or None."""
    from pyscf import gto

    if not isinstance(basis, str):
        return None  # a basis given as a dict: parse_molecule judges it
    for element in dict.fromkeys(elements):
        try:
            with warnings.catch_warnings():  # PySCF suggests installing basis-set-exchange
                warnings.simplefilter("ignore")
                gto.basis.load(basis, element)
        except Exception as e:  # BasisNotFoundError, or whatever a malformed basis file raises
            reason = " ".join(str(e).split())
            return f"basis {basis!r} has no functions for {element} ({reason})"
    return None


def check_input(inp: Input, basis: str = "sto-3g") -> None:
    """Refuse (ValueError naming the input) what the DFT cannot label: an unparseable SMILES, a charged or open-shell
    molecule, elements the basis lacks, coincident atoms. Ends with papers.qm1b.dft.molecule.parse_molecule, the
    DFT's own check, on the given geometry, or for a SMILES on its atoms placed 3 Angstrom apart on a line (only the
    elements and the electron count matter to that check)."""
    from papers.qm1b.dft.molecule import parse_molecule

    where = inp.describe()
    if inp.geometry_given:
        elements, positions = list(inp.elements), np.asarray(inp.positions, np.float64)
        if positions.shape != (len(elements), 3) or not np.isfinite(positions).all():
            raise ValueError(f"{where}: positions must be {len(elements)} finite (x, y, z) in Angstrom")
        if len(elements) > 1:
            from scipy.spatial import cKDTree

            distance, nearest = cKDTree(positions).query(positions, k=2)
            a = int(np.argmin(distance[:, 1]))
            b, d = int(nearest[a, 1]), float(distance[a, 1])
            if d < MIN_DISTANCE:
                a, b = sorted((a, b))
                raise ValueError(
                    f"{where}: atoms {a + 1} ({elements[a]}) and {b + 1} ({elements[b]}) are {d:.3f} Angstrom apart "
                    f"(less than {MIN_DISTANCE}): the coordinates must be in Angstrom"
                )
    else:
        try:
            mol = molecule_from_smiles(inp.smiles)
        except MoleculeError as e:
            raise ValueError(f"{where}: {e}") from None
        _check_rdkit_charges(mol, where)
        elements = [a.GetSymbol() for a in mol.GetAtoms()]
        positions = np.zeros((len(elements), 3))
        positions[:, 0] = 3.0 * np.arange(len(elements))
    bad = sorted({e for e in elements if _element(e) is None})
    if bad:
        raise ValueError(f"{where}: {bad} are not elements (dummy atoms such as '*' cannot be labelled)")
    electrons = sum(atomic_number(e) for e in elements)
    if electrons % 2:
        raise ValueError(
            f"{where}: {formula(elements)} has {electrons} electrons when neutral: restricted Kohn-Sham needs a "
            "closed shell (an even number of electrons; radicals and ions cannot be labelled)"
        )
    lacks = _basis_lacks(basis, elements)
    if lacks:
        raise ValueError(f"{where}: {formula(elements)}: {lacks}: choose another basis or leave the molecule out")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_molecule(atom_string(elements, positions), basis)
    except ValueError as e:
        raise ValueError(f"{where}: {formula(elements)}: {e}") from None


def read_inputs(paths: str | os.PathLike | Sequence[str | os.PathLike], *, basis: str = "sto-3g") -> list[Input]:
    """The molecules of one or more files (.smi/.txt, .xyz, .sdf/.mol), in order, each checked (check_input).
    Raises ValueError naming the file and line or record of the first problem."""
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not paths:
        raise ValueError("no input files given")
    readers = {**dict.fromkeys(SMILES_SUFFIXES, read_smiles), **dict.fromkeys(XYZ_SUFFIXES, read_xyz)}
    readers.update(dict.fromkeys(SDF_SUFFIXES, read_sdf))
    out = []
    for path in map(Path, paths):
        reader = readers.get(path.suffix.lower())
        if path.is_dir():
            raise ValueError(f"{path} is a directory: give the molecule files themselves")
        if reader is None:
            raise ValueError(f"{path}: unknown extension {path.suffix!r}: allowed are {', '.join(SUFFIXES)}")
        inputs = reader(path, _read_text(path))
        if not inputs:
            raise ValueError(f"{path} holds no molecules")
        for inp in inputs:
            check_input(inp, basis)
        out += inputs
    return out


def _check_dft(dft: dict) -> dict:
    """The DFT settings with the defaults (DFT) filled in. Keys the Labeller does not take, and values it would
    refuse, are refused here, before the first molecule."""
    import inspect

    from papers.qm1b.dft import check_options
    from papers.qm1b.dft.pipeline import Labeller

    allowed = [k for k in inspect.signature(Labeller).parameters if k not in ("workers", "prefetch")]
    unknown = sorted(set(dft) - set(allowed))
    if unknown:
        raise ValueError(f"dft keys {unknown} are unknown: allowed are {allowed}")
    dft = {**DFT, **dft}
    check_options(dft["xc"], dft["dtype"], dft["iterations"], dft["grid_level"])
    return dft


def label(
    inputs: Sequence[Input],
    out_path: str | os.PathLike,
    *,
    conformers: int = 1,
    seed: int = 0,
    dft: dict | None = None,
    run_batch: Callable | None = None,
    batch_conformers: int = 16,
    workers: int | None = None,
    versions: dict | None = None,
    show_progress: bool = True,
) -> dict:
    """Label `inputs` (read_inputs) and write their rows, QM1B's columns (generate.COLUMNS), to `out_path`.

    SMILES inputs get `conformers` ETKDG conformers each (seeded by `seed` and the input's index, as
    generate.conformer_seed); a given geometry is one conformer. `dft`: the DFT options of
    papers.qm1b.dft.run_dft_batch (defaults DFT). Conformers are labelled as the generator labels a part (batches of
    up to `batch_conformers` across inputs, by size; papers.qm1b.dft.pipeline.Labeller with `workers` processes
    preparing integrals ahead); `run_batch(atoms, **dft) -> list[dict]` replaces the Labeller (tests pass a
    stand-in). Every input is checked before the first DFT; an input whose embedding or DFT raises is a counted drop.
    Returns the summary: out, inputs, conformers (attempted), rows, dropped (by reason), errors ([{molecule, input,
    smiles, error}]), seconds."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("no molecules to label: the inputs are empty")
    if not isinstance(conformers, int) or conformers < 1:
        raise ValueError(f"conformers={conformers!r} must be an integer >= 1")
    if not isinstance(batch_conformers, int) or batch_conformers < 1:
        raise ValueError(f"batch_conformers={batch_conformers!r} must be an integer >= 1")
    dft = _check_dft(dft or {})
    for inp in inputs:
        check_input(inp, dft["basis"])
    out_path = Path(out_path)
    if out_path.is_dir():
        raise ValueError(f"{out_path} is a directory: give the Parquet file to write, e.g. {out_path / 'out.parquet'}")
    out_path.parent.mkdir(parents=True, exist_ok=True)  # fail on an unwritable place now, not after the DFT
    from core.progress import progress

    sel = Selection(seed=seed)
    counts = [1 if inp.geometry_given else conformers for inp in inputs]
    bar = progress(total=sum(counts), desc="label", unit="conf", disable=not show_progress)
    t0 = time.perf_counter()
    molecules = []
    for i, inp in enumerate(inputs):
        m = {"index": i, "smiles": inp.smiles, "seed": -1 if inp.geometry_given else conformer_seed(sel, i)}
        try:
            if inp.geometry_given:
                m["elements"], m["positions"] = list(inp.elements), np.asarray(inp.positions, np.float64)[None]
            else:
                m["elements"], m["positions"] = embed_conformers(inp.smiles, conformers, m["seed"])
        except MoleculeError as e:  # ETKDG could not embed the conformers
            m["reason"], m["error"] = e.reason, str(e)
        except Exception as e:  # any other failure of one input: a counted drop, the others are still labelled
            m["reason"], m["error"] = f"error:{type(e).__name__}", f"{type(e).__name__}: {e}"
        molecules.append(m)
    ((part, results),) = label_parts(
        [Part(molecules).batch(batch_conformers)], dft, workers=workers, run_batch=run_batch
    )
    rows, _, dropped, errors = part_rows(part, results, conformers)
    for e in errors:
        e["input"] = inputs[e["molecule"]].describe()
    bar.update(sum(counts))
    bar.close()
    summary = {
        "out": str(out_path),
        "inputs": len(inputs),
        "conformers": sum(counts),
        "rows": len(rows),
        "dropped": dict(dropped),
        "errors": errors,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    metadata = {
        "dft": dft,
        "conformers": conformers,
        "seed": seed,
        "inputs": [{"molecule": i, "input": inp.where, "name": inp.name} for i, inp in enumerate(inputs)],
        "summary": summary,
        "versions": versions or {},
    }
    _write_parquet(out_path, rows, metadata)
    return summary


def format_summary(summary: dict) -> str:
    lines = [
        f"wrote {summary['rows']} rows ({', '.join(COLUMNS)}) to {summary['out']}: {summary['conformers']} "
        f"conformers of {summary['inputs']} inputs in {summary['seconds']:.1f} s"
    ]
    if summary["dropped"]:
        lines.append("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["dropped"].items())))
    lines += [f"  molecule {e['molecule']} ({e['input']}, {e['smiles']}): {e['error']}" for e in summary["errors"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m papers.qm1b.label", description=__doc__.split("\n\n")[0], epilog="inputs: " + " ".join(SUFFIXES)
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help=f"molecule files ({', '.join(SUFFIXES)})")
    parser.add_argument("-o", "--out", required=True, metavar="OUT.parquet", help="the Parquet file to write")
    parser.add_argument("--conformers", type=int, default=1, help="ETKDG conformers per SMILES (default: 1)")
    parser.add_argument("--seed", type=int, default=0, help="the conformers' seed (default: 0)")
    parser.add_argument("--basis", default=DFT["basis"], help="a PySCF basis name (default: %(default)s)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default=DFT["dtype"], help="(default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=DFT["iterations"], help="most SCF iterations (default: 20)")
    parser.add_argument("--density-fit", action="store_true", help="fit the ERIs as PySCF's density_fit() does")
    parser.add_argument("--fixed-iterations", action="store_true", help="no early stop: QM1B's fixed iterations")
    parser.add_argument("--workers", type=int, default=None, help="processes preparing integrals (default: the CPUs)")
    args = parser.parse_args(argv)
    if args.conformers < 1:
        parser.error(f"--conformers {args.conformers} must be at least 1")
    dft = {**DFT, "basis": args.basis, "dtype": args.dtype, "iterations": args.iterations}
    dft.update(density_fit=args.density_fit, early_stop=not args.fixed_iterations)
    from core.runner import versions

    try:  # every ValueError comes from the checks before the first DFT (a failing molecule is a counted drop)
        _check_dft(dft)
        inputs = read_inputs(args.inputs, basis=args.basis)
        options = {"conformers": args.conformers, "seed": args.seed, "dft": dft, "workers": args.workers}
        summary = label(inputs, args.out, **options, versions=versions())
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Label your own molecules with the QM1B DFT, into the generator's Parquet columns (papers.qm1b.generate).

    python -m papers.qm1b.label mols.smi more.xyz -o labelled.parquet [--conformers 4] [--seed 0]
                                [--basis sto-3g] [--dtype float32|float64] [--iterations 20] [--density-fit]
                                [--fixed-iterations] [--workers N] [--molecules-per-part 64]
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

Everything is checked before any work, and a bad value stops the command naming it: every setting (check_settings:
conformers, seed, workers, part size, the DFT options, a basis PySCF knows), the output (a `.parquet` path in a
directory this process can write: a file is created and removed there), then every input with its file, line or
record: the restricted Kohn-Sham DFT needs a neutral closed shell (an even number of electrons, no net charge, no
radicals) of elements the basis covers (PySCF's STO-3G: H to I; unlike the QM1B generator any such element is
allowed), and the largest input's exact ERIs must fit (papers.qm1b.dft.check_exact_eri; else --density-fit).
During labelling, an input whose conformers cannot be embedded or whose DFT raises is a counted drop (the
exception's last line is in the summary's `errors`), and rows are dropped by QM1B's rules (std > 0.01 eV, zero
gap), as in the generator; errors that are not one input's stop the command as they stop the generator (out of
memory, a dead worker process, a part whose inputs all fail with one exception type).

Labels are written as the generator writes a shard (papers.qm1b.generate.write_parts): parts of
`--molecules-per-part` inputs, each a Parquet file and then a manifest in `OUT.parquet.parts/`, so a killed or
failed command loses at most the part it was labelling. Rerunning the same command (same inputs, settings and
labelling code: label_key) resumes after the last finished part; a rerun with other inputs, settings or code is
refused while those parts exist. At the end the parts are merged into OUT.parquet (written atomically, one part in
memory at a time) and the parts folder is removed.

One module over 400 lines: the command is one path from a file to Parquet rows (read and check the inputs, run
the DFT in parts, apply QM1B's drop rules, merge, summarise), each step the size of a function.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.data.molecules import MoleculeError, embed_conformers, molecule_from_smiles
from core.io import atomic_write
from papers.qm1b.dft import basis_aos, check_exact_eri, is_systematic
from papers.qm1b.generate import (
    COLUMNS,
    Part,
    Selection,
    atom_string,
    atomic_number,
    conformer_seed,
    remove_strays,
    shard_lock,
    write_parts,
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
MOLECULES_PER_PART = 64  # inputs labelled and written together: the unit of resumption and of the batches' sorting


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


def check_input(inp: Input, basis: str = "sto-3g") -> int:
    """The input's AOs in `basis`, or a ValueError naming the input for what the DFT cannot label: an unparseable
    SMILES, a charged or open-shell molecule, elements the basis lacks, coincident atoms. Ends with
    papers.qm1b.dft.molecule.parse_molecule, the DFT's own check, on the given geometry, or for a SMILES on its
    atoms placed 3 Angstrom apart on a line (only the elements and the electron count matter to that check)."""
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
    try:
        basis_aos(basis, elements)
    except ValueError as e:
        raise ValueError(f"{where}: {formula(elements)}: {e}: choose another basis or leave the molecule out") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return parse_molecule(atom_string(elements, positions), basis).nao_nr()
    except ValueError as e:
        raise ValueError(f"{where}: {formula(elements)}: {e}") from None


def read_inputs(paths: str | os.PathLike | Sequence[str | os.PathLike], *, basis: str = "sto-3g") -> list[Input]:
    """The molecules of one or more files (.smi/.txt, .xyz, .sdf/.mol), in order, each checked (check_input) against
    `basis` (first checked to be a basis PySCF knows). Raises ValueError naming the file and line or record of the
    first problem."""
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not paths:
        raise ValueError("no input files given")
    basis_aos(basis, ())
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
    """The DFT settings with the defaults (DFT) filled in. Keys the Labeller does not take, values it would refuse
    and a basis PySCF does not know are refused here, before the first molecule."""
    import inspect

    from papers.qm1b.dft import check_options
    from papers.qm1b.dft.pipeline import Labeller

    allowed = [k for k in inspect.signature(Labeller).parameters if k not in ("workers", "prefetch")]
    unknown = sorted(set(dft) - set(allowed))
    if unknown:
        raise ValueError(f"dft keys {unknown} are unknown: allowed are {allowed}")
    dft = {**DFT, **dft}
    check_options(dft["xc"], dft["dtype"], dft["iterations"], dft["grid_level"])
    basis_aos(dft["basis"], ())
    return dft


def _check_output(out: str | os.PathLike) -> Path:
    """`out` as a Path, refused (ValueError naming it) unless it is a .parquet file in a directory this process can
    write: the directory is created if missing, and a temporary file is created in it and removed."""
    out = Path(out)
    if out.suffix != ".parquet":
        raise ValueError(f"the output {out} must be a .parquet file (got the suffix {out.suffix!r})")
    if out.is_dir():
        raise ValueError(f"{out} is a directory: give the Parquet file to write, e.g. {out / 'out.parquet'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(
            f"the output {out} cannot be written: creating a file in {out.parent} failed ({e.strerror or e})"
        ) from None
    return out


def check_settings(
    out: str | os.PathLike,
    *,
    conformers: int = 1,
    seed: int = 0,
    dft: dict | None = None,
    workers: int | None = None,
    molecules_per_part: int = MOLECULES_PER_PART,
    batch_conformers: int = 16,
) -> tuple[Path, dict]:
    """Check every setting of `label` and the output's place before any work (ValueError naming the bad value and
    what is allowed); returns the output's Path and the DFT settings with their defaults."""
    for name, value, low in [
        ("conformers", conformers, 1),
        ("seed", seed, 0),
        ("molecules_per_part", molecules_per_part, 1),
        ("batch_conformers", batch_conformers, 1),
    ]:
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    if workers is not None and (not isinstance(workers, int) or workers < 0):
        raise ValueError(
            f"workers={workers!r} must be an integer >= 0 (processes preparing integrals; 0: in this process) or "
            "None (one per CPU)"
        )
    dft = _check_dft(dft or {})
    return _check_output(out), dft


def label_key(inputs: Sequence[Input], conformers: int, seed: int, dft: dict, code: str) -> str:
    """The key of a labelling: its inputs (SMILES, or elements and coordinates), conformers, seed, DFT settings and
    the labelling code's fingerprint. A rerun resumes the parts of the same key only."""
    blob = json.dumps({"conformers": conformers, "seed": seed, "dft": dft, "code": code}, sort_keys=True)
    h = hashlib.sha256(blob.encode())
    for inp in inputs:
        h.update(json.dumps([inp.smiles, inp.elements]).encode())
        if inp.geometry_given:
            h.update(np.ascontiguousarray(inp.positions, np.float64).tobytes())
    return h.hexdigest()[:12]


def parts_folder(out: Path) -> Path:
    """Where `label` writes the parts of `out` until it merges them: OUT.parquet.parts next to it."""
    return out.with_name(out.name + ".parts")


def _molecules(inputs: Sequence[Input], indices: Sequence[int], conformers: int, seed: int) -> list[dict]:
    """Part molecules (generate.Part) of some inputs: a given geometry as one conformer, a SMILES's seeded ETKDG
    conformers, or the reason and error why they could not be embedded (a counted drop)."""
    sel = Selection(seed=seed)
    molecules = []
    for i in indices:
        inp = inputs[i]
        m = {"index": i, "smiles": inp.smiles, "seed": -1 if inp.geometry_given else conformer_seed(sel, i)}
        try:
            if inp.geometry_given:
                m["elements"], m["positions"] = list(inp.elements), np.asarray(inp.positions, np.float64)[None]
            else:
                m["elements"], m["positions"] = embed_conformers(inp.smiles, conformers, m["seed"])
        except MoleculeError as e:  # ETKDG could not embed the conformers
            m["reason"], m["error"] = e.reason, str(e)
        except Exception as e:  # any other failure of one input: a counted drop, unless the machine failed
            if is_systematic(e):
                raise
            m["reason"], m["error"] = f"error:{type(e).__name__}", f"{type(e).__name__}: {e}"
        molecules.append(m)
    return molecules


def _merge_parts(folder: Path, manifest: dict, out: Path, metadata: dict) -> None:
    """The manifest's parts, in order, into one Parquet file `out` (atomically) whose schema carries `metadata`;
    one part in memory at a time."""
    import pyarrow.parquet as pq

    files = [folder / p["file"] for p in manifest["parts"]]
    schema = pq.read_schema(files[0]).with_metadata({k: json.dumps(v) for k, v in metadata.items()})

    def write(f) -> None:
        with pq.ParquetWriter(f, schema) as writer:
            for file in files:
                writer.write_table(pq.read_table(file))

    atomic_write(out, write)


def label(
    inputs: Sequence[Input],
    out_path: str | os.PathLike,
    *,
    conformers: int = 1,
    seed: int = 0,
    dft: dict | None = None,
    run_batch: Callable | None = None,
    batch_conformers: int = 16,
    molecules_per_part: int = MOLECULES_PER_PART,
    workers: int | None = None,
    versions: dict | None = None,
    show_progress: bool = True,
    code: str | None = None,
) -> dict:
    """Label `inputs` (read_inputs) and write their rows, QM1B's columns (generate.COLUMNS), to `out_path`.

    SMILES inputs get `conformers` ETKDG conformers each (seeded by `seed` and the input's index, as
    generate.conformer_seed); a given geometry is one conformer. `dft`: the DFT options of
    papers.qm1b.dft.run_dft_batch (defaults DFT). Inputs are labelled in parts of `molecules_per_part` as the
    generator labels a shard (generate.write_parts into parts_folder(out_path), resumed by a rerun of the same
    label_key; module docstring): batches of up to `batch_conformers` across a part's inputs, by size,
    papers.qm1b.dft.pipeline.Labeller with `workers` processes preparing integrals ahead; `run_batch(atoms, **dft)
    -> list[dict]` replaces the Labeller (tests pass a stand-in). `code`: the labelling code's fingerprint
    (core.provenance.callable_fingerprint of this function by default). Every setting, the output's place and every
    input are checked before any work; an input whose embedding or DFT raises is a counted drop. Returns the
    summary: out, inputs, conformers (attempted), rows, dropped (by reason), errors ([{molecule, input, smiles,
    error}]), seconds (labelling, over all runs), resumed (inputs labelled by earlier runs)."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("no molecules to label: the inputs are empty")
    settings = {"conformers": conformers, "seed": seed, "dft": dft, "workers": workers}
    settings.update(molecules_per_part=molecules_per_part, batch_conformers=batch_conformers)
    out, dft = check_settings(out_path, **settings)
    aos = [check_input(inp, dft["basis"]) for inp in inputs]
    if not dft["density_fit"]:
        largest = int(np.argmax(aos))
        try:
            check_exact_eri(aos[largest], dft["dtype"])
        except ValueError as e:
            raise ValueError(f"{inputs[largest].describe()}: {e} (--density-fit), or leave the molecule out") from None
    from core.progress import progress
    from core.provenance import callable_fingerprint

    code = code or callable_fingerprint(label)  # the code this command can reach (core.provenance)
    key = label_key(inputs, conformers, seed, dft, code)
    folder = parts_folder(out)
    folder.mkdir(exist_ok=True)
    with shard_lock(folder):  # one writer of these parts; the clean-up, the work, the merge and the removal are its
        manifest_path = folder / "manifest.json"
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text())
        else:
            manifest = {"key": key, "code": code, "inputs": len(inputs), "done": [], "parts": [], "rows": 0}
            manifest.update(dropped={}, errors=[], seconds=0.0)
        if manifest["key"] != key:
            raise ValueError(
                f"{folder} holds the parts of an unfinished labelling of other inputs, settings or code (key "
                f"{manifest['key']}; this command's is {key}): rerun that command to finish it, or delete {folder} "
                "to start afresh"
            )
        remove_strays(folder, manifest)
        for stray in out.parent.glob(f".{out.name}.*.tmp"):  # a merge that was killed
            stray.unlink()
        done = set(manifest["done"])
        todo = [i for i in range(len(inputs)) if i not in done]
        chunks = [todo[i : i + molecules_per_part] for i in range(0, len(todo), molecules_per_part)]
        counts = [1 if inp.geometry_given else conformers for inp in inputs]
        bar = progress(
            total=sum(counts),
            initial=sum(counts[i] for i in done),
            desc="label",
            unit="conf",
            disable=not show_progress,
        )
        parts = (Part(_molecules(inputs, chunk, conformers, seed)).batch(batch_conformers) for chunk in chunks)
        metadata = {"dft": dft, "conformers": conformers, "seed": seed, "code": code, "versions": versions or {}}
        options = {"conformers": conformers, "metadata": metadata, "workers": workers, "run_batch": run_batch}
        write_parts(folder, manifest, parts, dft, bar=bar, **options)
        bar.close()
        summary = {
            "out": str(out),
            "inputs": len(inputs),
            "conformers": sum(counts),
            "rows": manifest["rows"],
            "dropped": manifest["dropped"],
            "errors": [{**e, "input": inputs[e["molecule"]].describe()} for e in manifest["errors"]],
            "seconds": round(manifest["seconds"], 3),
            "resumed": len(done),
        }
        metadata["inputs"] = [{"molecule": i, "input": inp.where, "name": inp.name} for i, inp in enumerate(inputs)]
        _merge_parts(folder, manifest, out, {**metadata, "summary": summary})
        shutil.rmtree(folder)
    return summary


def format_summary(summary: dict) -> str:
    resumed = f", {summary['resumed']} of them labelled by an earlier run" if summary.get("resumed") else ""
    lines = [
        f"wrote {summary['rows']} rows ({', '.join(COLUMNS)}) to {summary['out']}: {summary['conformers']} "
        f"conformers of {summary['inputs']} inputs{resumed} in {summary['seconds']:.1f} s"
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
    parser.add_argument("--seed", type=int, default=0, help="the conformers' seed, >= 0 (default: 0)")
    parser.add_argument("--basis", default=DFT["basis"], help="a PySCF basis name (default: %(default)s)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default=DFT["dtype"], help="(default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=DFT["iterations"], help="most SCF iterations (default: 20)")
    parser.add_argument("--density-fit", action="store_true", help="fit the ERIs as PySCF's density_fit() does")
    parser.add_argument("--fixed-iterations", action="store_true", help="no early stop: QM1B's fixed iterations")
    parser.add_argument("--workers", type=int, default=None, help="processes preparing integrals (default: the CPUs)")
    parser.add_argument(
        "--molecules-per-part",
        type=int,
        default=MOLECULES_PER_PART,
        help="inputs labelled and written together; a rerun resumes after the last part written (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    dft = {**DFT, "basis": args.basis, "dtype": args.dtype, "iterations": args.iterations}
    dft.update(density_fit=args.density_fit, early_stop=not args.fixed_iterations)
    settings = {"conformers": args.conformers, "seed": args.seed, "dft": dft, "workers": args.workers}
    settings["molecules_per_part"] = args.molecules_per_part
    from core.context import versions

    try:  # every ValueError comes from the checks before the first DFT (a failing molecule is a counted drop)
        check_settings(args.out, **settings)
        inputs = read_inputs(args.inputs, basis=args.basis)
        summary = label(inputs, args.out, **settings, versions=versions())
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

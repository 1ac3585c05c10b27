"""The QM1B-style dataset generator: SMILES -> filtered molecules -> ETKDG conformers -> batched DFT -> Parquet.

QM1B (Mathiasen et al. 2023) took GDB-11 SMILES of 9-11 heavy atoms (C, N, O, F only, at most 14 H), made up to
1000 RDKit conformers each and labelled every conformer with B3LYP/STO-3G in float32 (20 fixed SCF iterations).
Offline we draw SMILES from QM9 (qm9pack; 9 heavy atoms) or RDKit's NCI sample (9-11), with QM1B's filters.

Work is split into shards by molecule (molecule i of the selection goes to shard i mod num_shards), so many
processes or SLURM jobs can each take one. The sharding is part of the dataset: a dataset directory holds one
sharding (`shard_k_of_N` folders with one N), a run asking for another N is refused before it starts, and
`read_dataset` reads exactly shards 0..N-1, refusing a missing or unfinished one. A shard writes Parquet parts
atomically (temporary file, then rename) and after each part a manifest (also atomic) that lists the molecules done,
the parts and the counts of dropped rows by reason. A killed shard restarts after its last listed part: parts not in
the manifest are deleted and redone, so nothing is lost or written twice. One process writes a shard at a time (an
exclusive `flock` on the shard's `.lock`; a second writer fails at once). A molecule whose labelling raises is a
counted drop (reason `error:<exception type>`, its SMILES and the exception's last line in the manifest's `errors`),
so one bad molecule cannot stop a shard on every resume.

Errors that are not one molecule's stop the run instead, with nothing of the part being labelled written or marked
done, so a rerun redoes it: settings no molecule can be labelled with, refused before any work (check_dft: a basis
PySCF does not know or that lacks one of QM1B's elements, exact ERIs too large for the largest molecule the
selection admits); errors of the machine (papers.qm1b.dft.is_systematic: out of memory, a worker process that died,
a full disk), raised where any other exception is recorded as a drop; and a part of at least MIN_FAILED_PART
molecules that all failed with one exception type (part_rows), whose cause is the settings, the environment or the
code. A part of one molecule that fails is a drop, as one bad molecule must not stop every resume.

Rows follow QM1B's columns: smile, atoms, z, energy (eV), homo, lumo (eV), N (number of AOs), std (eV), y (gap, eV),
pos (Bohr, flattened), plus the molecule's source index and its conformer seed. Rows with std > 0.01 eV or a zero
gap are dropped and counted, as QM1B did.

The selection and the checks made before any work (Selection, ELEMENTS, check_dft) live in papers.qm1b.checks,
without JAX, so that the run's config refuses bad settings when it is validated; they are re-exported here.

One module over 400 lines: the generator's stages (select, embed, label, write shards) hand each other the same
rows and fingerprints; its shard storage (shard_name to shard_lock) is the seam to split along should it grow.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from core.data.molecules import (
    ANGSTROM_BOHR,
    HARTREE_EV,
    MoleculeError,
    embed_conformers,
    molecule_from_smiles,
    nci_smiles,
    qm9_smiles,
)
from core.io import atomic_write, atomic_write_json, exclusive_lock
from core.progress import progress
from papers.qm1b.checks import (  # re-exported here: papers.qm1b.generate.Selection, ELEMENTS, check_dft
    ELEMENTS,
    SOURCES,  # noqa: F401
    Selection,
    check_dft,
    is_systematic,
)

MIN_FAILED_PART = 2  # molecules: a part of at least this many, all failing with one exception type, stops the run


def atomic_number(symbol: str) -> int:
    """The atomic number of an element symbol ("C" -> 6), any element (rows of user molecules, papers.qm1b.label)."""
    from rdkit import Chem

    return Chem.GetPeriodicTable().GetAtomicNumber(symbol)


MAX_STD_EV = 0.01  # QM1B's row filter: papers/qm1b/REFERENCES.md [3]
COLUMNS = ("smile", "atoms", "z", "energy", "homo", "lumo", "N", "std", "y", "pos", "molecule", "conformer_seed")


def check_molecule(smiles: str, sel: Selection) -> None:
    """QM1B's filters; raises MoleculeError with the reason a molecule is skipped."""
    mol = molecule_from_smiles(smiles)
    symbols = [a.GetSymbol() for a in mol.GetAtoms()]
    bad = sorted(set(symbols) - set(ELEMENTS))
    if bad:
        raise MoleculeError("element", f"{smiles}: elements {bad} are outside {ELEMENTS}")
    heavy = sum(s != "H" for s in symbols)
    if not sel.min_heavy <= heavy <= sel.max_heavy:
        raise MoleculeError("heavy_atoms", f"{smiles}: {heavy} heavy atoms, not in [{sel.min_heavy}, {sel.max_heavy}]")
    if symbols.count("H") > sel.max_hydrogens:
        raise MoleculeError("hydrogens", f"{smiles}: {symbols.count('H')} H > {sel.max_hydrogens}")
    if any(a.GetFormalCharge() for a in mol.GetAtoms()):
        raise MoleculeError("charged", f"{smiles}: charged atoms (restricted Kohn-Sham of neutral closed shells only)")
    if any(a.GetNumRadicalElectrons() for a in mol.GetAtoms()) or sum(atomic_number(s) for s in symbols) % 2:
        raise MoleculeError("open_shell", f"{smiles}: open shell (restricted Kohn-Sham needs paired electrons)")


def select_molecules(sel: Selection, smiles: Sequence[str] | None = None) -> tuple[list[tuple[int, str]], Counter]:
    """The first `sel.molecules` SMILES of the source, in a seeded random order, that pass QM1B's filters.
    Returns ([(index in the source, smiles)], counts of skipped SMILES by reason)."""
    if smiles is None:
        smiles = qm9_smiles() if sel.source == "qm9" else nci_smiles()
    order = np.random.default_rng([sel.seed, 11]).permutation(len(smiles))
    chosen, skipped = [], Counter()
    for i in order:
        if len(chosen) == sel.molecules:
            break
        try:
            check_molecule(smiles[i], sel)
        except MoleculeError as e:
            skipped[e.reason] += 1
            continue
        chosen.append((int(i), smiles[i]))
    if len(chosen) < sel.molecules:
        raise ValueError(
            f"only {len(chosen)} of the {len(smiles)} {sel.source} SMILES pass the filters; asked for "
            f"molecules={sel.molecules} (skipped: {dict(skipped)})"
        )
    return chosen, skipped


def conformer_seed(sel: Selection, molecule: int) -> int:
    """The recorded ETKDG seed of a molecule: a function of the selection seed and the molecule's source index."""
    return int(np.random.SeedSequence([sel.seed, molecule]).generate_state(1)[0] & 0x7FFFFFFF)


def atom_string(elements: Sequence[str], positions: np.ndarray) -> str:
    """A PySCF atom string (Angstrom) of one conformer."""
    return "; ".join(f"{e} {x:.10f} {y:.10f} {z:.10f}" for e, (x, y, z) in zip(elements, positions, strict=True))


def conformer_rows(smiles: str, molecule: int, seed: int, elements, positions, results) -> tuple[list[dict], Counter]:
    """Rows of QM1B's columns from one molecule's conformers and their DFT results; drops by QM1B's rules."""
    rows, dropped = [], Counter()
    for pos, r in zip(positions, results, strict=True):
        if not (np.isfinite(r["energy"]) and np.isfinite(r["gap"])):
            dropped["not_finite"] += 1
            continue
        if r["energy_std"] > MAX_STD_EV:
            dropped["std"] += 1
            continue
        if not r["gap"] > 0:
            dropped["zero_gap"] += 1
            continue
        rows.append(
            {
                "smile": smiles,
                "atoms": "".join(elements),
                "z": [atomic_number(e) for e in elements],
                "energy": float(r["energy"]) * HARTREE_EV,
                "homo": float(r["homo"]),
                "lumo": float(r["lumo"]),
                "N": int(r["n_ao"]),
                "std": float(r["energy_std"]),
                "y": float(r["gap"]),
                "pos": (np.asarray(pos) * ANGSTROM_BOHR).reshape(-1).tolist(),
                "molecule": molecule,
                "conformer_seed": seed,
            }
        )
    return rows, dropped


def labelling_fingerprint(root: Path | None = None) -> str:
    """12 hex digits identifying the labelling code: what `generate_shard` can reach (core.provenance's
    callable_fingerprint: the DFT, the generator, the molecule sources and conformers, atomic writes; under `root`,
    the repository by default). A dataset is keyed by it, so data labelled by other code is never reused, and code
    that only reads the dataset (SchNet, the validation) is not in it."""
    from core.provenance import REPO_ROOT, callable_fingerprint

    return callable_fingerprint(generate_shard, root or REPO_ROOT)


def dataset_key(sel: Selection, dft: dict, code: str | None = None) -> str:
    """The key of a labelled dataset: its selection, its DFT settings and the labelling code's fingerprint (this
    code's by default), so a dataset labelled by other code lives under another key and is recomputed."""
    code = code or labelling_fingerprint()
    blob = json.dumps({"selection": asdict(sel), "dft": dft, "code": code}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _write_parquet(path: Path, rows: list[dict], metadata: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("smile", pa.string()),
            ("atoms", pa.string()),
            ("z", pa.list_(pa.int8())),
            ("energy", pa.float64()),
            ("homo", pa.float32()),
            ("lumo", pa.float32()),
            ("N", pa.int16()),
            ("std", pa.float32()),
            ("y", pa.float32()),
            ("pos", pa.list_(pa.float32())),
            ("molecule", pa.int64()),
            ("conformer_seed", pa.int64()),
        ],
        metadata={k: json.dumps(v) for k, v in metadata.items()},
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    atomic_write(path, lambda f: pq.write_table(table, f))


def shard_name(shard: int, num_shards: int) -> str:
    return f"shard_{shard:05d}_of_{num_shards:05d}"


def shardings(directory: Path) -> dict[int, list[str]]:
    """num_shards -> the shard folders of that sharding under a dataset directory."""
    out: dict[int, list[str]] = {}
    for d in sorted(Path(directory).glob("shard_*_of_*")):
        match = re.fullmatch(r"shard_(\d+)_of_(\d+)", d.name)
        if match and d.is_dir():
            out.setdefault(int(match[2]), []).append(d.name)
    return out


def check_sharding(directory: Path, num_shards: int) -> None:
    """Refuse a dataset directory that holds another sharding than `num_shards` (its molecules would be labelled
    twice, and read twice)."""
    other = {n: names for n, names in shardings(directory).items() if n != num_shards}
    if other:
        held = "; ".join(f"num_shards={n}: {', '.join(names)}" for n, names in sorted(other.items()))
        raise ValueError(
            f"{directory} holds another sharding of this dataset ({held}); this run asks for num_shards={num_shards}. "
            f"Run with num_shards={min(other)} to finish or read it, or choose another output_root"
        )


def read_shard(directory: Path):
    """The rows of one shard folder as a pyarrow Table, in manifest order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest = Path(directory) / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"no manifest in {directory}: the shard was never started")
    parts = json.loads(manifest.read_text())["parts"]
    if not parts:
        raise FileNotFoundError(f"{directory} has no generated parts yet")
    return pa.concat_tables([pq.read_table(Path(directory) / part["file"]) for part in parts])


def read_dataset(directory: Path, num_shards: int):
    """The rows of shards 0 .. num_shards-1 under a dataset directory, in shard and manifest order. Refuses another
    sharding in the directory, a missing shard and an unfinished one (naming them)."""
    import pyarrow as pa

    check_sharding(directory, num_shards)
    problems, tables = [], []
    for k in range(num_shards):
        folder = Path(directory) / shard_name(k, num_shards)
        if not (folder / "manifest.json").exists():
            problems.append(f"{folder.name} missing")
            continue
        manifest = json.loads((folder / "manifest.json").read_text())
        total = manifest.get("molecules", len(manifest["done"]))
        if len(manifest["done"]) < total:
            problems.append(f"{folder.name} unfinished ({len(manifest['done'])} of {total} molecules)")
        elif manifest["parts"]:
            tables.append(read_shard(folder))
    if problems:
        raise ValueError(f"{directory}: the {num_shards}-shard dataset is incomplete: {'; '.join(problems)}")
    if not tables:
        raise FileNotFoundError(f"no generated rows under {directory}")
    return pa.concat_tables(tables)


def shard_lock(folder: Path):
    """Hold an exclusive lock on a shard folder while writing it; a second writer fails at once, naming the lock."""
    path = Path(folder) / ".lock"
    return exclusive_lock(
        path,
        lambda: RuntimeError(
            f"{folder} is being written by another process (it holds {path}): wait for it to finish or stop it"
        ),
    )


@dataclass
class Part:
    """Molecules labelled together and written as one unit. `molecules`: dicts with index, smiles, seed and either
    elements and positions [conformers, atoms, 3] (Angstrom) or the reason (and error) it was dropped before the
    DFT; `conformers`: (molecule slot, atom string) for each conformer; `batches`: conformer slots per DFT batch."""

    molecules: list[dict]
    conformers: list[tuple[int, str]] = field(default_factory=list)
    batches: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for slot, m in enumerate(self.molecules):
            if "reason" not in m:
                self.conformers += [(slot, atom_string(m["elements"], p)) for p in m["positions"]]

    def batch(self, size: int) -> Part:
        """Batch the conformers across molecules, sorted by atom count (stable): a batch holds conformers of similar
        size (the SCF pads a batch to its largest). The batches depend only on the part's molecules, so a resumed
        run batches (and, in float32, rounds) as an uninterrupted one."""
        order = sorted(
            range(len(self.conformers)), key=lambda j: len(self.molecules[self.conformers[j][0]]["elements"])
        )
        self.batches = [order[i : i + size] for i in range(0, len(order), size)] or [[]]
        return self


def _embed_part(chunk: list[tuple[int, str]], sel: Selection) -> list[dict]:
    """A generator part's molecules with their seeded ETKDG conformers, or why they could not be embedded."""
    molecules = []
    for index, smiles in chunk:
        seed = conformer_seed(sel, index)
        m = {"index": index, "smiles": smiles, "seed": seed}
        try:
            m["elements"], m["positions"] = embed_conformers(smiles, sel.conformers, seed)
        except MoleculeError as e:
            m["reason"] = e.reason
        except Exception as e:  # a counted drop, as for the DFT, unless the machine failed
            if is_systematic(e):
                raise
            m["reason"], m["error"] = f"error:{type(e).__name__}", _last_line(e)
        molecules.append(m)
    return molecules


def _last_line(e: BaseException) -> str:
    return traceback.format_exception_only(type(e), e)[-1].strip()


def _run_batches(run_batch: Callable, dft: dict, batches: Iterator[list[str]]) -> Iterator[list]:
    """The Labeller's contract (a result or an exception per conformer) for a plain `run_batch(atoms, **dft)`: a
    batch that raises is rerun one conformer at a time, so the exception lands on the conformer that caused it; an
    error of the machine (papers.qm1b.dft.is_systematic) is raised, as the Labeller raises it."""
    for atoms in batches:
        try:
            yield list(run_batch(atoms, **dft)) if atoms else []
            continue
        except Exception as e:
            if is_systematic(e):
                raise
        results = []
        for a in atoms:
            try:
                results.append(run_batch([a], **dft)[0])
            except Exception as e:
                if is_systematic(e):
                    raise
                results.append(e)
        yield results


def label_parts(
    parts: Iterable[Part], dft: dict, *, workers: int | None = None, run_batch: Callable | None = None
) -> Iterator[tuple[Part, dict]]:
    """(part, {conformer slot: result dict or exception}) for each part, in order. The parts' batches are labelled by
    papers.qm1b.dft.pipeline.Labeller (`dft`: its DFT options), which reads ahead into the next part, so its
    integrals are being prepared while this part's last SCF runs; `run_batch(atoms, **dft)` replaces it (tests)."""
    pending: deque[Part] = deque()

    def batches() -> Iterator[list[str]]:
        for part in parts:  # planned lazily, as the labeller reads ahead
            pending.append(part)
            for b in part.batches:
                yield [part.conformers[j][1] for j in b]

    if run_batch is not None:
        labeller, stream = nullcontext(), _run_batches(run_batch, dft, batches())
    else:
        from papers.qm1b.dft.pipeline import Labeller

        labeller, stream = Labeller(**dft, workers=workers), None
    with labeller:
        if stream is None:
            stream = labeller.map(batches())
        for first in stream:
            part = pending.popleft()  # planned before its first batch was read
            labelled = [first] + [next(stream) for _ in part.batches[1:]]
            pairs = zip(part.batches, labelled, strict=True)
            yield part, {j: r for b, rs in pairs for j, r in zip(b, rs, strict=True)}


def generate_shard(
    sel: Selection,
    dft: dict,
    directory: Path,
    *,
    shard: int = 0,
    num_shards: int = 1,
    molecules_per_part: int = 8,
    batch_conformers: int = 16,
    workers: int | None = None,
    run_batch: Callable | None = None,
    versions: dict | None = None,
    show_progress: bool = True,
    code: str | None = None,
) -> dict:
    """Generate (or finish) one shard under `directory`; returns its manifest.

    `dft`: keyword arguments of papers.qm1b.dft.run_dft_batch (basis, xc, grid_level, iterations, dtype,
    density_fit, early_stop), checked before any work (check_dft). Conformers are labelled in batches of up to
    `batch_conformers` across a part's molecules, by papers.qm1b.dft.pipeline.Labeller with `workers` processes
    preparing the next batches' integrals while the SCF runs; parts are written by write_parts.
    `run_batch(atoms: list[str], **dft) -> list[dict]` replaces the Labeller (tests pass a stand-in). `code`: the
    labelling code's fingerprint (`labelling_fingerprint()` by default), part of the dataset's key and recorded in
    the manifest and the parts: a shard labelled by other code is refused, not resumed (papers.qm1b.run keys its
    directory by it, so a run of changed code labels afresh elsewhere)."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard={shard} must be in [0, num_shards={num_shards})")
    if molecules_per_part < 1:
        raise ValueError(f"molecules_per_part={molecules_per_part} must be at least 1")
    if batch_conformers < 1:
        raise ValueError(f"batch_conformers={batch_conformers} must be at least 1")
    check_dft(sel, dft)
    check_sharding(directory, num_shards)
    code = code or labelling_fingerprint()
    key = dataset_key(sel, dft, code)
    chosen, skipped = select_molecules(sel)
    mine = [m for i, m in enumerate(chosen) if i % num_shards == shard]
    out = Path(directory) / shard_name(shard, num_shards)
    out.mkdir(parents=True, exist_ok=True)
    with shard_lock(out):  # the stray clean-up, the work and the manifest belong to one writer
        manifest_path = out / "manifest.json"
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text())
        else:
            manifest = {
                "key": key,
                "code": code,
                "selection": asdict(sel),
                "dft": dft,
                "shard": shard,
                "num_shards": num_shards,
                "molecules": len(mine),
                "skipped_smiles": dict(skipped),
                "done": [],
                "parts": [],
                "rows": 0,
                "dropped": {},
                "errors": [],
                "seconds": 0.0,
            }
        if manifest.get("code") != code:
            raise ValueError(
                f"{out} was labelled by other code (labelling fingerprint {manifest.get('code', 'not recorded')}, "
                f"this code {code}): its rows would mix two versions of the labelling code; label into another "
                "directory (papers.qm1b.run keys it by the code, papers.qm1b.generate.dataset_key)"
            )
        if manifest["key"] != key or manifest["num_shards"] != num_shards:
            raise ValueError(f"{out} holds another dataset (key {manifest['key']}): choose another directory")
        remove_strays(out, manifest)
        done = set(manifest["done"])
        todo = [m for m in mine if m[0] not in done]
        chunks = [todo[i : i + molecules_per_part] for i in range(0, len(todo), molecules_per_part)]
        metadata = {"selection": asdict(sel), "dft": dft, "code": code, "versions": versions or {}}
        bar = progress(
            total=len(mine) * sel.conformers,
            initial=len(done) * sel.conformers,
            desc=f"shard {shard}/{num_shards}",
            unit="conf",
            disable=not show_progress,
        )
        parts = (Part(_embed_part(chunk, sel)).batch(batch_conformers) for chunk in chunks)
        options = {"conformers": sel.conformers, "metadata": metadata, "workers": workers, "run_batch": run_batch}
        write_parts(out, manifest, parts, dft, bar=bar, **options)
        bar.close()
        return manifest


def remove_strays(folder: Path, manifest: dict) -> None:
    """Delete what a killed writer of `folder` (a shard, or papers.qm1b.label's parts) left beyond its manifest:
    Parquet parts written after the manifest was last written, and half-written temporary files."""
    listed = {p["file"] for p in manifest["parts"]}
    for stray in [*folder.glob("part_*.parquet*"), *folder.glob(".*.tmp")]:
        if stray.name not in listed:
            stray.unlink()


def write_parts(
    folder: Path,
    manifest: dict,
    parts: Iterable[Part],
    dft: dict,
    *,
    conformers: int,
    metadata: dict,
    workers: int | None,
    run_batch: Callable | None,
    bar,
) -> dict:
    """Label `parts` (label_parts) into `folder`, each as the next Parquet part (`metadata` in its schema), then the
    manifest (`folder/manifest.json`, started by the caller: done, parts, rows, dropped, errors, seconds) listing it;
    both writes are atomic, so a killed writer leaves its last manifest and strays for remove_strays. `conformers`:
    per molecule, counted for one dropped before the DFT and on `bar` (a progress bar). An error that is not one
    molecule's (module docstring) propagates before its part is written. Returns the manifest."""
    manifest_path = folder / "manifest.json"
    t0 = time.perf_counter()
    for part, results in label_parts(parts, dft, workers=workers, run_batch=run_batch):
        rows, ids, dropped, errors = part_rows(part, results, conformers)
        bar.update(sum(len(m["positions"]) if "positions" in m else conformers for m in part.molecules))
        name = f"part_{len(manifest['parts']):05d}.parquet"
        _write_parquet(folder / name, rows, metadata)
        manifest["parts"].append({"file": name, "molecules": len(ids), "rows": len(rows)})
        manifest["done"] += ids
        manifest["rows"] += len(rows)
        manifest["dropped"] = dict(Counter(manifest["dropped"]) + dropped)
        manifest["errors"] = manifest.get("errors", []) + errors
        manifest["seconds"] += time.perf_counter() - t0
        atomic_write_json(manifest_path, manifest)
        t0 = time.perf_counter()
    return manifest


def part_rows(part: Part, results: dict, conformers: int) -> tuple[list[dict], list[int], Counter, list[dict]]:
    """A labelled part's rows (molecule by molecule, conformers in order), molecule indices, drops and errors. A
    molecule dropped before the DFT (`conformers` drops), or with any conformer whose labelling raised (one per
    conformer), is dropped whole (reason `error:<type>` for an exception, with its last line in errors); the rest
    follow QM1B's rules (conformer_rows). A part of at least MIN_FAILED_PART molecules that all failed with one
    exception type raises RuntimeError naming it (from the first molecule's exception where the DFT raised it)."""
    per_molecule: dict[int, list] = {}
    for j, (slot, _) in enumerate(part.conformers):
        per_molecule.setdefault(slot, []).append(results[j])
    rows, ids, dropped, errors, raised = [], [], Counter(), [], []
    for slot, m in enumerate(part.molecules):
        ids.append(m["index"])
        labelled = per_molecule.get(slot, [])
        failed = next((r for r in labelled if isinstance(r, BaseException)), None)
        if "reason" in m or failed is not None:
            reason = m.get("reason") or f"error:{type(failed).__name__}"
            dropped[reason] += len(m.get("positions", range(conformers)))
            if "error" in m or failed is not None:
                error = m.get("error") or _last_line(failed)
                errors.append({"molecule": m["index"], "smiles": m["smiles"], "error": error})
                if reason.startswith("error:"):
                    raised.append((reason, m, error, failed))
            continue
        new, drops = conformer_rows(m["smiles"], m["index"], m["seed"], m["elements"], m["positions"], labelled)
        rows += new
        dropped.update(drops)
    if len(raised) == len(part.molecules) >= MIN_FAILED_PART and len({r[0] for r in raised}) == 1:
        reason, m, error, failed = raised[0]
        raise RuntimeError(
            f"all {len(raised)} molecules of a part failed with {reason.removeprefix('error:')}, the first (molecule "
            f"{m['index']}, {m['smiles']}) with {error!r}: a cause common to every molecule (a setting, the "
            "environment or the code), not a bad molecule, so the run stops with nothing of this part marked done "
            "(a rerun resumes at this part)"
        ) from failed
    return rows, ids, dropped, errors

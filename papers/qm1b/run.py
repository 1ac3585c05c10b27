"""The QM1B run: generate a QM1B-style dataset with our JAX DFT, check a random fraction of its rows against PySCF,
and train SchNet on growing subsets of it (the paper's scaling figure at CPU scale). Everything the claims, tables
and figures read is in the Results it returns (papers/qm1b/results.py).

`qm1b.stage=generate` only generates this run's shard (`shard=k num_shards=N`): that is the job a cluster launches
many times (configs/hydra/launcher/slurm.yaml). `qm1b.stage=all` generates every shard in this process (each
resumable), then validates and trains.

Kept work: the labelled datasets live in output_root/qm1b/data/<key>, keyed by their selection, DFT settings and the
labelling code's own fingerprint (papers.qm1b.generate.labelling_fingerprint: the code generate_shard can reach,
narrower than the run's compute code), so every run of the same labelling code finishes or reuses them, whatever
`resume` says; SchNet's checkpoints live in
the run's checkpoint directory (`ctx.checkpoint_path("schnet")`) and are resumed when `ctx.resume`.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np

from core.context import RunContext, versions
from core.progress import progress
from papers.qm1b.config import drop_dft, drop_selection, selection
from papers.qm1b.generate import (
    Selection,
    atom_string,
    dataset_key,
    generate_shard,
    labelling_fingerprint,
    read_dataset,
)
from papers.qm1b.results import Labelled, Results, Size, Validation
from papers.qm1b.schnet import PRESETS, molecules_from_rows, split_by_smiles, train_schnet

REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD = 1e-12, 1e-8  # Hartree: PySCF's stopping rule for reference rows
# the packages a label depends on, recorded with the Python version in every Parquet part's metadata
LABELLING_PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "pyscf", "rdkit", "pyarrow")


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.qm1b
    seed = int(cfg.seed)
    if c.stage == "generate":
        sel, dft = selection(c, seed), asdict(c.dft)
        directory = dataset_directory(cfg.output_root, sel, dft)
        manifest = generate_shard(sel, dft, directory, shard=cfg.shard, num_shards=cfg.num_shards, **_common(c))
        return Results("generate", labelled([manifest], directory))
    directory, manifests = label_dataset(cfg)
    table = read_dataset(directory, cfg.num_shards)
    check_trainable(table, manifests, c, seed, directory)
    drops = label_drops(cfg)  # QM1B's regime: its molecule size and its 20 fixed iterations (claim drop-share)
    validation = validate_rows(table, c.validate.rows, asdict(c.dft), seed)
    scaling = schnet_scaling(table, c, seed, ctx.checkpoint_path("schnet"), ctx.resume)
    return Results(
        "all",
        labelled(manifests, directory),
        labelled([drops[1]], drops[0]) if drops is not None else None,
        validation,
        scaling,
    )


# ---------------------------------------------------------------------------------------------- the datasets


def _common(c) -> dict:
    """generate_shard's settings of how the labelling runs, not what it labels, with the labelling code and the
    versions recorded in the parts."""
    d = c.data
    return {
        "molecules_per_part": d.molecules_per_part,
        "versions": labelling_versions(),
        "code": labelling_fingerprint(),
        "batch_conformers": d.batch_conformers,
        "workers": d.workers,
    }


def labelling_versions() -> dict[str, str]:
    """Python, the platform and LABELLING_PACKAGES' versions: what a labelled part records of its environment."""
    return versions(LABELLING_PACKAGES)


def label_dataset(cfg) -> tuple[Path, list[dict]]:
    """Generate (or finish, or find done) every shard of the run's dataset: its directory and the shards'
    manifests. Shards labelled by this labelling code are reused whatever the run's `resume`."""
    c = cfg.qm1b
    sel, dft = selection(c, int(cfg.seed)), asdict(c.dft)
    directory = dataset_directory(cfg.output_root, sel, dft)
    common = _common(c)
    manifests = [
        generate_shard(sel, dft, directory, shard=k, num_shards=cfg.num_shards, **common) for k in range(cfg.num_shards)
    ]
    return directory, manifests


def label_drops(cfg) -> tuple[Path, dict] | None:
    """Generate (or finish, or find done) the drop sample (one shard): its directory and manifest; None where
    qm1b.drops.molecules is 0."""
    c = cfg.qm1b
    if not c.drops.molecules:
        return None
    sel, dft = drop_selection(c, int(cfg.seed)), drop_dft(c)
    directory = dataset_directory(cfg.output_root, sel, dft)
    return directory, generate_shard(sel, dft, directory, **_common(c))


def labelled(manifests: list[dict], directory: Path) -> Labelled:
    """The counts of a dataset's shards, from their manifests."""
    dropped = Counter()
    for m in manifests:
        dropped.update(m["dropped"])
    dft = manifests[0]["dft"]
    return Labelled(
        key=Path(directory).name,
        shards=len(manifests),
        rows=sum(m["rows"] for m in manifests),
        dropped=dict(dropped),
        seconds=sum(m["seconds"] for m in manifests),
        skipped_smiles=dict(manifests[0]["skipped_smiles"]),
        iterations=int(dft["iterations"]),
        early_stop=bool(dft["early_stop"]),
    )


def dataset_directory(output_root, sel: Selection, dft: dict, code: str | None = None) -> Path:
    """Where the labelled dataset of `sel` and `dft` lives: output_root/qm1b/data/<key>, the key covering the
    labelling code's fingerprint (this code's by default), so a run of changed labelling code recomputes."""
    return Path(output_root) / "qm1b" / "data" / dataset_key(sel, dft, code or labelling_fingerprint())


def pyscf_reference(atom: str, dft: dict) -> dict:
    """Converged PySCF restricted Kohn-Sham at the dataset's settings (density fitted, as `density_fit()`, when the
    dataset's labels are): energy (Ha), HOMO, LUMO, gap (eV)."""
    from pyscf import dft as pdft
    from pyscf import gto

    from papers.qm1b.generate import HARTREE_EV

    mol = gto.M(atom=atom, basis=dft["basis"], unit="Angstrom", verbose=0)
    mf = pdft.RKS(mol, xc=dft["xc"])
    if dft.get("density_fit"):  # fitted labels are checked against PySCF's fitted labels (the fit is ~30 meV off)
        mf = mf.density_fit()
    mf.grids.level = dft["grid_level"]
    # the reference's own error must be far below the float32 errors it measures (~0.1 meV on gaps): conv_tol 1e-10
    # left gaps up to 0.02 meV from a conv_tol 1e-13 run; these settings, within 4e-5 meV and 1e-11 Hartree
    mf.conv_tol, mf.conv_tol_grad = REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD
    mf.max_cycle = 100
    energy = mf.kernel()
    if not mf.converged:
        raise RuntimeError(f"PySCF did not converge in 100 cycles on {atom[:80]!r}: no reference for this row")
    n_occ = mol.nelectron // 2
    homo, lumo = mf.mo_energy[n_occ - 1] * HARTREE_EV, mf.mo_energy[n_occ] * HARTREE_EV
    return {"energy": float(energy), "homo": float(homo), "lumo": float(lumo), "gap": float(lumo - homo)}


def validate_rows(table, n: int, dft: dict, seed: int) -> Validation:
    """Re-compute `n` random rows with converged PySCF: per-row errors of the stored energy and gap (meV)."""
    from papers.qm1b.generate import HARTREE_EV

    rows = np.random.default_rng([seed, 5]).permutation(table.num_rows)[:n]
    energy_err, gap_err, seconds = [], [], 0.0
    for i in progress(rows.tolist(), desc="validate vs PySCF", unit="row"):
        r = table.slice(int(i), 1).to_pylist()[0]
        symbols = _symbols(r["z"])
        pos = np.asarray(r["pos"], np.float64).reshape(-1, 3) / (1 / 0.529177210903)  # Bohr -> Angstrom
        t = time.perf_counter()
        ref = pyscf_reference(atom_string(symbols, pos), dft)
        seconds += time.perf_counter() - t
        energy_err.append((r["energy"] - ref["energy"] * HARTREE_EV) * 1000)
        gap_err.append((r["y"] - ref["gap"]) * 1000)
    return Validation(
        gap_mev=np.asarray(gap_err, np.float64),
        energy_mev=np.asarray(energy_err, np.float64),
        pyscf_seconds_per_row=seconds / max(len(rows), 1),
    )


def _symbols(z: list[int]) -> list[str]:
    from rdkit import Chem

    table = Chem.GetPeriodicTable()
    return [table.GetElementSymbol(int(x)) for x in z]


def schnet_seeds(c, seed: int) -> list[int]:
    """The seeds SchNet trains from at every size: the run's seed and the next qm1b.schnet.seeds - 1."""
    return [seed + i for i in range(c.schnet.seeds)]


def check_trainable(table, manifests: list[dict], c, seed: int, directory: Path) -> None:
    """Stop before the validation and the training when the labelled rows cannot fill the largest SchNet size (all
    dropped by QM1B's std rule, say), naming the drops by reason and the first labelling error."""
    smiles = table.column("smile").to_pylist()
    train = len(split_by_smiles(smiles, c.schnet.valid_fraction, seed)[0]) if smiles else 0
    if train >= c.schnet.sizes[-1]:
        return
    dropped = sum((Counter(m["dropped"]) for m in manifests), Counter())
    errors = [e for m in manifests for e in m.get("errors", [])]
    first = ""
    if errors:
        first = f"; the first error: molecule {errors[0]['molecule']} ({errors[0]['smiles']}): {errors[0]['error']}"
    raise ValueError(
        f"the labelled dataset has {table.num_rows} rows ({train} for training), but qm1b.schnet.sizes needs "
        f"{c.schnet.sizes[-1]} training conformers: of {table.num_rows + dropped.total()} conformers labelled, "
        f"dropped {dict(dropped)}{first} (the manifests under {directory})"
    )


def schnet_scaling(table, c, seed: int, checkpoint_dir: Path | None = None, resume: bool = False) -> list[Size]:
    """Train the SchNet preset on nested subsets of the training conformers at every size, each seed of
    `schnet_seeds` an independent replicate: its own random order of the training conformers (its subsets are the
    first n of it), initialisation and batch order. The split, and so the validation molecules, is the run's: its
    sampling error is common to every seed. Each size trains `qm1b.schnet.steps_at(size)` steps."""
    smiles = table.column("smile").to_pylist()
    data = molecules_from_rows(table.column("z").to_pylist(), table.column("pos").to_pylist(), table.column("y"))
    train_idx, valid_idx = split_by_smiles(smiles, c.schnet.valid_fraction, seed)
    seeds = schnet_seeds(c, seed)
    orders = [np.random.default_rng([s, 9]).permutation(train_idx) for s in seeds]
    valid = data.take(valid_idx)
    tc = c.schnet
    results = []
    bar = progress(total=sum(tc.steps_at(n) for n in tc.sizes), desc="SchNet", unit="step")
    for n in tc.sizes:
        if n > len(train_idx):
            raise ValueError(f"size {n} exceeds the {len(train_idx)} training conformers generated")
        t0 = time.perf_counter()
        trains = [data.take(order[:n]) for order in orders]
        _, info = train_schnet(
            PRESETS[tc.preset],
            trains,
            valid,
            dataclasses.replace(tc, steps=tc.steps_at(n)),
            seeds=seeds,
            checkpoint_dir=checkpoint_dir / f"size_{n}" if checkpoint_dir is not None else None,
            resume=resume,
            progress_bar=bar,
            name=f"schnet/{n}",
        )
        results.append(
            Size(
                size=n,
                steps=tc.steps_at(n),
                seeds=list(info["seeds"]),
                train_mae=list(info["train_mae"]),
                valid_mae=list(info["valid_mae"]),
                # per seed: predicting its training subset's mean gap
                mean_mae=[float(np.abs(valid.y - t.y.mean()).mean() * 1000) for t in trains],
                seconds=time.perf_counter() - t0,
                valid_rows=len(valid_idx),
                valid_molecules=len({smiles[i] for i in valid_idx}),
            )
        )
    bar.close()
    return results

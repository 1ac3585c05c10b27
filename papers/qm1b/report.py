"""The QM1B report: the tables (the generated dataset: rows, drops, throughput; SchNet's MAE against the number of
training conformers beside the paper's curve) and the figures (that scaling curve, the errors of random rows against
PySCF), made from the Results and the decision. It formats; the claims and the key figures with their intervals are
decided in papers/qm1b/claims.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core import plots
from core.claims import Decided
from core.report import Figure, Report, Table, mean_std
from papers.qm1b.results import Labelled, Results, Size, Validation

# Every figure below: papers/qm1b/REFERENCES.md (entry numbers in brackets)
# [1] SchNet 9M validation MAE of the HOMO-LUMO gap (meV) against training conformers, read off the paper's log plot
PAPER_SCHNET = {100e3: 287, 500e3: 112, 1e6: 84, 5e6: 51, 10e6: 42, 50e6: 35, 100e6: 33, 500e6: 33, 1e9: 32}
# [1] the same figure's training MAE (meV)
PAPER_SCHNET_TRAIN = {100e3: 20, 500e3: 13, 1e6: 12.5, 5e6: 22, 10e6: 27, 50e6: 31, 100e6: 33, 500e6: 33, 1e9: 33}
PAPER_CONFORMERS_PER_IPU_HOUR = 27_000  # [4]

# ---------------------------------------------------------------------------------------------- tables


def _directory(cfg, labelled: Labelled) -> Path:
    """Where the run kept the labelled dataset (papers.qm1b.run.dataset_directory)."""
    return Path(cfg.output_root) / "qm1b" / "data" / labelled.key


def tables(cfg, results: Results) -> list[Table]:
    c = cfg.qm1b
    scaling = results.scaling
    span = scaling[-1].size / scaling[0].size
    seeds = len(scaling[0].valid_mae)
    scaling_table = Table(
        "schnet_scaling",
        "SchNet gap MAE against training conformers (ours, mean +- std over seeds) beside the paper's SchNet 9M",
        [
            "training conformers",
            "train MAE (meV)",
            "validation MAE (meV)",
            "validation - train (meV)",
            "predicting the training mean (meV)",
            "validation / mean predictor",
            "steps (epochs)",
            "train time, all seeds (s)",
        ],
        [
            [
                r.size,
                mean_std(r.train_mae, ".0f"),
                mean_std(r.valid_mae, ".0f"),
                mean_std(r.gaps, ".0f"),
                mean_std(r.mean_mae, ".0f"),
                mean_std(r.relative, ".3f"),
                f"{r.steps} ({r.steps * min(c.schnet.batch_size, r.size) / r.size:.0f})",
                f"{r.seconds:.1f}",
            ]
            for r in scaling
        ]
        + [
            [f"paper: {int(n):,}", PAPER_SCHNET_TRAIN.get(n, "-"), v, "-", "-", "-", "-", "-"]
            for n, v in PAPER_SCHNET.items()
        ],
        caption=f"Ours: the '{c.schnet.preset}' SchNet, batch {c.schnet.batch_size}, at least {c.schnet.steps} steps "
        f"and {c.schnet.epochs:g} epochs at each size ({span:.0f}x span), {seeds} seeds per size trained together, "
        "each an independent replicate (its own nested subsets, initialisation and batch order; the split is the "
        f"run's), validated on {scaling[0].valid_rows} conformers of "
        f"{scaling[0].valid_molecules} held-out molecules. The paper's sizes are 3-6 orders of magnitude larger: "
        "compare the slopes, not the values. Key figures: each MAE's mean over seeds with its t interval.",
    )
    out = [_dataset_table(results.dataset, _directory(cfg, results.dataset)), scaling_table]
    return out + ([_drops_table(cfg, results.drops)] if results.drops is not None else [])


def _drops_table(cfg, drops: Labelled) -> Table:
    d = cfg.qm1b.drops
    by_rule, other = drops.split_drops()
    rows = [
        ["conformers with a DFT result", drops.computed],
        [
            "dropped by QM1B's rules (std > 0.01 eV over the last 5 iterations, zero gap, not finite)",
            ", ".join(f"{k}: {v}" for k, v in by_rule.items()) or "none",
        ],
        ["without a DFT result (not counted)", ", ".join(f"{k}: {v}" for k, v in other.items()) or "none"],
        ["labelling time (s)", f"{drops.seconds:.1f}"],
    ]
    return Table(
        "drops",
        "The drop sample: QM1B's regime",
        ["", "value"],
        rows,
        caption=f"{d.molecules} QM9 molecules of {d.min_heavy}-{d.max_heavy} heavy atoms, {d.conformers} ETKDG "
        f"conformers each, {d.iterations} fixed SCF iterations (no early stopping) in {cfg.qm1b.dft.dtype}",
    )


def _dataset_table(s: Labelled, directory: Path) -> Table:
    rows = [
        ["rows kept", s.rows],
        ["conformers computed", s.conformers],
        ["dropped (std > 0.01 eV, zero gap, ...)", ", ".join(f"{k}: {v}" for k, v in s.dropped.items()) or "none"],
        ["SMILES skipped by the filters", ", ".join(f"{k}: {v}" for k, v in s.skipped_smiles.items()) or "none"],
        ["generation time (s)", f"{s.seconds:.1f}"],
        ["conformers per hour (this machine, incl. ETKDG, integrals, compilation)", f"{s.per_hour:.0f}"],
    ]
    return Table("dataset", "The generated dataset", ["", "value"], rows, caption=f"Parquet shards under {directory}")


# ---------------------------------------------------------------------------------------------- figures


def figures(validation: Validation | None, scaling: list[Size]) -> list[Figure]:
    out = [
        Figure(
            "schnet_scaling",
            _scaling_figure(scaling),
            "SchNet validation and training MAE against conformers: mean over seeds, +- one std shaded; the mean "
            "predictor dotted.",
        ),
    ]
    if validation is not None and len(validation.gap_mev):
        out.append(Figure("errors", _error_figure(validation), "Errors of random rows against converged PySCF."))
    return out


def render(cfg, results: Results, decided: Decided) -> Report:
    if results.stage == "generate":
        return generation_report(cfg, results)
    c = cfg.qm1b
    s, validation, scaling = results.dataset, results.validation, results.scaling
    per_row = validation.pyscf_seconds_per_row if validation is not None else float("nan")
    notes = [
        f"Labels: restricted Kohn-Sham {c.dft.xc}/{c.dft.basis}{' (density fitted)' if c.dft.density_fit else ''}, "
        f"grid level {c.dft.grid_level}, "
        + (
            f"SCF until converged (at most {c.dft.iterations} iterations"
            if c.dft.early_stop
            else f"{c.dft.iterations} fixed SCF iterations (QM1B's"
        )
        + f") in {c.dft.dtype} (papers.qm1b.dft, JAX). Molecules: {c.data.source} "
        f"SMILES of {c.data.min_heavy}-{c.data.max_heavy} heavy atoms, {c.data.conformers} ETKDG conformers each.",
        f"Throughput: {s.per_hour:.0f} conformers/hour on this machine including ETKDG, host integrals and "
        f"compilation (the PySCF reference rows took {per_row:.2f} s each at conv_tol 1e-12: context, not a "
        f"comparison). The paper reports at least {PAPER_CONFORMERS_PER_IPU_HOUR:,} conformers per IPU-hour. "
        "scripts/bench.py section qm1b times our DFT against PySCF like for like: both warm, "
        "median of repeated rounds, both on all the machine's cores, PySCF converged to the same accuracy.",
    ]
    metrics = {
        "rows": s.rows,
        "conformers_per_hour": s.per_hour,
        **{f"schnet/valid_mae/{r.size}": float(np.mean(r.valid_mae)) for r in scaling},
        # per seed, and the mean predictor's (the Results hold them too)
        **{f"schnet/valid_mae/{r.size}/seed{k}": float(v) for r in scaling for k, v in enumerate(r.valid_mae)},
        **{f"schnet/train_mae/{r.size}/seed{k}": float(v) for r in scaling for k, v in enumerate(r.train_mae)},
        **{f"schnet/mean_mae/{r.size}/seed{k}": float(v) for r in scaling for k, v in enumerate(r.mean_mae)},
        **{f"schnet/train_mae/{r.size}": float(np.mean(r.train_mae)) for r in scaling},
    }
    if results.drops is not None:
        metrics.update({"drops/conformers": results.drops.computed, "drops/dropped": results.drops.rule_dropped})
    if validation is not None and len(validation.gap_mev):
        metrics.update(
            {
                "validate/gap_max_mev": float(np.abs(validation.gap_mev).max()),
                "validate/energy_max_mev": float(np.abs(validation.energy_mev).max()),
            }
        )
    return Report(
        "qm1b",
        "QM1B: a JAX DFT dataset generator and SchNet scaling",
        tables=tables(cfg, results),
        figures=figures(validation, scaling),
        metrics=metrics,
        notes=notes,
    )


def generation_report(cfg, results: Results) -> Report:
    """The report of a generate-only job: this shard's dataset table (and no claims: `claims` declares none)."""
    s = results.dataset
    directory = _directory(cfg, s)
    return Report(
        "qm1b",
        f"QM1B generation, shard {cfg.shard} of {cfg.num_shards}",
        tables=[_dataset_table(s, directory)],
        metrics={"rows": s.rows, "conformers_per_hour": s.per_hour},
        notes=[
            f"Only this shard was generated (qm1b.stage=generate); qm1b.stage=all reads every shard of {directory}."
        ],
    )


def _scaling_figure(scaling):
    fig, ax = plots.figure(panel=(6, 4))
    n = [r.size for r in scaling]
    series = {  # [sizes, seeds]: the mean with a band
        "ours: validation": (n, [r.valid_mae for r in scaling]),
        "ours: training": (n, [r.train_mae for r in scaling]),
        "ours: predicting the training mean": (n, [r.mean_mae for r in scaling]),
        "paper: validation (SchNet 9M, QM1B)": (list(PAPER_SCHNET), list(PAPER_SCHNET.values())),
        "paper: training": (list(PAPER_SCHNET_TRAIN), list(PAPER_SCHNET_TRAIN.values())),
    }
    styles = {
        "ours: training": {"marker": "s", "ls": "--"},
        "ours: predicting the training mean": {"ls": ":", "color": "grey"},
        "paper: validation (SchNet 9M, QM1B)": {"marker": "^", "color": "k"},
        "paper: training": {"marker": "v", "color": "k", "ls": "--"},
    }
    plots.curves(
        ax, series, xlabel="training conformers", ylabel="HOMO-LUMO gap MAE (meV)", styles=styles, logy=True, band="std"
    )
    ax.set_xscale("log")
    return fig


def _error_figure(validation: Validation):
    fig, axes = plots.figure(2, panel=(4.5, 3.5))
    for ax, key, label in zip(axes, ("gap_mev", "energy_mev"), ("gap error (meV)", "energy error (meV)"), strict=True):
        ax.hist(getattr(validation, key), bins=20)
        ax.set_xlabel(f"ours - PySCF: {label}")
        ax.set_ylabel("rows")
    return fig

"""The packing report: the tables (the paper's packing table beside ours, padded vs packed training) and the figures
(training curves, the length histogram), made from the Results and the decision. It formats; the claims and every
interval it shows are decided in papers/packing/claims.py."""

from __future__ import annotations

import numpy as np

from core import plots
from core.claims import Decided
from core.report import Figure, Report, Table, estimate_text
from papers.packing.results import Results, TrainRun
from papers.packing.tables import LABELS, PUBLISHED_SECONDS, published

# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    rows = []
    training = results.training
    for c in results.cells:
        pub = published(c)
        paper_s = PUBLISHED_SECONDS.get((c.histogram, c.method, c.limit))
        rows.append(
            [
                LABELS[c.histogram],
                c.method.upper(),
                c.limit,
                f"{c.packs:,}",
                f"{100 * c.efficiency:.3f}%",
                f"{c.speedup:.5f}",
                f"{pub[0]}%" if pub else "-",
                pub[1] if pub else "-",
                f"{c.bound:.4f}",
                f"{c.seconds:.3f}",
                paper_s if paper_s is not None else "-",
            ]
        )
    out = [
        Table(
            "packing",
            "Histogram packing: ours beside the published figures (Krell et al. 2021; their sources: REFERENCES.md)",
            [
                "dataset",
                "method",
                "max seq./pack",
                "packs",
                "efficiency",
                "speed-up",
                "paper efficiency",
                "paper speed-up",
                "bound",
                "seconds (this machine)",
                "paper seconds (its hardware; context)",
            ],
            rows,
            caption="Efficiency = real tokens / (packs x L); speed-up = sequences / packs. Seconds: one run of "
            "ours on this machine; the paper's times come from its own hardware and are shown as context only (no "
            'claim or ratio is drawn from them). `make bench ARGS="--section packing"` times ours warm and '
            "repeated against a per-sequence first-fit peer on the same machine.",
        )
    ]
    if training is not None:
        runs = training.runs
        out.append(
            Table(
                "training",
                "Padded vs packed masked-LM training (same sequences, same masks)",
                [
                    "run",
                    "rows per step",
                    "steps",
                    "sequences",
                    "real tokens",
                    "slot tokens",
                    "token efficiency",
                    "step time (s)",
                    "real tokens/s",
                    "final valid loss",
                ],
                [
                    [
                        r.mode,
                        r.rows_per_step,
                        r.steps,
                        r.sequences,
                        f"{r.real_tokens:,}",
                        f"{r.slot_tokens:,}",
                        f"{r.real_tokens / max(r.slot_tokens, 1):.1%}",
                        f"{r.step_seconds:.1f}",
                        f"{r.tokens_per_second:,.0f}",
                        f"{r.curve[-1][1]:.4f}",
                    ]
                    for r in (runs["padded"], runs["packed"])
                ],
                caption=f"{len(training.train_lengths):,} training speeches as [CLS] + text, at most "
                f"{cfg.packing.train.max_len} characters ({training.truncated:.1%} truncated); SPFHP with at most "
                f"{cfg.packing.train.max_sequences_per_pack} per pack. Compilation is excluded from step times. "
                "The two runs ran one after the other: their tokens/s are context; the throughput fact is timed "
                "in interleaved rounds (next tables).",
            )
        )
        out += throughput_tables(results, decided)
    return out


def throughput_tables(results: Results, decided: Decided) -> list[Table]:
    """The interleaved timing rounds per arm, and the gain over the packing speed-up split into its factors: how
    full the packed rows are against the histogram's speed-up, and what a row costs in each arm."""
    rounds, speedup = results.training.rounds, results.training.speedup
    pad, pack, control = rounds["padded"], rounds["packed"], rounds["padded, packed rows"]
    est = decided.estimates
    gain = next(f for f in decided.facts if f.id == "packed-throughput").value
    arms = Table(
        "timing_rounds",
        "Interleaved timing rounds: seconds per training step of each arm",
        [
            "arm",
            "rows per step",
            "real tokens per step",
            "seconds per step (median, min-max)",
            "ms per row",
            "real tokens/s (median)",
        ],
        [
            [
                a.name,
                a.rows,
                f"{a.tokens_per_step:,.1f}",
                f"{np.median(a.seconds):.4f} ({min(a.seconds):.4f}-{max(a.seconds):.4f})",
                f"{1000 * np.median(a.seconds) / a.rows:.3f}",
                f"{a.tokens_per_step / np.median(a.seconds):,.0f}",
            ]
            for a in rounds.values()
        ],
        caption=f"{len(pad.seconds)} rounds; each arm warmed first, then round i of every arm before round i + 1 of "
        "any, in one process. Real tokens per step: the average over every step of the arm's plan (a step's cost "
        "depends on its shape only, so one batch is timed).",
    )
    factors = Table(
        "throughput_factors",
        "Gain over the packing speed-up, by factor (mean over rounds with 95% t interval)",
        ["factor", "value", "what it measures"],
        [
            ["packing speed-up (histogram)", f"{speedup:.4f}", "sequences per pack of the training lengths (SPFHP)"],
            ["rows ratio", f"{pad.rows / pack.rows:.4f}", "padded rows over packed rows per step"],
            [
                "fill",
                f"{est['throughput/fill']:.4f}",
                "real tokens per packed row over per padded row, over the speed-up (plans)",
            ],
            [
                "time per row, padded over packed",
                estimate_text(est["throughput/time-per-row"], ".3f"),
                "the cost of a row in each run's step",
            ],
            [
                "  of which rows per step",
                estimate_text(est["throughput/rows-per-step"], ".3f"),
                f"padded at {pad.rows} rows vs at {control.rows} rows",
            ],
            [
                "  of which row content",
                estimate_text(est["throughput/row-content"], ".3f"),
                f"padded vs packed rows at {control.rows} rows",
            ],
            ["gain over speed-up", estimate_text(gain, ".3f"), "= fill x time per row (the fact packed-throughput)"],
        ],
        caption="Real tokens/s gain = (real tokens per packed step / per padded step) x (padded step time / packed "
        "step time), so gain / speed-up = fill x (time per padded row / time per packed row).",
    )
    return [arms, factors]


# ---------------------------------------------------------------------------------------------- figures


def figures(cfg, results: Results) -> list[Figure]:
    training = results.training
    if training is None:
        return []
    runs = training.runs
    lengths = np.asarray(training.train_lengths)
    return [
        Figure(
            "training_curves",
            _curves(runs["padded"], runs["packed"]),
            "Validation MLM loss against sequences seen: padded and packed.",
        ),
        Figure(
            "lengths",
            _lengths(lengths, cfg.packing.train.max_len),
            "Length histogram of the training sequences (characters).",
        ),
    ]


def _gain(runs: dict[str, TrainRun]) -> float:
    """Real tokens/s packed over padded, over the whole sequential training runs (context, not the claim's)."""
    return runs["packed"].tokens_per_second / runs["padded"].tokens_per_second


def render(cfg, results: Results, decided: Decided) -> Report:
    metrics, notes = {}, []
    training = results.training
    if training is not None:
        runs = training.runs
        metrics.update(
            {
                "tokens_per_second/padded": runs["padded"].tokens_per_second,
                "tokens_per_second/packed": runs["packed"].tokens_per_second,
                "throughput_gain": _gain(runs),
                "packing_speedup": training.speedup,
                "valid_loss/padded": runs["padded"].curve[-1][1],
                "valid_loss/packed": runs["packed"].curve[-1][1],
            }
        )
        notes.append(
            "Both runs train the same model from the same initialisation on the same masked sequences; the packed "
            "run puts about as many sequences in a step as the padded run (fewer rows), so the optimiser sees the "
            "same number of sequences per step and the curves compare per sequence seen."
        )
    return Report(
        "packing",
        "Efficient sequence packing without cross-contamination",
        tables=tables(cfg, results, decided),
        figures=figures(cfg, results),
        metrics=metrics,
        notes=notes,
    )


def _curves(padded, packed):
    fig, ax = plots.figure()
    series = {
        f"{r.mode} ({r.tokens_per_second:,.0f} real tokens/s)": tuple(zip(*r.curve, strict=True))
        for r in (padded, packed)
    }
    plots.curves(ax, series, xlabel="sequences seen", ylabel="validation MLM loss (nats)")
    return fig


def _lengths(lengths: np.ndarray, max_len: int):
    fig, ax = plots.figure(panel=(6, 3.5))
    ax.hist(lengths, bins=np.arange(1, max_len + 2), color="tab:blue")
    ax.set_xlabel("sequence length (characters, with [CLS])")
    ax.set_ylabel("sequences")
    return fig


__all__ = ["render"]

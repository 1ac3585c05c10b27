"""The u-muP report: the optimal learning rate of every parametrization and width (with its interval over seed
resamples and the old 3-point estimate beside), how far it moves with width, u-muP's loss against SP's and muP's at
the widest width, the FP8 runs beside their FP32 twins, the hyperparameter sweeps at the proxy width, and the figures
in the paper's style (loss against learning rate, one curve per width). The numbers are computed once, in
papers/umup/analysis.py; each function here formats one table or figure of an `Analysis`. The claims are declared
and measured in papers/umup/claims.py."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.report import Figure, Interval, Report, Table, fixed
from core.stats import seed_mean
from papers.umup.analysis import Analysis
from papers.umup.claims import HEADS, TRANSFER_MARGIN, Optimum, claims, measure  # noqa: F401  (claims: re-exported)
from papers.umup.train import GroupResult

NAMES = {"sp": "SP", "mup": "muP", "umup": "u-muP"}


def _loss(x: float) -> str:
    return fixed(x, 3, missing="diverged")


def build_report(
    cfg,
    sweeps: dict[tuple[str, int], GroupResult],
    fp8: dict[str, GroupResult],
    mult_sweeps: dict[tuple[str, float], GroupResult],
) -> Report:
    a = Analysis.from_results(cfg, sweeps, fp8, mult_sweeps)
    c = cfg.umup
    tables = [optimal_lr_table(a), drift_table(a)]
    if a.gaps:
        tables.append(loss_gap_table(a, c.steps))
    figures = [sweeps_figure(a), optimum_figure(a)]
    if a.mults:
        tables.append(mults_table(a))
        figures.append(mults_figure(a))
    if a.fp8:
        tables.append(fp8_table(a, c.fp8_head))
    return Report(
        paper="umup",
        title=cfg.paper.title,
        claims=measure(cfg, sweeps, fp8, mult_sweeps),
        tables=tables,
        figures=figures,
        metrics=metrics(a),
        notes=notes(a, c),
    )


# ---------------------------------------------------------------------------------------------- tables


def _octaves(x: float) -> str:
    return fixed(x, 2, missing="-")


def _optimum_cell(o: Optimum, interval: Interval | str) -> Interval | str:
    """The optimum with its interval; the estimate alone with the reason where the resamples give no interval; the
    reason alone where the seed-mean curve gives no estimate."""
    if not o.bracketed:
        return f"- ({o.unbracketed})"
    return interval if isinstance(interval, Interval) else f"{o.log2_lr:.2f} ({interval})"


def optimal_lr_table(a: Analysis) -> Table:
    rows = []
    for p in a.parametrizations:
        for w in a.widths:
            s = a.sweeps[(p, w)]
            o = s.optimum
            rows.append(
                [
                    NAMES[p],
                    w,
                    s.result.params,
                    f"{s.log2_lrs[0]:g} to {s.log2_lrs[-1]:g}",
                    f"{o.grid_log2_lr:g}" + (" (grid edge)" if o.at_edge else ""),
                    _optimum_cell(o, s.interval),
                    _octaves(s.old.log2_lr),
                    ", ".join(_octaves(v) for v in s.seed_optima),
                    _loss(o.loss),
                ]
            )
    return Table(
        "optimal_lr",
        "Optimal learning rate per parametrization and width",
        [
            "parametrization",
            "width",
            "parameters",
            "grid (log2 lr)",
            "best grid log2 lr",
            "optimum log2 lr (95% interval over seed resamples)",
            "old: 3-point, clamped",
            "per seed",
            "valid loss at best (nats/char)",
        ],
        rows,
        caption="The optimum is the vertex, not clamped, of the least-squares quadratic in log2 lr through the "
        "seed-mean validation loss at the best grid point and up to two grid points on each side; '-' where the "
        "curve does not bracket it (reason given). Interval: percentiles over seed resamples, the same resamples "
        "at every width. 'old' is the estimate used until issue 44: the parabola through the best grid point and "
        "its two neighbours, clamped to half a grid step, which on an even grid never leaves half a step of the "
        "best grid point. 'per seed' repeats the fit on each seed's curve alone.",
    )


def drift_table(a: Analysis) -> Table:
    def half_width(d: Interval | str) -> str:
        return f"{(d.high - d.low) / 2:.2f}" if isinstance(d, Interval) else "-"

    return Table(
        "lr_drift",
        "How far the optimum moves with width",
        [
            "parametrization",
            f"optimum moves, width {a.widths[0]} to {a.widths[-1]} (octaves)",
            "interval half-width",
            "old: 3-point, clamped",
            "slope d log2 lr* / d log2 width",
        ],
        [
            [NAMES[p], str(a.drift[p]), half_width(a.drift[p]), str(a.old_drift[p]), _octaves(a.slope[p])]
            for p in a.parametrizations
        ],
        caption="Interval: percentiles over seed resamples (a resample whose fit does not bracket its optimum counts "
        f"against the claim). u-muP's claim asks the whole interval within +-{TRANSFER_MARGIN:g} octave, so it "
        f"can hold only where the half-width is under {TRANSFER_MARGIN:g} (the power); muP's row is a reported "
        "comparison, not a claim. For Adam, SP's optimum is expected to fall about an octave per doubling "
        "(slope -1); muP's and u-muP's to stay (0).",
    )


def loss_gap_table(a: Analysis, steps: int) -> Table:
    return Table(
        "loss_gap",
        "u-muP's loss against SP's and muP's at the widest width",
        [
            "against",
            "width",
            "u-muP valid loss (seed mean)",
            "other's valid loss (seed mean)",
            "relative gap (u-muP - other) / other",
        ],
        [[NAMES[g.other], g.width, _loss(g.umup_loss), _loss(g.other_loss), g.rel] for g in a.gaps],
        caption="Each at the best grid point of its own seed-mean curve; the gap paired by seed (the same seed's "
        "runs see the same batches), mean with its 95% t interval. A reported comparison, not a claim: the paper "
        f"compares u-muP with muP after full training at widths 256 to 4096 (UMUP-FIG1B); here {steps} steps.",
    )


def mults_table(a: Analysis) -> Table:
    m = a.mults
    return Table(
        "umup_mults",
        "u-muP's other hyperparameters, one at a time",
        ["hyperparameter", "value (default 1)", "valid loss, seed mean", "gain over all-default"],
        [[name, value, _loss(mean), f"{100 * gain:+.2f}%"] for name, value, mean, gain in m.rows],
        caption=f"u-muP at width {m.width}, learning rate 2^{math.log2(m.lr):g} (the sweep's best grid point); "
        f"all-default loss {m.default_mean:.3f}.",
    )


def _gap_cell(gaps: list[float]) -> str:
    """The seeds' relative FP8 gaps: a t interval over them where every seed trained, else each seed's."""
    finite = [x for x in gaps if math.isfinite(x)]
    if len(finite) == len(gaps) and len(gaps) > 1:
        return str(seed_mean(finite))
    if not finite:
        return "diverged"
    return ", ".join(f"{x:.4f}" for x in gaps)


def fp8_table(a: Analysis, head: str) -> Table:
    rows = [
        [
            NAMES[p],
            r.width,
            f"2^{math.log2(r.lr):g}",
            _loss(r.fp32_mean),
            ", ".join(_loss(v) for v in r.valid_loss),
            _gap_cell(r.gaps),
        ]
        for p, r in a.fp8.items()
    ]
    return Table(
        "fp8",
        "Plain FP8 casts against FP32",
        [
            "parametrization",
            "width",
            "learning rate",
            "FP32 valid loss (seed mean)",
            "FP8 valid loss per seed",
            "relative gap (FP8 - FP32) / FP32",
        ],
        rows,
        caption="Plain casts: round-to-nearest, no saturation, no scale; E4M3 for every linear layer's inputs "
        f"and weights ({HEADS[head]}), E5M2 for the gradients its backward matmuls consume.",
    )


def metrics(a: Analysis) -> dict[str, float]:
    out = {f"log2_lr_opt/{p}/w{w}": a.optimum(p, w).log2_lr for p in a.parametrizations for w in a.widths}
    for p in a.parametrizations:
        for name, d in (("drift_octaves", a.drift[p]), ("drift_octaves_old", a.old_drift[p])):
            out[f"{name}/{p}"] = d.estimate if isinstance(d, Interval) else math.nan
    for g in a.gaps:
        out[f"loss_gap/umup_vs_{g.other}"] = g.rel.estimate if isinstance(g.rel, Interval) else g.rel
    if a.mults:
        out["umup_mults/best_gain"] = a.mults.best_gain
    if "umup" in a.fp8:
        g = a.fp8["umup"].gaps
        out["fp8_gap/umup"] = float(np.mean(g)) if all(map(math.isfinite, g)) else math.nan
    out["train_seconds"] = a.train_seconds
    return out


def notes(a: Analysis, c) -> list[str]:
    out = [
        f"{a.runs} training runs of {c.steps} steps (batch {c.batch_size} x {c.model.seq_len} characters) in "
        f"{a.train_seconds / 60:.1f} min of training groups (each group's runs vmapped together)."
    ]
    for p in a.parametrizations:
        for w, why in a.unbracketed(p).items():
            out.append(f"{NAMES[p]} at width {w}: no optimum ({why}): move or widen log2_lrs / grid_shift.")
    d = a.drift.get("umup")
    if isinstance(d, Interval):
        out.append(
            f"Power: u-muP's drift interval half-width {(d.high - d.low) / 2:.2f} octave against the "
            f"+-{TRANSFER_MARGIN:g} margin of umup-lr-transfers."
        )
    return out


# ---------------------------------------------------------------------------------------------- figures


def sweeps_figure(a: Analysis) -> Figure:
    fig, axes = plots.figure(len(a.parametrizations), 1, panel=(4.5, 3.6), squeeze=False)
    for ax, p in zip(axes[0], a.parametrizations, strict=True):
        sweeps = [a.sweeps[(p, w)] for w in a.widths]
        plots.curves(
            ax,
            {f"width {w}": (s.log2_lrs, s.per_seed) for w, s in zip(a.widths, sweeps, strict=True)},
            xlabel="log2 learning rate",
            ylabel="valid loss (nats/char)",
        )
        for s in sweeps:
            if s.optimum.bracketed:
                ax.axvline(s.optimum.log2_lr, color="grey", lw=0.5, ls=":")
        finite = [v for s in sweeps for v in s.mean if math.isfinite(v)]
        if finite:
            ax.set_ylim(min(finite) - 0.05, min(max(finite), min(finite) + 1.5))
        ax.set_title(NAMES[p])
    return Figure(
        "lr_sweeps",
        fig,
        "Validation loss against the global learning rate, one curve per width (mean over seeds, band: their "
        "range); dotted lines mark each width's optimum. The paper's Fig. 1(b) in our setting.",
    )


def optimum_figure(a: Analysis) -> Figure:
    fig, ax = plots.figure()
    for p in a.parametrizations:
        ax.plot(np.log2(a.widths), [a.optimum(p, w).log2_lr for w in a.widths], marker="o", label=NAMES[p])
    ax.set_xlabel("log2 width")
    ax.set_ylabel("optimal log2 learning rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Figure("optimum_vs_width", fig, "The optimal learning rate of each parametrization by width.")


def mults_figure(a: Analysis) -> Figure:
    fig, ax = plots.figure()
    for name, pts in a.mults.curves.items():
        ax.plot(np.log2([v for v, _ in pts]), [loss for _, loss in pts], marker="o", label=name)
    ax.set_xlabel("log2 (hyperparameter / default)")
    ax.set_ylabel("valid loss (nats/char)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Figure(
        "umup_mults",
        fig,
        "One-dimensional sweeps of u-muP's hyperparameters (Fig. 1(a)'s independent search) at the proxy width.",
    )

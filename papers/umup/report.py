"""The u-muP report: the optimal learning rate of every parametrization and width (with its spread over seeds), the
FP8 runs beside their FP32 twins, the hyperparameter sweeps at the proxy width, and the figures in the paper's style
(loss against learning rate, one curve per width). The claims are declared and measured in papers/umup/claims.py."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.report import Figure, Interval, Report, Table
from core.stats import seed_mean
from papers.umup.claims import HEADS, claims, drift, facts, measure, mult_gains, rel_gaps  # noqa: F401  (claims: re-exported)
from papers.umup.train import GroupResult, Optimum, mean_curve, optimum

NAMES = {"sp": "SP", "mup": "muP", "umup": "u-muP"}


def _slope(optima: dict[int, Optimum]) -> float:
    w = sorted(optima)
    x, y = np.log2(w), np.asarray([optima[k].log2_lr for k in w])
    return float(np.polyfit(x, y, 1)[0]) if np.isfinite(y).all() else math.nan


def _fmt(x: float, digits: int = 3) -> str:
    return "diverged" if not math.isfinite(x) else f"{x:.{digits}f}"


# ---------------------------------------------------------------------------------------------- the report


def build_report(
    cfg,
    sweeps: dict[tuple[str, int], GroupResult],
    fp8: dict[str, GroupResult],
    mult_sweeps: dict[tuple[str, float], GroupResult],
) -> Report:
    c = cfg.umup
    seeds = [int(s) for s in c.seeds]
    widths = sorted(int(w) for w in c.widths)
    tables, figures, metrics, notes = [], [], {}, []

    # --- the learning-rate sweeps
    drifts, optima = {}, {}
    for p in c.parametrizations:
        drifts[p], optima[p] = drift({w: sweeps[(p, w)] for w in widths}, seeds)
    rows = []
    for p in c.parametrizations:
        for w in widths:
            r, o = sweeps[(p, w)], optima[p][w]
            per_seed = [optimum(*mean_curve(r, [s])).log2_lr for s in seeds]
            rows.append(
                [
                    NAMES[p],
                    w,
                    r.params,
                    f"{o.grid_log2_lr:g}" + (" (grid edge)" if o.at_edge else ""),
                    round(o.log2_lr, 2),
                    ", ".join(f"{v:.2f}" for v in per_seed),
                    _fmt(o.loss),
                ]
            )
            metrics[f"log2_lr_opt/{p}/w{w}"] = o.log2_lr
    tables.append(
        Table(
            "optimal_lr",
            "Optimal learning rate per parametrization and width",
            [
                "parametrization",
                "width",
                "parameters",
                "best grid log2 lr",
                "optimum log2 lr",
                "per seed",
                "valid loss at best (nats/char)",
            ],
            rows,
            caption="The optimum is the parabola vertex through the best grid point of the seed-mean validation loss "
            "and its neighbours (within half a grid step); 'per seed' repeats it on each seed's curve alone.",
        )
    )
    drift_rows = []
    for p in c.parametrizations:
        d = drifts[p]
        drift_rows.append([NAMES[p], str(d), round(_slope(optima[p]), 2)])
        metrics[f"drift_octaves/{p}"] = d.estimate if isinstance(d, Interval) else math.nan
    tables.append(
        Table(
            "lr_drift",
            "How far the optimum moves with width",
            [
                "parametrization",
                f"optimum moves, width {widths[0]} to {widths[-1]} (octaves)",
                "slope d log2 lr* / d log2 width",
            ],
            drift_rows,
            caption="Interval: percentiles over every resample of the seeds (with replacement). For Adam, SP's "
            "optimum is expected to fall about an octave per doubling (slope -1); muP's and u-muP's to stay (0).",
        )
    )

    fig, axes = plots.figure(len(c.parametrizations), 1, panel=(4.5, 3.6), squeeze=False)
    for ax, p in zip(axes[0], c.parametrizations, strict=True):
        series = {}
        for w in widths:
            r = sweeps[(p, w)]
            x, _ = mean_curve(r, seeds)
            per = np.stack([mean_curve(r, [s])[1] for s in seeds], axis=1)
            series[f"width {w}"] = (x, per)
        plots.curves(ax, series, xlabel="log2 learning rate", ylabel="valid loss (nats/char)")
        for w in widths:
            o = optima[p][w]
            ax.axvline(o.log2_lr, color="grey", lw=0.5, ls=":")
        finite = [v for w in widths for v in mean_curve(sweeps[(p, w)], seeds)[1] if math.isfinite(v)]
        if finite:
            ax.set_ylim(min(finite) - 0.05, min(max(finite), min(finite) + 1.5))
        ax.set_title(NAMES[p])
    figures.append(
        Figure(
            "lr_sweeps",
            fig,
            "Validation loss against the global learning rate, one curve per width (mean over seeds, band: their "
            "range); dotted lines mark each width's optimum. The paper's Fig. 1(b) in our setting.",
        )
    )
    fig, ax = plots.figure()
    for p in c.parametrizations:
        ys = [optima[p][w].log2_lr for w in widths]
        ax.plot(np.log2(widths), ys, marker="o", label=NAMES[p])
    ax.set_xlabel("log2 width")
    ax.set_ylabel("optimal log2 learning rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    figures.append(Figure("optimum_vs_width", fig, "The optimal learning rate of each parametrization by width."))

    # --- u-muP's other hyperparameters at the proxy width
    if mult_sweeps:
        proxy = widths[0]
        lr, default_mean, gains, best = mult_gains(sweeps[("umup", proxy)], mult_sweeps, seeds)
        rows = [[name, value, _fmt(mean), f"{100 * gain:+.2f}%"] for name, value, mean, gain in gains]
        tables.append(
            Table(
                "umup_mults",
                "u-muP's other hyperparameters, one at a time",
                ["hyperparameter", "value (default 1)", "valid loss, seed mean", "gain over all-default"],
                rows,
                caption=f"u-muP at width {proxy}, learning rate 2^{math.log2(lr):g} (the sweep's best grid point); "
                f"all-default loss {default_mean:.3f}.",
            )
        )
        metrics["umup_mults/best_gain"] = best[0]
        fig, ax = plots.figure()
        for name in c.mults:
            pts = sorted(
                [(1.0, default_mean)]
                + [(v, float(np.mean(list(r.at_lr().values())))) for (n, v), r in mult_sweeps.items() if n == name]
            )
            ax.plot(np.log2([p[0] for p in pts]), [p[1] for p in pts], marker="o", label=name)
        ax.set_xlabel("log2 (hyperparameter / default)")
        ax.set_ylabel("valid loss (nats/char)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        figures.append(
            Figure(
                "umup_mults",
                fig,
                "One-dimensional sweeps of u-muP's hyperparameters (Fig. 1(a)'s "
                "independent search) at the proxy width.",
            )
        )

    # --- FP8
    if fp8:
        rows, gaps = [], {}
        for p, r in fp8.items():
            fp32 = sweeps[(p, r.width)]
            g = rel_gaps(r, fp32)
            gaps[p] = g
            ref = list(fp32.at_lr(r.lr[0]).values())
            finite = [x for x in g if math.isfinite(x)]
            rows.append(
                [
                    NAMES[p],
                    r.width,
                    f"2^{math.log2(r.lr[0]):g}",
                    _fmt(float(np.mean(ref))),
                    ", ".join(_fmt(v) for v in r.valid_loss),
                    str(seed_mean(finite))
                    if len(finite) == len(g) and len(g) > 1
                    else "diverged"
                    if not finite
                    else ", ".join(f"{x:.4f}" for x in g),
                ]
            )
        tables.append(
            Table(
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
                f"and weights ({HEADS[c.fp8_head]}), E5M2 for the gradients its backward matmuls consume.",
            )
        )
        if "umup" in gaps:
            g = gaps["umup"]
            metrics["fp8_gap/umup"] = float(np.mean(g)) if all(map(math.isfinite, g)) else math.nan

    seconds = sum(r.seconds for r in [*sweeps.values(), *fp8.values(), *mult_sweeps.values()])
    metrics["train_seconds"] = seconds
    runs = sum(len(r.lr) for r in [*sweeps.values(), *fp8.values(), *mult_sweeps.values()])
    notes.append(
        f"{runs} training runs of {c.steps} steps (batch {c.batch_size} x {c.model.seq_len} characters) in "
        f"{seconds / 60:.1f} min of training groups (each group's runs vmapped together)."
    )
    for p in c.parametrizations:
        edges = [w for w in widths if optima[p][w].at_edge]
        if edges:
            notes.append(f"{NAMES[p]}: the optimum at width(s) {edges} sits at the edge of the grid: widen log2_lrs.")

    return Report(
        paper="umup",
        title=cfg.paper.title,
        claims=measure(cfg, sweeps, fp8, mult_sweeps),
        tables=tables,
        figures=figures,
        metrics=metrics,
        notes=notes,
        facts=facts(cfg, sweeps),
    )

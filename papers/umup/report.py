"""The u-muP report: the optimal learning rate of every parametrization and width (with its interval over seed
resamples and the old 3-point estimate beside), how far it moves with width, u-muP's loss against SP's and muP's at
the widest width, the FP8 runs beside their FP32 twins, the hyperparameter sweeps at the proxy width, and the figures
in the paper's style (loss against learning rate, one curve per width). It formats: every optimum, move, slope and
interval is the decision's (papers/umup/decide.py, `decided.estimates`); from the Results it takes only the losses
themselves, their means over seeds and the best grid point of a seed-mean curve."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.claims import Decided, Interval
from core.report import Figure, Report, Table, estimate_text, fixed
from papers.umup.design import HEADS, NAMES, TRANSFER_MARGIN
from papers.umup.results import GroupResult, Results, best_grid_lr, mean_curve


def render(cfg, results: Results, decided: Decided) -> Report:
    c = cfg.umup
    v = View(cfg, results, decided)
    tables = [optimal_lr_table(v), drift_table(v)]
    if v.gap_others:
        tables.append(loss_gap_table(v, c.steps))
    figures = [sweeps_figure(v), optimum_figure(v)]
    if results.mult_sweeps:
        tables.append(mults_table(v))
        figures.append(mults_figure(v))
    if results.fp8:
        tables.append(fp8_table(v, c.fp8_head))
    return Report(
        paper="umup",
        title=cfg.paper.title,
        tables=tables,
        figures=figures,
        metrics=metrics(v),
        notes=notes(v, c),
    )


class View:
    """The run's settings, Results and decided estimates as the tables and figures read them."""

    def __init__(self, cfg, results: Results, decided: Decided) -> None:
        c = cfg.umup
        self.results = results
        self.decided = decided
        self.est = decided.estimates
        self.parametrizations = list(c.parametrizations)
        self.widths = sorted(int(w) for w in c.widths)
        self.seeds = [int(s) for s in c.seeds]
        others = [p for p in ("sp", "mup") if p in self.parametrizations]
        self.gap_others = others if "umup" in self.parametrizations else []

    def optimum(self, p: str, w: int) -> Interval | str:
        return self.est[f"optimum/{p}/w{w}"]

    def estimate(self, key: str) -> float:
        """The point estimate of the decided estimate `key` (an interval's, or a single seed's value); NaN where the
        decision gave none or only a text ("diverged")."""
        value = self.est.get(key)
        if isinstance(value, Interval):
            return value.estimate
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan

    def groups(self) -> list[GroupResult]:
        r = self.results
        return [*r.sweeps.values(), *r.fp8.values(), *r.mult_sweeps.values()]


def _loss(x: float) -> str:
    return fixed(x, 3, missing="diverged")


def _octaves(x: float) -> str:
    return fixed(x, 2, missing="-")


# ---------------------------------------------------------------------------------------------- tables


def optimal_lr_table(v: View) -> Table:
    rows = []
    for p in v.parametrizations:
        for w in v.widths:
            result = v.results.sweeps[(p, w)]
            x, mean = mean_curve(result, v.seeds)
            finite = np.isfinite(mean)
            if finite.any():
                b = int(np.argmin(np.where(finite, mean, np.inf)))
                best = f"{x[b]:g}" + (" (grid edge)" if b in (0, len(x) - 1) else "")
                loss = mean[b]
            else:
                best, loss = "-", math.inf
            rows.append(
                [
                    NAMES[p],
                    w,
                    result.params,
                    f"{x[0]:g} to {x[-1]:g}",
                    best,
                    v.optimum(p, w),
                    _octaves(v.estimate(f"optimum_old/{p}/w{w}")),
                    _loss(loss),
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
            "valid loss at best (nats/char)",
        ],
        rows,
        caption="The optimum is the vertex, not clamped, of the least-squares quadratic in log2 lr through the "
        "seed-mean validation loss at the best grid point and up to two grid points on each side; '-' where the "
        "curve does not bracket it (reason given). Interval: percentiles over seed resamples, the same resamples "
        "at every width. 'old' is the estimate used until issue 44: the parabola through the best grid point and "
        "its two neighbours, clamped to half a grid step, which on an even grid never leaves half a step of the "
        "best grid point (its interval over the same resamples is in the estimates, optimum_old/...).",
    )


def drift_table(v: View) -> Table:
    def half_width(d: Interval | str) -> str:
        return f"{(d.high - d.low) / 2:.2f}" if isinstance(d, Interval) else "-"

    return Table(
        "lr_drift",
        "How far the optimum moves with width",
        [
            "parametrization",
            f"optimum moves, width {v.widths[0]} to {v.widths[-1]} (octaves)",
            "interval half-width",
            "old: 3-point, clamped",
            "slope d log2 lr* / d log2 width",
        ],
        [
            [
                NAMES[p],
                str(v.est[f"drift/{p}"]),
                half_width(v.est[f"drift/{p}"]),
                str(v.est[f"drift_old/{p}"]),
                _octaves(v.estimate(f"slope/{p}")),
            ]
            for p in v.parametrizations
        ],
        caption="Interval: percentiles over seed resamples (a resample whose fit does not bracket its optimum counts "
        f"against the claim). u-muP's claim asks the whole interval within +-{TRANSFER_MARGIN:g} octave, so it "
        f"can hold only where the half-width is under {TRANSFER_MARGIN:g} (the power); muP's row is a reported "
        "comparison, not a claim. For Adam, SP's optimum is expected to fall about an octave per doubling "
        "(slope -1); muP's and u-muP's to stay (0). The slope's interval over the same resamples is in the "
        "estimates (slope/...).",
    )


def loss_gaps(v: View) -> list[tuple[str, float, float, Interval | float | str]]:
    """(other, u-muP's seed-mean loss, other's, relative gap) at the widest width, each at the best grid point of
    its own seed-mean curve: the decided gap (a paired interval, one seed's gap, or "diverged")."""
    w = v.widths[-1]
    a = v.results.sweeps[("umup", w)]
    a_losses = a.at_lr(best_grid_lr(a, v.seeds))
    out = []
    for other in v.gap_others:
        b = v.results.sweeps[(other, w)]
        b_losses = b.at_lr(best_grid_lr(b, v.seeds))
        rel = v.est.get(f"loss_gap/umup_vs_{other}", "-")
        out.append(
            (
                other,
                float(np.mean([a_losses[s] for s in v.seeds])),
                float(np.mean([b_losses[s] for s in v.seeds])),
                rel,
            )
        )
    return out


def loss_gap_table(v: View, steps: int) -> Table:
    w = v.widths[-1]
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
        [[NAMES[other], w, _loss(a), _loss(b), rel] for other, a, b, rel in loss_gaps(v)],
        caption="Each at the best grid point of its own seed-mean curve; the gap paired by seed (the same seed's "
        "runs see the same batches), mean with its 95% t interval. A reported comparison, not a claim: the paper "
        f"compares u-muP with muP after full training at widths 256 to 4096 (UMUP-FIG1B); here {steps} steps.",
    )


def mult_rows(v: View) -> tuple[float, float, list[tuple[str, float, float, float]]]:
    """(the learning rate of the one-at-a-time groups, the all-default seed-mean loss there, [(name, value, seed-mean
    loss, relative gain over all-default)]), a diverged run's loss counted as +inf."""
    mult_sweeps = v.results.mult_sweeps
    lr = mult_sweeps[next(iter(mult_sweeps))].lr[0]
    default = v.results.sweeps[("umup", v.widths[0])].at_lr(lr)
    default_mean = float(np.mean([default[s] for s in v.seeds]))
    rows = []
    for (name, value), r in sorted(mult_sweeps.items()):
        losses = r.at_lr()
        mean = float(np.mean([losses[s] if math.isfinite(losses[s]) else math.inf for s in v.seeds]))
        rows.append((name, value, mean, (default_mean - mean) / default_mean))
    return lr, default_mean, rows


def _percent(interval: Interval | None) -> str:
    """A decided relative interval in percent, '-' where there is none."""
    if not isinstance(interval, Interval):
        return "-"
    return f"{100 * interval.estimate:+.2f}% [{100 * interval.low:+.2f}, {100 * interval.high:+.2f}]"


def mults_table(v: View) -> Table:
    lr, default_mean, rows = mult_rows(v)
    return Table(
        "umup_mults",
        "u-muP's other hyperparameters, one at a time",
        [
            "hyperparameter",
            "value (default 1)",
            "valid loss, seed mean",
            "gain over all-default",
            "gain paired by seed (95% t interval)",
        ],
        [
            [name, value, _loss(mean), f"{100 * gain:+.2f}%", _percent(v.est.get(f"mult_gain/{name}/{value:g}"))]
            for name, value, mean, gain in rows
        ],
        caption=f"u-muP at width {v.widths[0]}, learning rate 2^{math.log2(lr):g} (the sweep's best grid point); "
        f"all-default loss {default_mean:.3f}. 'gain over all-default' is the relative drop of the seed-mean loss "
        "(umup-defaults-near-optimal takes the largest); the paired interval is the mean of the per-seed relative "
        "gains (2 or more seeds).",
    )


def fp8_table(v: View, head: str) -> Table:
    rows = []
    for p, r in v.results.fp8.items():
        fp32 = v.results.sweeps[(p, r.width)]
        rows.append(
            [
                NAMES[p],
                r.width,
                f"2^{math.log2(r.lr[0]):g}",
                _loss(float(np.mean(list(fp32.at_lr(r.lr[0]).values())))),
                ", ".join(_loss(x) for x in r.valid_loss),
                estimate_text(v.est.get(f"fp8_gap/{p}"), ".4g"),
            ]
        )
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


def metrics(v: View) -> dict[str, float]:
    out = {f"log2_lr_opt/{p}/w{w}": v.estimate(f"optimum/{p}/w{w}") for p in v.parametrizations for w in v.widths}
    for p in v.parametrizations:
        out[f"drift_octaves/{p}"] = v.estimate(f"drift/{p}")
        out[f"drift_octaves_old/{p}"] = v.estimate(f"drift_old/{p}")
    for other in v.gap_others:
        out[f"loss_gap/umup_vs_{other}"] = v.estimate(f"loss_gap/umup_vs_{other}")
    best_gain = next((c.ours for c in v.decided.claims if c.id == "umup-defaults-near-optimal"), None)
    if v.results.mult_sweeps and isinstance(best_gain, int | float):
        out["umup_mults/best_gain"] = float(best_gain)
    if "umup" in v.results.fp8:
        out["fp8_gap/umup"] = v.estimate("fp8_gap/umup")
    out["train_seconds"] = sum(r.seconds for r in v.groups())
    return out


def notes(v: View, c) -> list[str]:
    groups = v.groups()
    seconds = sum(r.seconds for r in groups)
    out = [
        f"{sum(len(r.lr) for r in groups)} training runs of {c.steps} steps (batch {c.batch_size} x "
        f"{c.model.seq_len} characters) in {seconds / 60:.1f} min of training groups (each group's runs vmapped "
        "together)."
    ]
    for p in v.parametrizations:
        for w in v.widths:
            o = v.optimum(p, w)
            if isinstance(o, Interval):
                continue
            # the decided cell: "- (why)" where the seed-mean curve has no optimum, "<estimate> (why)" where the
            # resamples give it no interval
            what = f"no optimum ({o[3:-1]})" if o.startswith("- (") else f"optimum {o}"
            out.append(f"{NAMES[p]} at width {w}: {what}: move or widen log2_lrs / grid_shift.")
    d = v.est.get("drift/umup")
    if isinstance(d, Interval):
        out.append(
            f"Power: u-muP's drift interval half-width {(d.high - d.low) / 2:.2f} octave against the "
            f"+-{TRANSFER_MARGIN:g} margin of umup-lr-transfers."
        )
    return out


# ---------------------------------------------------------------------------------------------- figures


def _per_seed(result: GroupResult, seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(log2 lr, [learning rates, seeds]: each seed's loss, +inf where it diverged)."""
    x = mean_curve(result, seeds)[0]
    return x, np.stack([mean_curve(result, [s])[1] for s in seeds], axis=1)


def sweeps_figure(v: View) -> Figure:
    fig, axes = plots.figure(len(v.parametrizations), 1, panel=(4.5, 3.6), squeeze=False)
    for ax, p in zip(axes[0], v.parametrizations, strict=True):
        groups = {w: v.results.sweeps[(p, w)] for w in v.widths}
        plots.curves(
            ax,
            {f"width {w}": _per_seed(r, v.seeds) for w, r in groups.items()},
            xlabel="log2 learning rate",
            ylabel="valid loss (nats/char)",
        )
        for w in v.widths:
            o = v.optimum(p, w)
            if isinstance(o, Interval):
                ax.axvline(o.estimate, color="grey", lw=0.5, ls=":")
        finite = [x for r in groups.values() for x in mean_curve(r, v.seeds)[1] if math.isfinite(x)]
        if finite:
            ax.set_ylim(min(finite) - 0.05, min(max(finite), min(finite) + 1.5))
        ax.set_title(NAMES[p])
    return Figure(
        "lr_sweeps",
        fig,
        "Validation loss against the global learning rate, one curve per width (mean over seeds, band: their "
        "range); dotted lines mark each width's optimum. The paper's Fig. 1(b) in our setting.",
    )


def optimum_figure(v: View) -> Figure:
    fig, ax = plots.figure()
    for p in v.parametrizations:
        optima = [v.optimum(p, w) for w in v.widths]
        y = np.asarray([o.estimate if isinstance(o, Interval) else math.nan for o in optima])
        low = np.asarray([o.estimate - o.low if isinstance(o, Interval) else 0.0 for o in optima])
        high = np.asarray([o.high - o.estimate if isinstance(o, Interval) else 0.0 for o in optima])
        ax.errorbar(np.log2(v.widths), y, yerr=[low, high], marker="o", capsize=3, label=NAMES[p])
    ax.set_xlabel("log2 width")
    ax.set_ylabel("optimal log2 learning rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Figure(
        "optimum_vs_width",
        fig,
        "The optimal learning rate of each parametrization by width (bars: 95% interval over seed resamples).",
    )


def mults_figure(v: View) -> Figure:
    _, default_mean, _ = mult_rows(v)
    fig, ax = plots.figure()
    names = list(dict.fromkeys(name for name, _ in v.results.mult_sweeps))
    for name in names:
        swept = [(x, r) for (n, x), r in v.results.mult_sweeps.items() if n == name]
        pts = sorted([(1.0, default_mean)] + [(x, float(np.mean(list(r.at_lr().values())))) for x, r in swept])
        ax.plot(np.log2([x for x, _ in pts]), [loss for _, loss in pts], marker="o", label=name)
    ax.set_xlabel("log2 (hyperparameter / default)")
    ax.set_ylabel("valid loss (nats/char)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Figure(
        "umup_mults",
        fig,
        "One-dimensional sweeps of u-muP's hyperparameters (Fig. 1(a)'s independent search) at the proxy width.",
    )

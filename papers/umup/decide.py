"""The u-muP decision: every declared claim measured from the stored Results (each by its own function in
papers/umup/claims.py), and the estimates the report's tables and figures show, by name. A pure function of the
Results and the config: numpy and scipy only, the seed resamples deterministic (every ordered resample, or a seeded
draw of them: claims.resamples). The facts: `sp-lr-drift` (calibration), SP's optimum move with width.

Estimates (an Interval where one exists, else the text the table shows):
    optimum/<p>/w<width>      the optimal log2 learning rate of the seed-mean curve (the quadratic fit's vertex), with
                              its percentile interval over seed resamples (the same resamples at every width)
    optimum_old/<p>/w<width>  the estimate used until issue 44 (3 points, clamped), with the same kind of interval
    drift/<p>, drift_old/<p>  the optimum's move from the narrowest width to the widest (octaves), by either estimate
    slope/<p>                 least-squares slope of the optimal log2 lr against log2 width, the same resamples
    loss_gap/umup_vs_<p>      u-muP's loss relative to SP's or muP's at the widest width, paired by seed (t interval;
                              muP's is the claim umup-matches-mup's figure)
    fp8_gap/<p>               the relative FP8 gap of each FP8 group, paired by seed (t interval)
    mult_gain/<name>/<value>  each one-at-a-time setting's relative gain over all-default, paired by seed
The paired t intervals need 2 seeds and finite losses; where they cannot be made there is no estimate, and the
report shows the per-seed values from the Results.
"""

from __future__ import annotations

import math

import numpy as np

from core.claims import Decided, Fact, Interval, Value, interval_below, margin_distance
from papers.umup.claims import (
    SP_DRIFT_OCTAVES,
    Optimum,
    claims,
    drift,
    fp8_gap,
    loss_gap,
    optimum,
    paired_gain,
    percentile_interval,
    resampled_optima,
    three_point_optimum,
)
from papers.umup.results import Results, mean_curve


def decide(cfg, results: Results) -> Decided:
    """Every declared claim, in declared order, by its own measuring function; the facts; and the report's
    estimates."""
    decided = [c.measure(c, cfg, results) if c.measure else c for c in claims(cfg)]
    return Decided(decided, facts=facts(cfg, results), estimates=estimates(cfg, results))


def facts(cfg, results: Results) -> list[Fact]:
    """Rows that are not claims. `sp-lr-drift` (calibration): SP's optimum falls with width, the claim sp-lr-drifts
    until 2026-11-29 (issue 62). SP's grid moves down grid_shift octaves per doubling of width, set after the
    2026-11-26 run had shown where its optimum goes, so the grid follows the drift that Adam's 1/width law for SP
    predicts (about one octave per doubling); the measured move checks our SP on a grid built to bracket it, not a
    figure of the u-muP paper (whose Fig. 1 shows muP and u-muP only)."""
    c = cfg.umup
    if "sp" not in c.parametrizations:
        return []
    widths = sorted(int(w) for w in c.widths)
    seeds = [int(s) for s in c.seeds]
    move = drift({w: results.sweeps[("sp", w)] for w in widths}, seeds, optimum)[0]
    doublings = math.log2(widths[-1] / widths[0])
    shift = c.grid_shift.get("sp", 0.0)
    away = margin_distance(interval_below(-SP_DRIFT_OCTAVES), move, None)
    where = ""
    if away is not None:
        where = f", {away.value:.2f} octaves below it ({away.halfwidths:.0f} half-widths of its interval)"
    return [
        Fact(
            "sp-lr-drift",
            f"SP: the move of the optimal log2 learning rate from width {widths[0]} to {widths[-1]} (octaves; the "
            "quadratic fit's vertex, 95% percentile interval over seed resamples)",
            move,
            "calibration",
            detail=f"SP's grid moves {shift:+g} octave per doubling of width (umup.grid_shift, set after the "
            "2026-11-26 run had shown its optimum falling about that fast), so it follows the drift that Adam's "
            f"1/width law for SP predicts (about {-doublings:+.0f} octaves over {widths[-1] // widths[0]}x; "
            "Tensor Programs V, REFERENCES.md MUP-SP-DRIFT); a grid that did not follow it would leave the widest "
            "width's optimum unbracketed. It checks our SP, not a figure of the u-muP paper (no SP in its Fig. 1). "
            f"Until 2026-11-29 it was the claim sp-lr-drifts (interval high < -{SP_DRIFT_OCTAVES:g} octave){where}: "
            "it could not fail at this design",
        )
    ]


def estimates(cfg, results: Results) -> dict[str, Value]:
    """The figures the report's tables and figures show, by name (the module's docstring lists them)."""
    c = cfg.umup
    seeds = [int(s) for s in c.seeds]
    widths = sorted(int(w) for w in c.widths)
    sweeps = results.sweeps
    out: dict[str, Value] = {}
    for p in c.parametrizations:
        by_width = {w: sweeps[(p, w)] for w in widths}
        draws = resampled_optima(by_width, seeds, optimum)  # [resample, width]
        old_draws = resampled_optima(by_width, seeds, three_point_optimum)
        fits = []
        for i, w in enumerate(widths):
            x, mean = mean_curve(by_width[w], seeds)
            best = optimum(x, mean)
            fits.append(best)
            out[f"optimum/{p}/w{w}"] = optimum_cell(best, draws[:, i])
            out[f"optimum_old/{p}/w{w}"] = percentile_interval(three_point_optimum(x, mean).log2_lr, old_draws[:, i])
        out[f"drift/{p}"] = drift(by_width, seeds, optimum)[0]
        out[f"drift_old/{p}"] = drift(by_width, seeds, three_point_optimum)[0]
        out[f"slope/{p}"] = percentile_interval(
            slope(widths, [o.log2_lr for o in fits]), np.asarray([slope(widths, row) for row in draws])
        )
    if "umup" in c.parametrizations:
        for other in (p for p in ("sp", "mup") if p in c.parametrizations):
            out[f"loss_gap/umup_vs_{other}"] = loss_gap(
                sweeps[("umup", widths[-1])], sweeps[(other, widths[-1])], seeds
            )
    for p, r in results.fp8.items():
        # an interval over the seeds; one seed's gap alone (a one-seed design, as the smoke scale's), or "diverged"
        out[f"fp8_gap/{p}"] = fp8_gap(r, sweeps[(p, r.width)])
    if results.mult_sweeps and len(seeds) > 1:
        lr = results.mult_sweeps[next(iter(results.mult_sweeps))].lr[0]
        default = sweeps[("umup", widths[0])].at_lr(lr)
        for (name, value), r in sorted(results.mult_sweeps.items()):
            swept = r.at_lr()
            if all(math.isfinite(default[s]) and math.isfinite(swept[s]) for s in seeds):
                out[f"mult_gain/{name}/{value:g}"] = paired_gain(default, swept, seeds)
    return out


def optimum_cell(best: Optimum, draws: np.ndarray) -> Interval | str:
    """The seed-mean curve's optimum with its percentile interval over the resamples' optima; the estimate alone
    with the reason where the resamples give no interval; the reason alone where the curve gives no estimate."""
    if not best.bracketed:
        return f"- ({best.unbracketed})"
    interval = percentile_interval(best.log2_lr, draws)
    return interval if isinstance(interval, Interval) else f"{best.log2_lr:.2f} ({interval})"


def slope(widths: list[int], optima) -> float:
    """Least-squares slope of the optimal log2 lr against log2 width (NaN where a width has no optimum)."""
    y = np.asarray(optima, float)
    return float(np.polyfit(np.log2(widths), y, 1)[0]) if np.isfinite(y).all() else math.nan

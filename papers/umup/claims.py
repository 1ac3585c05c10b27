"""The u-muP claims: their declarations (from the config alone, before any run) and the functions that measure them.
The paper's side of each claim is in papers/umup/REFERENCES.md (UMUP-FIG1A/B/C, MUP-SP-DRIFT); the thresholds are
this project's reading of those figures (the same file says so). The ledger of changes to these claims is
papers/umup/ledger.py."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from core.report import Claim, Fact, Interval, at_most, interval_above, interval_below, or_diverged
from core.stats import seed_difference, seed_mean
from papers.umup.train import GroupResult

# how far (octaves of the learning rate over the swept width range) an optimum may move and still "stay put": one
# step of the paper's learning-rate grids (papers/umup/REFERENCES.md, UMUP-FIG1B: "the best LR for width 256 is
# ~optimal for 4096", one grid point over 16x); the same line decides that SP's optimum moves
TRANSFER_OCTAVES = 1.0
# UMUP-FIG1A: "an LR sweep alone reaches near-optimal loss for u-muP"; UMUP-FIG1C: "minimal degradation" in FP8.
# Both thresholds are our reading of those figures (REFERENCES.md says so): 1% of the loss
NEAR_OPTIMAL_REL = 0.01
FP8_GAP_REL = 0.01
BOOTSTRAP_CONFIDENCE = 0.9
HEADS = {"low": "the readout included", "fp32": "the readout kept in FP32"}

DRIFT_UNIT = "3 seeds (every ordered resample of the seeds with replacement, 27)"
FP8_UNIT = "3 seeds (paired by seed with the FP32 run)"


def _claims(cfg) -> dict[str, Claim]:
    c = cfg.umup
    widths = sorted(c.widths)
    span = f"{widths[0]} to {widths[-1]} ({widths[-1] // widths[0]}x)"
    out = []
    drift = (
        f"log2 of the optimal learning rate at width {widths[-1]} minus at width {widths[0]} (octaves; sub-grid "
        "optimum of the seed-mean validation loss; interval over seed resamples)"
    )
    drift_statistic = (
        f"move of the optimal log2 learning rate from width {widths[0]} to {widths[-1]} (octaves): parabola vertex "
        "through the best grid point of the seed-mean validation loss, clamped to +-0.5 grid step of it; 90% "
        "percentile interval over seed resamples"
    )
    if "sp" in c.parametrizations:
        out.append(
            Claim(
                "sp-lr-drifts",
                f"SP: the optimal learning rate moves down with width over {span}: {drift}",
                "moves with width (Fig. 1(b) context; muP's motivation)",
                interval_below(-TRANSFER_OCTAVES),
                measure=measure_drift,
                source="MUP-SP-DRIFT",
                statistic=drift_statistic,
                confidence=BOOTSTRAP_CONFIDENCE,
                unit=DRIFT_UNIT,
                resolution="interval half-width ~0.06 octaves (README run: SP 3.30 [3.23, 3.35]) against a 1-octave "
                "bound",
            )
        )
    if "umup" in c.parametrizations:
        if c.mults:
            out.append(
                Claim(
                    "umup-defaults-near-optimal",
                    f"u-muP at width {widths[0]}: the best of the one-dimensional sweeps of its other hyperparameters "
                    f"({', '.join(c.mults)} over {list(c.mult_values)} x default) lowers the seed-mean validation "
                    "loss of the learning-rate sweep alone (all at default 1) by this fraction",
                    "LR sweep alone ~optimal (Fig. 1(a))",
                    at_most(NEAR_OPTIMAL_REL),
                    measure=measure_defaults,
                    source="UMUP-FIG1A",
                    statistic="largest relative drop of the seed-mean validation loss over the one-at-a-time sweeps "
                    "against all-default (0 when none is lower)",
                    unit="3 seeds (seed means; decided on the point value)",
                    resolution="point value, no interval: the README run's best gain 0.33% against the 1% bound",
                )
            )
    if "umup" in c.fp8_parametrizations:
        out.append(
            Claim(
                "umup-fp8-close",
                f"u-muP at width {widths[-1]} trained with plain FP8 casts (E4M3 forward, E5M2 gradients, every "
                f"linear layer, {HEADS[c.fp8_head]}, no scaling): validation loss relative to its FP32 twin, mean "
                "over seeds "
                "(paired by seed; interval beside)",
                "minimal degradation (Fig. 1(c))",
                at_most(FP8_GAP_REL),
                measure=measure_fp8_close,
                source="UMUP-FIG1C",
                statistic="relative validation-loss gap (FP8 - FP32) / FP32, mean over seeds (t interval reported "
                "beside, not decided on)",
                unit=FP8_UNIT + "; decided on the point value",
                resolution="point value; its 95% t interval half-width ~1.2% at 3 seeds (README run: 1.76% [0.53, "
                "3.00])",
            )
        )
    if {"umup", "sp"} <= set(c.fp8_parametrizations):
        out.append(
            Claim(
                "sp-fp8-worse",
                "SP's relative FP8 gap minus u-muP's (same casts, each at its own best FP32 learning rate)",
                "fails for other models (Fig. 1(c))",
                or_diverged(interval_above(0.0), "interval low > 0 (SP's FP8 gap the larger), or SP diverged in FP8"),
                measure=measure_sp_fp8_worse,
                source="UMUP-FIG1C",
                statistic="SP's relative FP8 gap minus u-muP's, Welch t interval over seeds",
                unit=FP8_UNIT,
                resolution="Welch half-width ~5% at 3 seeds (README run: SP 17.4% [12.3, 22.6]) against a bound of 0",
            )
        )
    return {claim.id: claim for claim in out}


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run (the runner records them and checks the report keeps them)."""
    return list(_claims(cfg).values())


def facts(cfg, sweeps: dict[tuple[str, int], GroupResult]) -> list[Fact]:
    """Rows that are not claims. `umup-lr-transfers` was a claim until issue 41 (papers/umup/ledger.py): decided
    within one grid step with each width's vertex clamped to half a step of its best grid point, it held unless
    the best grid point moved, so it is reported as a construction, not counted."""
    c = cfg.umup
    if "umup" not in c.parametrizations:
        return []
    widths = sorted(int(w) for w in c.widths)
    moved = drift({w: sweeps[("umup", w)] for w in widths}, [int(s) for s in c.seeds])[0]
    return [
        Fact(
            "umup-lr-transfers",
            f"u-muP: the optimal learning rate stays put over widths {widths[0]} to {widths[-1]} "
            f"({widths[-1] // widths[0]}x): the move of the optimal log2 learning rate (octaves; sub-grid optimum of "
            f"the seed-mean validation loss; {100 * BOOTSTRAP_CONFIDENCE:g}% interval over seed resamples)",
            moved,
            "construction",
            f"Within +-{TRANSFER_OCTAVES:g} octave by construction whenever the best grid point is the same at both "
            "widths: the grid step is 1 octave and papers/umup/claims.optimum clamps each width's parabola vertex to "
            "+-0.5 step of its best grid point, so the move lies in (grid move) +- 1 octave. It reports where the "
            "optimum sits; it does not test transfer. Until issue 41 it was the claim umup-lr-transfers "
            f"(interval within [-{TRANSFER_OCTAVES:g}, {TRANSFER_OCTAVES:g}]); papers/umup/ledger.py records the "
            "removal. A claim decided without the clamp is for a later issue.",
            paper="best LR at 256 ~optimal at 4096 (Fig. 1(b))",
        )
    ]


# ---------------------------------------------------------------------------------------------- analysis
# The statistics the claims are decided on, here so that the claims lock fingerprints them with the measuring
# functions (papers/umup/analysis.py reads the same ones for the report's tables and figures).


def mean_curve(result: GroupResult, seeds: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(log2 lr, mean valid loss over `seeds`, repeats counted (a resample); default: every seed once) sorted by
    lr; a diverged run makes its lr's mean +inf."""
    by_lr: dict[float, dict[int, float]] = {}
    for lr, seed, loss in zip(result.lr, result.seed, result.valid_loss, strict=True):
        by_lr.setdefault(lr, {})[seed] = loss if math.isfinite(loss) else math.inf
    lrs = sorted(by_lr)
    return np.log2(lrs), np.asarray([np.mean([by_lr[lr][s] for s in seeds or by_lr[lr]]) for lr in lrs])


@dataclass(frozen=True)
class Optimum:
    """The optimal learning rate of one loss-against-learning-rate curve."""

    log2_lr: float  # the sub-grid estimate (parabola through the best grid point and its neighbours)
    grid_log2_lr: float  # the best grid point
    loss: float  # the best grid point's loss
    at_edge: bool  # the best grid point is the first or last: the optimum is not bracketed


def optimum(log2_lrs: np.ndarray, losses: np.ndarray) -> Optimum:
    """Where the loss-vs-log2(lr) curve is lowest: the best grid point refined by the parabola through it and its
    two neighbours, the vertex kept within half a grid step of it."""
    x, y = np.asarray(log2_lrs, float), np.asarray(losses, float)
    if len(x) == 0 or not np.isfinite(y).any():
        return Optimum(math.nan, math.nan, math.inf, True)
    b = int(np.nanargmin(np.where(np.isfinite(y), y, np.inf)))
    edge = b in (0, len(x) - 1)
    best = float(x[b])
    if not edge and np.isfinite(y[b - 1]) and np.isfinite(y[b + 1]):
        h = (x[b + 1] - x[b - 1]) / 2
        curvature = y[b - 1] - 2 * y[b] + y[b + 1]
        if curvature > 0:
            shift = h / 2 * (y[b - 1] - y[b + 1]) / curvature
            best = float(x[b] + np.clip(shift, -h / 2, h / 2))
    return Optimum(best, float(x[b]), float(y[b]), edge)


def _resamples(seeds: list[int], limit: int = 1000) -> list[list[int]]:
    """Every ordered resample of the seeds with replacement (or `limit` random ones when there are more)."""
    n = len(seeds)
    if n**n <= limit:
        return [list(t) for t in itertools.product(seeds, repeat=n)]
    rng = np.random.default_rng(0)
    return [list(rng.choice(seeds, n)) for _ in range(limit)]


def drift(results: dict[int, GroupResult], seeds: list[int]) -> tuple[Interval | str, dict[int, Optimum]]:
    """The optimum's move from the narrowest to the widest width (octaves), with a percentile interval over seed
    resamples; "not bracketed" when either optimum sits at the edge of the grid."""
    widths = sorted(results)
    lo, hi = results[widths[0]], results[widths[-1]]
    optima = {w: optimum(*mean_curve(results[w], seeds)) for w in widths}
    if optima[widths[0]].at_edge or optima[widths[-1]].at_edge:
        return "not bracketed", optima
    estimate = optima[widths[-1]].log2_lr - optima[widths[0]].log2_lr
    values = [optimum(*mean_curve(hi, s)).log2_lr - optimum(*mean_curve(lo, s)).log2_lr for s in _resamples(seeds)]
    q = (1 - BOOTSTRAP_CONFIDENCE) / 2
    low, high = np.nanquantile(values, [q, 1 - q])
    n = len(values)
    return (
        Interval(estimate, min(low, estimate), max(high, estimate), BOOTSTRAP_CONFIDENCE, f"{n} seed resamples"),
        optima,
    )


def rel_gaps(fp8: GroupResult, fp32: GroupResult) -> list[float]:
    """(FP8 - FP32) / FP32 per seed, the FP32 run at the FP8 run's learning rate."""
    ref = fp32.at_lr(fp8.lr[0])
    return [(v - ref[s]) / ref[s] if math.isfinite(v) else math.inf for s, v in fp8.at_lr().items()]


def mult_gains(
    base: GroupResult, mult_sweeps: dict[tuple[str, float], GroupResult], seeds: list[int]
) -> tuple[float, float, list[tuple[str, float, float, float]], tuple[float, str | None]]:
    """u-muP's one-at-a-time sweeps against the all-default run at their learning rate: (that rate, the
    all-default seed-mean loss, [(name, value, seed-mean loss, relative gain)], (best gain, 'name=value'))."""
    lr = mult_sweeps[next(iter(mult_sweeps))].lr[0]
    default = base.at_lr(lr)
    default_mean = float(np.mean([default[s] for s in seeds]))
    rows, best = [], (0.0, None)
    for (name, value), r in sorted(mult_sweeps.items()):
        losses = r.at_lr()
        mean = float(np.mean([losses[s] if math.isfinite(losses[s]) else math.inf for s in seeds]))
        gain = (default_mean - mean) / default_mean
        rows.append((name, value, mean, gain))
        if gain > best[0]:
            best = (gain, f"{name}={value:g}")
    return lr, default_mean, rows, best


# Each claim's measuring function (its `measure=`, fingerprinted with its rule into papers/umup/claims.lock.json):
# `fn(claim, cfg, sweeps, fp8, mult_sweeps)` returns the claim with our figure, or unmeasured when its runs are
# missing.


def measure_drift(claim: Claim, cfg, sweeps, fp8, mult_sweeps) -> Claim:
    """The optimum's move with width of the parametrization the claim names (its id's first word)."""
    p = claim.id.split("-")[0]
    widths = sorted(int(w) for w in cfg.umup.widths)
    return claim.measured(drift({w: sweeps[(p, w)] for w in widths}, [int(s) for s in cfg.umup.seeds])[0])


def measure_defaults(claim: Claim, cfg, sweeps, fp8, mult_sweeps) -> Claim:
    if not mult_sweeps:
        return claim
    proxy = min(int(w) for w in cfg.umup.widths)
    _, default_mean, _, best = mult_gains(sweeps[("umup", proxy)], mult_sweeps, [int(s) for s in cfg.umup.seeds])
    return claim.measured(best[0], f"best: {best[1] or 'the defaults'}; all-default loss {default_mean:.3f}")


def measure_fp8_close(claim: Claim, cfg, sweeps, fp8, mult_sweeps) -> Claim:
    if "umup" not in fp8:
        return claim
    g = rel_gaps(fp8["umup"], sweeps[("umup", fp8["umup"].width)])
    value = float(np.mean(g)) if all(map(math.isfinite, g)) else "diverged"
    return claim.measured(value, str(seed_mean(g)) if value != "diverged" and len(g) > 1 else "")


def measure_sp_fp8_worse(claim: Claim, cfg, sweeps, fp8, mult_sweeps) -> Claim:
    if not {"sp", "umup"} <= set(fp8):
        return claim
    sp, um = (rel_gaps(fp8[p], sweeps[(p, fp8[p].width)]) for p in ("sp", "umup"))
    if not all(map(math.isfinite, sp)):
        value = "diverged"
    elif len(sp) > 1 and all(map(math.isfinite, um)):
        value = seed_difference(sp, um)
    else:
        value = float(np.mean(sp) - np.mean(um))
    return claim.measured(value)


def measure(
    cfg,
    sweeps: dict[tuple[str, int], GroupResult],
    fp8: dict[str, GroupResult],
    mult_sweeps: dict[tuple[str, float], GroupResult],
) -> list[Claim]:
    """Our figure for every declared claim, in declared order, each by its own measuring function."""
    return [c.measure(c, cfg, sweeps, fp8, mult_sweeps) if c.measure else c for c in claims(cfg)]

"""Everything the u-muP report shows, computed once from the training results: each learning-rate sweep's curves
and optima (seed mean with its interval over seed resamples, per seed, and the old 3-point estimate beside), how far
each parametrization's optimum moves with width (both estimates), u-muP's loss against SP's and muP's at the widest
width, the one-at-a-time hyperparameter sweeps and the FP8 runs' gaps to their FP32 twins. The statistics are
papers/umup/claims.py's (where the claims lock fingerprints them); papers/umup/report.py only formats an
`Analysis`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.report import Interval
from core.stats import seed_mean
from papers.umup.claims import (
    Optimum,
    best_grid_lr,
    drift,
    mean_curve,
    mult_gains,
    optimum,
    percentile_interval,
    rel_gaps,
    resampled_optima,
    three_point_optimum,
)
from papers.umup.train import GroupResult


@dataclass(frozen=True)
class Sweep:
    """One parametrization's learning-rate sweep at one width."""

    result: GroupResult
    log2_lrs: np.ndarray  # the grid, ascending
    mean: np.ndarray  # validation loss per learning rate, mean over the seeds (+inf where a run diverged)
    per_seed: np.ndarray  # [learning rates, seeds]: each seed's curve
    optimum: Optimum  # of the seed-mean curve (claims.optimum: the quadratic fit)
    interval: Interval | str  # its percentile interval over seed resamples; "not bracketed" without an estimate
    old: Optimum  # the estimate used until issue 44 (claims.three_point_optimum: 3 points, clamped)
    seed_optima: list[float]  # the optimal log2 learning rate of each seed's curve alone (NaN: not bracketed)


@dataclass(frozen=True)
class MultSweeps:
    """u-muP's other hyperparameters swept one at a time at the proxy width, at the learning-rate sweep's best
    grid point there."""

    width: int
    lr: float
    default_mean: float  # the all-default run's seed-mean validation loss at `lr`
    rows: list[tuple[str, float, float, float]]  # (name, value, seed-mean loss, relative gain over all-default)
    best_gain: float  # the largest gain (0 when none is lower)
    curves: dict[str, list[tuple[float, float]]]  # name -> (value, mean loss over its runs), default 1 included


@dataclass(frozen=True)
class FP8Run:
    """One parametrization trained with plain FP8 casts at the widest width, beside its FP32 twin."""

    width: int
    lr: float
    fp32_mean: float  # the FP32 run's seed-mean validation loss at the same learning rate
    valid_loss: list[float]  # the FP8 runs', per seed
    gaps: list[float]  # (FP8 - FP32) / FP32 per seed (inf: diverged)


@dataclass(frozen=True)
class LossGap:
    """u-muP's validation loss against another parametrization's at the widest width, each at the best grid point of
    its own seed-mean curve."""

    other: str
    width: int
    umup_loss: float  # seed mean
    other_loss: float  # seed mean
    rel: Interval | float  # (u-muP - other) / other per seed: mean with its t interval (one seed: the value)


@dataclass(frozen=True)
class Analysis:
    parametrizations: list[str]
    widths: list[int]  # ascending
    seeds: list[int]
    sweeps: dict[tuple[str, int], Sweep]
    drift: dict[str, Interval | str]  # the optimum's move from the narrowest width to the widest (octaves)
    old_drift: dict[str, Interval | str]  # the same with the old 3-point clamped estimate
    slope: dict[str, float]  # least-squares slope of the optimal log2 lr against log2 width (NaN if one is missing)
    gaps: list[LossGap]  # u-muP against SP and muP at the widest width
    mults: MultSweeps | None
    fp8: dict[str, FP8Run]
    train_seconds: float  # every group's training time
    runs: int  # training runs over every group

    @classmethod
    def from_results(
        cls,
        cfg,
        sweeps: dict[tuple[str, int], GroupResult],
        fp8: dict[str, GroupResult],
        mult_sweeps: dict[tuple[str, float], GroupResult],
    ) -> Analysis:
        c = cfg.umup
        seeds = [int(s) for s in c.seeds]
        widths = sorted(int(w) for w in c.widths)
        analysed = {}
        for p in c.parametrizations:
            draws = resampled_optima({w: sweeps[(p, w)] for w in widths}, seeds, optimum)
            analysed |= {(p, w): _sweep(sweeps[(p, w)], seeds, draws[:, i]) for i, w in enumerate(widths)}
        by_width = {p: {w: sweeps[(p, w)] for w in widths} for p in c.parametrizations}
        drifts = {p: drift(by_width[p], seeds, optimum)[0] for p in c.parametrizations}
        old_drifts = {p: drift(by_width[p], seeds, three_point_optimum)[0] for p in c.parametrizations}
        slopes = {p: _slope({w: analysed[(p, w)].optimum for w in widths}) for p in c.parametrizations}
        others = [p for p in ("sp", "mup") if p in c.parametrizations] if "umup" in c.parametrizations else []
        everything = [*sweeps.values(), *fp8.values(), *mult_sweeps.values()]
        return cls(
            parametrizations=list(c.parametrizations),
            widths=widths,
            seeds=seeds,
            sweeps=analysed,
            drift=drifts,
            old_drift=old_drifts,
            slope=slopes,
            gaps=[_loss_gap(sweeps, p, widths[-1], seeds) for p in others],
            mults=_mult_sweeps(widths[0], sweeps[("umup", widths[0])], mult_sweeps, seeds, c.mults)
            if mult_sweeps
            else None,
            fp8={p: _fp8_run(r, sweeps[(p, r.width)]) for p, r in fp8.items()},
            train_seconds=sum(r.seconds for r in everything),
            runs=sum(len(r.lr) for r in everything),
        )

    def optimum(self, parametrization: str, width: int) -> Optimum:
        return self.sweeps[(parametrization, width)].optimum

    def unbracketed(self, parametrization: str) -> dict[int, str]:
        """width -> why its seed-mean curve has no estimate of the optimum (the grid edge, a fit not convex, ...)."""
        return {w: o.unbracketed for w in self.widths if not (o := self.optimum(parametrization, w)).bracketed}


def _sweep(result: GroupResult, seeds: list[int], draws: np.ndarray) -> Sweep:
    x, mean = mean_curve(result, seeds)
    best = optimum(x, mean)
    return Sweep(
        result=result,
        log2_lrs=x,
        mean=mean,
        per_seed=np.stack([mean_curve(result, [s])[1] for s in seeds], axis=1),
        optimum=best,
        interval=percentile_interval(best.log2_lr, draws) if best.bracketed else "not bracketed",
        old=three_point_optimum(x, mean),
        seed_optima=[optimum(*mean_curve(result, [s])).log2_lr for s in seeds],
    )


def _loss_gap(sweeps: dict[tuple[str, int], GroupResult], other: str, width: int, seeds: list[int]) -> LossGap:
    """u-muP against `other`, each at the best grid point of its seed-mean curve; the per-seed gaps pair the same
    seed's runs."""
    a, b = (sweeps[(q, width)].at_lr(best_grid_lr(sweeps[(q, width)], seeds)) for q in ("umup", other))
    gaps = [(a[s] - b[s]) / b[s] for s in seeds]
    finite = all(map(math.isfinite, gaps))
    return LossGap(
        other,
        width,
        float(np.mean([a[s] for s in seeds])),
        float(np.mean([b[s] for s in seeds])),
        seed_mean(gaps) if finite and len(gaps) > 1 else float(np.mean(gaps)),
    )


def _slope(optima: dict[int, Optimum]) -> float:
    w = sorted(optima)
    x, y = np.log2(w), np.asarray([optima[k].log2_lr for k in w])
    return float(np.polyfit(x, y, 1)[0]) if np.isfinite(y).all() else math.nan


def _mult_sweeps(
    width: int, base: GroupResult, mult_sweeps: dict[tuple[str, float], GroupResult], seeds: list[int], names: list[str]
) -> MultSweeps:
    lr, default_mean, rows, best = mult_gains(base, mult_sweeps, seeds)
    curves = {
        name: sorted(
            [(1.0, default_mean)]
            + [(v, float(np.mean(list(r.at_lr().values())))) for (n, v), r in mult_sweeps.items() if n == name]
        )
        for name in names
    }
    return MultSweeps(width, lr, default_mean, rows, best[0], curves)


def _fp8_run(fp8: GroupResult, fp32: GroupResult) -> FP8Run:
    return FP8Run(
        width=fp8.width,
        lr=fp8.lr[0],
        fp32_mean=float(np.mean(list(fp32.at_lr(fp8.lr[0]).values()))),
        valid_loss=list(fp8.valid_loss),
        gaps=rel_gaps(fp8, fp32),
    )

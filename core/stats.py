"""Statistics that decide claims: seed spreads, paired bootstraps over examples, trends with intervals.

Every function returns a `core.report.Interval`, so a claim can be decided on the interval (`interval_above(0)`)
rather than on one number. The intervals come from scipy (`scipy.stats.bootstrap`, `ttest_1samp`, `ttest_ind`,
`linregress`, `binomtest`): nothing here is a home-made estimator.

    gain = paired_bootstrap(ensemble_rr, best_member_rr, seed=0)   # mean difference over the same test queries
    gap = seed_difference(mpnn_maes, full_maes)                   # mean over seeds, Welch t interval
    worse = paired_relative_gap(fp8_losses, fp32_losses)          # mean of a / b - 1 over paired seeds, t interval
    trend = slope(np.log(params), gaps)                           # OLS slope, t interval on its standard error
    share = proportion(dropped, total)                            # a share with its exact binomial interval
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from core.claims import Interval


def _vector(name: str, x: Sequence[float] | np.ndarray, at_least: int) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).ravel()
    if a.size < at_least:
        raise ValueError(f"{name}: need at least {at_least} values, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: values must be finite, got {a.tolist()[:8]}")
    return a


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def seed_mean(values: Sequence[float], *, confidence: float = 0.95) -> Interval:
    """The mean over seeds with a t interval (n - 1 degrees of freedom). At least 2 seeds."""
    from scipy import stats

    _check_confidence(confidence)
    a = _vector("seed_mean", values, 2)
    if np.ptp(a) == 0:
        return Interval(a[0], a[0], a[0], confidence, f"mean of {a.size} seeds (identical)")
    ci = stats.ttest_1samp(a, 0.0).confidence_interval(confidence)
    return Interval(a.mean(), ci.low, ci.high, confidence, f"t interval over {a.size} seeds, std {a.std(ddof=1):.3g}")


def seed_difference(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95) -> Interval:
    """mean(a) - mean(b) over independent seeds, with Welch's t interval. At least 2 seeds per side."""
    from scipy import stats

    _check_confidence(confidence)
    x, y = _vector("seed_difference a", a, 2), _vector("seed_difference b", b, 2)
    d = x.mean() - y.mean()
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return Interval(d, d, d, confidence, "difference of identical seeds")
    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
    return Interval(
        d,
        ci.low,
        ci.high,
        confidence,
        f"Welch t interval, {x.size} vs {y.size} seeds (std {x.std(ddof=1):.3g} / {y.std(ddof=1):.3g})",
    )


def proportion(count: int, total: int, *, confidence: float = 0.95) -> Interval:
    """The share count / total with its exact (Clopper-Pearson) binomial interval: each bound is where the binomial
    tail beyond the observed count has probability (1 - confidence) / 2 (scipy.stats.binomtest)."""
    from scipy import stats

    _check_confidence(confidence)
    if not (isinstance(total, int | np.integer) and total >= 1):
        raise ValueError(f"proportion: total must be a positive integer, got {total!r}")
    if not (isinstance(count, int | np.integer) and 0 <= count <= total):
        raise ValueError(f"proportion: count must be an integer in [0, {total}], got {count!r}")
    ci = stats.binomtest(int(count), int(total)).proportion_ci(confidence, method="exact")
    return Interval(count / total, ci.low, ci.high, confidence, f"Clopper-Pearson over {total} trials")


def relative_gaps(values: Sequence[float], reference: Sequence[float]) -> np.ndarray:
    """a / b - 1 for each pair (a, b) of `values` and `reference` (the same seed of two arms, which share its
    initialisation and batches): how much worse (> 0) or better each value is than its reference. A value that is
    not finite (an arm that diverged) gives +inf; a reference that is not finite gives what the division gives."""
    a = np.asarray(values, np.float64).ravel()
    b = np.asarray(reference, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"relative_gaps: values and reference must pair up, got {a.size} and {b.size}")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(a), a / b - 1, np.inf)


def paired_relative_gap(
    values: Sequence[float], reference: Sequence[float], *, confidence: float = 0.95
) -> Interval | float | str:
    """The mean of `relative_gaps(values, reference)` over the pairs, with a t interval over them (`seed_mean`); the
    gap itself for a single pair; "diverged" where a value is not finite (no interval says anything then)."""
    gaps = relative_gaps(values, reference)
    if gaps.size == 0:
        raise ValueError("paired_relative_gap: need at least one pair")
    if not np.all(np.isfinite(gaps)):
        return "diverged"
    return seed_mean(gaps, confidence=confidence) if gaps.size > 1 else float(gaps[0])


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float] | None = None,
    *,
    statistic: Callable[[np.ndarray], float] = np.mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """statistic(a - b) over paired examples (the same test queries scored by two models), with a percentile
    bootstrap interval from resampling the examples. With `b` None, the statistic of `a` itself."""
    from scipy import stats

    _check_confidence(confidence)
    if n_resamples < 100:
        raise ValueError(f"paired_bootstrap: n_resamples must be >= 100, got {n_resamples}")
    x = _vector("paired_bootstrap a", a, 2)
    if b is not None:
        y = _vector("paired_bootstrap b", b, 2)
        if y.shape != x.shape:
            raise ValueError(f"paired_bootstrap: a and b must pair up, got {x.size} and {y.size} values")
        x = x - y
    point = float(statistic(x))
    if np.ptp(x) == 0:
        return Interval(point, point, point, confidence, f"{x.size} identical paired differences")
    res = stats.bootstrap(
        (x,),
        lambda s, axis=-1: np.apply_along_axis(statistic, axis, s),
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
        vectorized=True,
    )
    ci = res.confidence_interval
    return Interval(point, ci.low, ci.high, confidence, f"paired bootstrap over {x.size} examples")


def paired_speedup(
    reference_seconds: Sequence[float], seconds: Sequence[float], *, confidence: float = 0.95, seed: int = 0
) -> Interval:
    """Reference time / time over timing rounds paired as they were timed (interleaved, both warmed): the median of
    the per-round ratios, with a percentile bootstrap interval over the rounds (`paired_bootstrap` of the median on
    log times, exponentiated). Above 1: faster than the reference. At least two rounds."""
    a, b = np.log(np.asarray(reference_seconds, np.float64)), np.log(np.asarray(seconds, np.float64))
    log_ratio = paired_bootstrap(a, b, statistic=np.median, confidence=confidence, seed=seed)
    return Interval(
        math.exp(log_ratio.estimate),
        math.exp(log_ratio.low),
        math.exp(log_ratio.high),
        log_ratio.confidence,
        f"median of {a.size} paired rounds, bootstrap interval",
    )


def slope(x: Sequence[float], y: Sequence[float], *, confidence: float = 0.95) -> Interval:
    """The least-squares slope of y on x with a t interval (n - 2 degrees of freedom). Pass every seed's point
    (x repeated per seed) so the interval includes the seed spread."""
    from scipy import stats

    _check_confidence(confidence)
    xs, ys = _vector("slope x", x, 3), _vector("slope y", y, 3)
    if xs.shape != ys.shape:
        raise ValueError(f"slope: x and y must have one value each per point, got {xs.size} and {ys.size}")
    if np.ptp(xs) == 0:
        raise ValueError("slope: x must take at least two distinct values")
    fit = stats.linregress(xs, ys)
    half = stats.t.ppf(0.5 + confidence / 2, xs.size - 2) * fit.stderr
    return Interval(
        fit.slope, fit.slope - half, fit.slope + half, confidence, f"OLS slope over {xs.size} points, t interval"
    )


def _half_widths(sd: float, n: np.ndarray, confidence: float) -> np.ndarray:
    """t_{(1 + confidence)/2, n - 1} sd / sqrt(n) for each count in `n` (validated by the callers)."""
    from scipy import stats

    return stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n)


def _check_sd(name: str, sd: float) -> None:
    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(f"{name}: sd must be a finite number >= 0, got {sd}")


def t_half_width(sd: float, n: int, *, confidence: float = 0.95) -> float:
    """The half-width of the t interval of a mean over `n` values (seeds, paired differences) of standard deviation
    `sd`: t_{(1 + confidence)/2, n - 1} sd / sqrt(n). The power computations' building block."""
    _check_confidence(confidence)
    _check_sd("t_half_width", sd)
    if n < 2:
        raise ValueError(f"t_half_width: need n >= 2 values for a t interval, got {n}")
    return float(_half_widths(sd, np.asarray(n), confidence))


def seeds_for_half_width(sd: float, target: float, *, confidence: float = 0.95, most: int = 10_000) -> int | None:
    """The fewest n >= 2 whose t interval half-width (`t_half_width`) is below `target` (a claim's distance from its
    margin): the seeds a design needs at a spread `sd`. None where the target is not positive or no n up to `most`
    reaches it. The half-width falls with n, so the first n that passes is the answer."""
    _check_confidence(confidence)
    _check_sd("seeds_for_half_width", sd)
    if not target > 0:
        return None
    n = np.arange(2, most + 1)
    passing = np.flatnonzero(_half_widths(sd, n, confidence) < target)
    return int(n[passing[0]]) if passing.size else None

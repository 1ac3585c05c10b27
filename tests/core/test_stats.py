"""core.stats against hand-written references: t quantiles from scipy's distribution, a numpy bootstrap."""

import numpy as np
import pytest
from scipy import stats as sps

from core.claims import Claim, Interval, interval_above, interval_below
from core.stats import (
    paired_bootstrap,
    paired_relative_gap,
    paired_speedup,
    proportion,
    relative_gaps,
    seed_difference,
    seed_mean,
    seeds_for_half_width,
    slope,
    t_half_width,
)


def test_seed_mean_is_the_t_interval():
    x = np.array([1.0, 2.0, 4.0])
    got = seed_mean(x)
    half = sps.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3)
    assert got.estimate == pytest.approx(7 / 3)
    assert (got.low, got.high) == pytest.approx((7 / 3 - half, 7 / 3 + half))


def test_seed_difference_is_welch():
    a, b = np.array([1.0, 1.2, 0.9]), np.array([2.0, 2.5, 2.1, 2.2])
    got = seed_difference(a, b)
    va, vb = a.var(ddof=1) / 3, b.var(ddof=1) / 4
    dof = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = sps.t.ppf(0.975, dof) * np.sqrt(va + vb)
    assert got.estimate == pytest.approx(a.mean() - b.mean())
    assert (got.low, got.high) == pytest.approx((got.estimate - half, got.estimate + half))
    assert got.high < 0


def test_paired_bootstrap_matches_a_numpy_bootstrap():
    rng = np.random.default_rng(1)
    a = rng.normal(0.3, 1.0, 400)
    b = a - rng.normal(0.1, 0.2, 400)  # a beats b by 0.1 on average, paired
    got = paired_bootstrap(a, b, n_resamples=4000, seed=3)
    d = a - b
    means = d[rng.integers(0, d.size, (4000, d.size))].mean(axis=1)
    ref = np.percentile(means, [2.5, 97.5])
    assert got.estimate == pytest.approx(d.mean())
    assert got.low == pytest.approx(ref[0], abs=0.004) and got.high == pytest.approx(ref[1], abs=0.004)
    assert got.low > 0  # pairing removes the large per-query spread of a and b


def test_paired_bootstrap_is_reproducible_and_checks_pairs():
    a, b = np.arange(10.0), np.arange(10.0)[::-1]
    assert paired_bootstrap(a, b, seed=0) == paired_bootstrap(a, b, seed=0)
    with pytest.raises(ValueError, match="must pair up"):
        paired_bootstrap(a, b[:5])
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap([1.0, np.nan])


def test_slope_matches_linregress_interval():
    x = np.repeat(np.log([1e4, 4e4, 1.6e5]), 3)
    y = 0.01 * x + np.array([0.0, 0.002, -0.002] * 3)
    got = slope(x, y)
    fit = sps.linregress(x, y)
    half = sps.t.ppf(0.975, 7) * fit.stderr
    assert (got.estimate, got.low, got.high) == pytest.approx((fit.slope, fit.slope - half, fit.slope + half))
    with pytest.raises(ValueError, match="two distinct"):
        slope([1, 1, 1], [1, 2, 3])


def test_interval_rules_decide_on_the_bounds():
    above = Claim("gain", "A beats B", paper="A beats B", rule=interval_above(0.0))
    assert above.measured(Interval(0.02, 0.001, 0.04)).holds is True
    straddles = above.measured(Interval(0.02, -0.001, 0.04))
    assert straddles.holds is None and straddles.verdict.value == "undecided"  # counts neither way
    assert above.measured(Interval(-0.02, -0.04, -0.001)).holds is False
    assert above.measured(0.02).holds is False  # a bare number has no spread to decide on
    below = Claim("loss", "A below B", paper=None, rule=interval_below(0.0))
    assert below.measured(Interval(-0.3, -0.5, -0.1)).holds is True
    d = above.measured(Interval(0.02, 0.001, 0.04, method="paired bootstrap")).to_dict()
    assert d["ours"]["low"] == 0.001 and d["ours"]["method"] == "paired bootstrap"
    with pytest.raises(ValueError, match="above high"):
        Interval(0.0, 1.0, -1.0)


def test_the_half_width_is_scipys_t_interval_and_the_seeds_needed_the_fewest_below_the_target():
    def half(n, sd):  # scipy's own t interval of a mean with standard error sd / sqrt(n)
        low, high = sps.t.interval(0.95, n - 1, loc=0.0, scale=sd / np.sqrt(n))
        return (high - low) / 2

    assert t_half_width(0.02, 5) == pytest.approx(half(5, 0.02), rel=1e-12)
    for sd, target in ((0.01, 0.0025), (0.02, 0.06), (0.005, 0.02), (0.0177, 0.0196), (0.0262, 0.0552), (0.01, 0.5)):
        n = seeds_for_half_width(sd, target)
        brute = next(k for k in range(2, 10_000) if half(k, sd) < target)  # a brute-force search
        assert n == brute, (sd, target)
    assert seeds_for_half_width(0.01, 0.0025) == 64  # the normal quantile would give (1.96 x 0.01 / 0.0025)^2 = 61.5
    assert seeds_for_half_width(0.0, 0.01) == 2
    assert seeds_for_half_width(0.01, 0.0) is None and seeds_for_half_width(1.0, 1e-9) is None
    assert seeds_for_half_width(0.5, 1e-6, most=50) is None
    with pytest.raises(ValueError, match="sd must be"):
        seeds_for_half_width(-0.1, 0.01)
    with pytest.raises(ValueError, match="n >= 2"):
        t_half_width(0.1, 1)


def test_the_paired_relative_gap_is_the_t_interval_of_the_per_pair_ratios():
    """The gap of unit scaling, FP8 LLM, GPS++ and u-muP: per pair a / b - 1 (a diverged arm gives +inf), then the
    t interval over the pairs (scipy's), the gap alone for one pair, "diverged" where an arm did not train."""
    a = [1.10, 1.00, 0.95, 1.30]
    b = [1.00, 1.02, 0.90, 1.25]
    gaps = relative_gaps(a, b)
    assert gaps.tolist() == [x / y - 1 for x, y in zip(a, b, strict=True)]  # Python floats: the same IEEE division
    got = paired_relative_gap(a, b)
    ref = sps.ttest_1samp(gaps, 0.0).confidence_interval(0.95)
    assert got.estimate == pytest.approx(np.mean(gaps), abs=0) and (got.low, got.high) == pytest.approx(ref, rel=1e-12)
    assert paired_relative_gap([2.0], [1.6]) == 2.0 / 1.6 - 1
    assert relative_gaps([np.nan, 1.0], [1.0, 2.0]).tolist() == [np.inf, -0.5]
    assert paired_relative_gap([np.inf, 1.0], [1.0, 2.0]) == "diverged"
    with pytest.raises(ValueError, match="must pair up, got 2 and 1"):
        relative_gaps([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least one pair"):
        paired_relative_gap([], [])


def test_a_paired_speedup_is_the_median_round_ratio_with_its_bootstrap_interval():
    """PopSparse's and SparQ's speed-ups: reference time / time, the median of the per-round ratios (computed here
    with numpy), and the bootstrap interval of the median log ratio, exponentiated."""
    rng = np.random.default_rng(3)
    dense = 2.0 * np.exp(rng.normal(0, 0.05, 9))
    sparse = 1.0 * np.exp(rng.normal(0, 0.05, 9))
    got = paired_speedup(dense, sparse, seed=4)
    assert got.estimate == pytest.approx(np.median(dense / sparse), rel=1e-12)
    logs = paired_bootstrap(np.log(dense), np.log(sparse), statistic=np.median, seed=4)
    assert (got.low, got.high) == pytest.approx((np.exp(logs.low), np.exp(logs.high)), rel=1e-12)
    assert got.low < got.estimate < got.high and got.method == "median of 9 paired rounds, bootstrap interval"
    assert paired_speedup(dense, sparse, seed=4) == got  # seeded: the same interval every time


def test_a_proportion_has_the_exact_binomial_interval():
    """Against the bounds found by root-finding on the binomial tails (scipy.stats.binom), not binomtest's own."""
    from scipy import optimize

    for k, n, confidence in ((0, 480, 0.95), (2, 200, 0.95), (30, 300, 0.9), (50, 50, 0.95)):
        tail = (1 - confidence) / 2
        above = lambda p, k=k, n=n, tail=tail: sps.binom.cdf(k, n, p) - tail
        below = lambda p, k=k, n=n, tail=tail: sps.binom.sf(k - 1, n, p) - tail
        high = 1.0 if k == n else optimize.brentq(above, 1e-12, 1 - 1e-12)
        low = 0.0 if k == 0 else optimize.brentq(below, 1e-12, 1 - 1e-12)
        share = proportion(k, n, confidence=confidence)
        assert share.estimate == k / n and share.confidence == confidence
        assert share.low == pytest.approx(low, abs=1e-9) and share.high == pytest.approx(high, abs=1e-9)
    for bad in ((-1, 5), (6, 5), (1, 0), (1.5, 5)):
        with pytest.raises(ValueError, match="proportion"):
            proportion(*bad)
    with pytest.raises(ValueError, match="confidence"):
        proportion(1, 5, confidence=1.5)

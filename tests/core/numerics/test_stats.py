import ml_dtypes
import numpy as np

from core.numerics import format_stats, log2_histogram


def test_format_stats_by_brute_force():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20000) * np.exp2(rng.uniform(-14, 12, 20000))).astype(np.float32)
    x[:50] = 0
    x[50:55] = [np.inf, -np.inf, np.nan, np.nan, np.inf]
    with np.errstate(all="ignore"):
        c = x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    finite = np.isfinite(x)
    ref = {
        "zero": np.mean(finite & (x == 0)),
        "underflow": np.mean(finite & (x != 0) & (c == 0)),
        "subnormal": np.mean((np.abs(c) > 0) & (np.abs(c) < 2.0**-6)),
        "overflow": np.mean(finite & ~np.isfinite(c)),
        "normal": np.mean(np.isfinite(c) & (np.abs(c) >= 2.0**-6)),
        "nonfinite": np.mean(~finite),
    }
    ours = format_stats(x, "e4m3")
    assert ours.keys() == ref.keys()
    for k in ref:
        assert ours[k] == ref[k], k
    assert abs(sum(ours.values()) - 1.0) < 1e-12 and all(v > 0 for v in ours.values())


def test_log2_histogram_skips_zeros_and_non_finite():
    counts, edges = log2_histogram(np.float32([0, 1, 2, 3, 4, np.inf, np.nan, -0.5]), bins=4, range_=(-2, 2))
    assert counts.sum() == 5 and list(counts) == [0, 1, 1, 3]  # log2: 0, 1, 1.58, 2, -1
    assert list(edges) == [-2, -1, 0, 1, 2]

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics import format_stats, log2_histogram, max_abs


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_max_abs_keeps_nan_where_xla_cpu_max_drops_it(dtype, axis):
    """One NaN among 64 x 128 = 8,192 values (over XLA's 4,096-element CPU max-reduction that drops NaN): numpy's
    max |x| over the same axis, NaN in the rows or columns holding it, finite elsewhere, in x's dtype."""
    with jax.enable_x64(True):
        x = np.random.default_rng(3).standard_normal((64, 128)).astype(dtype)
        x[17, 93] = np.nan
        got = np.asarray(max_abs(jnp.asarray(x), axis))
        want = np.max(np.abs(x), axis)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)  # NaN compares equal to NaN here
        assert np.isnan(got).sum() == 1

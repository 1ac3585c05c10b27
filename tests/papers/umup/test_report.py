"""The u-muP analysis (papers/umup/analysis.py) on hand-made sweeps whose optima are known, and the report tables
that format it."""

import itertools
from types import SimpleNamespace as NS

import numpy as np
import pytest

from papers.umup.analysis import Analysis
from papers.umup.report import (
    build_report,
    drift_table,
    fp8_table,
    loss_gap_table,
    metrics,
    mults_table,
    optimal_lr_table,
)
from tests.papers.umup.test_reproduce import _hand_made


def _analysis():
    # seed s's curve is a parabola centred 0.1 * (s - 1) right of the sweep's centre: SP's centres -3 (width 16)
    # and -6 (width 128), u-muP's -2 at both; FP8 multiplies the FP32 loss by 1.004, 1.005, 1.006 (u-muP) and
    # 1.18, 1.2, 1.22 (SP); the residual sweep by 1.02 at every seed
    cfg, sweeps, fp8, mults = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    return cfg, sweeps, fp8, mults, Analysis.from_results(cfg, sweeps, fp8, mults)


def test_the_analysis_holds_each_sweeps_optima_and_the_move_with_width():
    _, _, _, _, a = _analysis()
    assert a.widths == [16, 128] and a.seeds == [0, 1, 2]
    sp16 = a.sweeps[("sp", 16)]
    assert sp16.optimum.log2_lr == pytest.approx(-3.0) and sp16.optimum.grid_log2_lr == -3.0
    assert sp16.old.log2_lr == pytest.approx(-3.0)  # exact parabolas: the old estimate agrees
    # the interval over the 27 resamples of the seeds' offsets -0.1, 0, 0.1: their means' 2.5% and 97.5% points
    means = [np.mean(r) - 3.0 for r in itertools.product([-0.1, 0.0, 0.1], repeat=3)]
    assert [sp16.interval.low, sp16.interval.high] == pytest.approx(np.quantile(means, [0.025, 0.975]))
    assert sp16.seed_optima == pytest.approx([-3.1, -3.0, -2.9])
    assert sp16.per_seed.shape == (10, 3) and list(sp16.log2_lrs) == list(range(-10, 0))
    np.testing.assert_allclose(sp16.mean, sp16.per_seed.mean(axis=1))
    assert a.drift["sp"].estimate == pytest.approx(-3.0) and a.drift["umup"].estimate == pytest.approx(0.0, abs=1e-9)
    assert a.old_drift["sp"].estimate == pytest.approx(-3.0)
    assert a.slope["sp"] == pytest.approx(-1.0) and a.slope["umup"] == pytest.approx(0.0, abs=1e-9)
    assert a.unbracketed("sp") == {}
    # u-muP (centre -2) against SP (centre -6) and muP (centre -4) at width 128: each at its own best grid point,
    # where every seed's loss is 2 + (0.1 (s - 1))^2, so the gaps are 0
    assert [(g.other, g.width) for g in a.gaps] == [("sp", 128), ("mup", 128)]
    assert a.gaps[0].rel.estimate == pytest.approx(0.0, abs=1e-12) and a.gaps[0].umup_loss == pytest.approx(
        2.0067, 1e-3
    )
    # every group: 2 parametrization sweeps x 3 parametrizations x 30 runs, 2 FP8 groups and 1 sweep of 3 runs
    assert a.runs == 6 * 30 + 3 * 3 and a.train_seconds == 0.0


def test_the_analysis_holds_the_fp8_gaps_and_the_hyperparameter_sweep():
    _, _, _, _, a = _analysis()
    assert a.fp8["umup"].gaps == pytest.approx([0.004, 0.005, 0.006])
    assert a.fp8["sp"].lr == 2.0**-6 and a.fp8["sp"].width == 128
    default = np.mean([2.01, 2.0, 2.01])  # u-muP at width 16, lr 2^-2: 0.1^2 + 2 off-centre seeds
    m = a.mults
    assert (m.width, m.lr, m.default_mean) == (16, 0.25, pytest.approx(default))
    ((name, value, mean, gain),) = m.rows
    assert (name, value) == ("residual", 2.0) and mean == pytest.approx(1.02 * default) and gain == pytest.approx(-0.02)
    assert m.best_gain == 0.0  # nothing beat the defaults
    assert m.curves == {"residual": [(1.0, pytest.approx(default)), (2.0, pytest.approx(1.02 * default))]}


def test_the_tables_format_the_analysis():
    cfg, sweeps, fp8, mults, a = _analysis()
    rows = {(r[0], r[1]): r for r in optimal_lr_table(a).rows}
    sp16 = rows[("SP", 16)]
    assert sp16[3:5] == ["-10 to -1", "-3"] and str(sp16[5]).startswith("-3 [-3.078, -2.922]")
    assert sp16[6:] == ["-3.00", "-3.10, -3.00, -2.90", "2.007"]
    drift = drift_table(a).rows
    assert [r[0] for r in drift] == ["SP", "muP", "u-muP"] and drift[0][2] == "0.00" and drift[0][4] == "-1.00"
    assert drift[0][1].startswith("-3 [") and drift[0][3].startswith("-3 [")
    gaps = loss_gap_table(a, 300).rows
    assert [r[:2] for r in gaps] == [["SP", 128], ["muP", 128]]
    assert mults_table(a).rows == [["residual", 2.0, "2.047", "-2.00%"]]
    umup = fp8_table(a, "low").rows[0]
    assert umup[:5] == ["u-muP", 128, "2^-2", "2.007", "2.018, 2.010, 2.022"]  # 2.01 x 1.004, 2 x 1.005, 2.01 x 1.006
    assert umup[5].startswith("0.005 [")  # the t interval over the 3 seeds' gaps
    m = metrics(a)
    assert m["log2_lr_opt/sp/w128"] == pytest.approx(-6.0) and m["fp8_gap/umup"] == pytest.approx(0.005)
    assert list(m)[-1] == "train_seconds"
    cfg.paper = NS(title="u-muP")
    report = build_report(cfg, sweeps, fp8, mults)
    assert [t.name for t in report.tables] == ["optimal_lr", "lr_drift", "loss_gap", "umup_mults", "fp8"]
    assert [f.name for f in report.figures] == ["lr_sweeps", "optimum_vs_width", "umup_mults"]

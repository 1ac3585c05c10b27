"""The u-muP decision's estimates (papers/umup/decide.py) on hand-made Results whose optima are known, and the
report (papers/umup/report.py) that formats them with the Results."""

import itertools
import math

import numpy as np
import pytest

from core.claims import Interval
from papers.umup.decide import decide
from papers.umup.report import (
    View,
    drift_table,
    fp8_table,
    loss_gap_table,
    metrics,
    mult_rows,
    mults_table,
    notes,
    optimal_lr_table,
    render,
)
from tests.papers.umup.test_reproduce import _group, _hand_made


def _decided():
    # seed s's curve is a parabola centred 0.1 * (s - 1) right of the sweep's centre: SP's centres -3 (width 16)
    # and -6 (width 128), u-muP's -2 at both; FP8 multiplies the FP32 loss by 1.004, 1.005, 1.006 (u-muP) and
    # 1.18, 1.2, 1.22 (SP); the residual sweep by 1.02 at every seed
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    return cfg, results, decide(cfg, results)


def test_the_estimates_hold_each_sweeps_optimum_and_the_move_with_width():
    _, _, decided = _decided()
    est = decided.estimates
    sp16 = est["optimum/sp/w16"]
    assert isinstance(sp16, Interval) and sp16.estimate == pytest.approx(-3.0)
    assert est["optimum_old/sp/w16"].estimate == pytest.approx(-3.0)  # exact parabolas: the old estimate agrees
    # the interval over the 27 resamples of the seeds' offsets -0.1, 0, 0.1: their means' 2.5% and 97.5% points
    means = [np.mean(r) - 3.0 for r in itertools.product([-0.1, 0.0, 0.1], repeat=3)]
    assert [sp16.low, sp16.high] == pytest.approx(np.quantile(means, [0.025, 0.975]))
    assert "27 seed resamples" in sp16.method
    assert est["drift/sp"].estimate == pytest.approx(-3.0) and est["drift/umup"].estimate == pytest.approx(0, abs=1e-9)
    assert est["drift_old/sp"].estimate == pytest.approx(-3.0)
    # the slope over log2 widths 4 and 7: -3 octaves over 3 doublings; every resample moves every width alike
    assert est["slope/sp"].estimate == pytest.approx(-1.0) and est["slope/umup"].estimate == pytest.approx(0, abs=1e-9)
    assert est["slope/sp"].high - est["slope/sp"].low == pytest.approx(0.0, abs=1e-9)
    # the claims' and facts' own figures are the estimates' where both name one
    claims, facts = {c.id: c for c in decided.claims}, {f.id: f for f in decided.facts}
    assert est["drift/sp"] == facts["sp-lr-drift"].value and est["drift/umup"] == claims["umup-lr-transfers"].ours
    assert est["fp8_gap/umup"] == claims["umup-fp8-close"].ours
    assert est["loss_gap/umup_vs_mup"] == claims["umup-matches-mup"].ours
    # u-muP (centre -2) against SP (centre -6) and muP (centre -4) at width 128: each at its own best grid point,
    # where every seed's loss is 2 + (0.1 (s - 1))^2, so the gaps are 0
    assert est["loss_gap/umup_vs_sp"].estimate == pytest.approx(0.0, abs=1e-12)
    assert est["loss_gap/umup_vs_mup"].estimate == pytest.approx(0.0, abs=1e-12)
    assert est["fp8_gap/umup"].estimate == pytest.approx(0.005) and est["fp8_gap/sp"].estimate == pytest.approx(0.2)
    assert est["mult_gain/residual/2"].estimate == pytest.approx(-0.02)
    names = [k.replace("/", ".") for k in est]
    assert all(n == n.lower() for n in names)


def test_an_unbracketed_curve_and_one_seed_give_text_and_no_paired_intervals():
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    results.sweeps[("umup", 128)] = _group("umup", 128, lambda e, s: -e + 2.0, tuple(range(-10, 0)))  # still falling
    est = decide(cfg, results).estimates
    assert est["optimum/umup/w128"] == "- (the best grid point is the grid's edge)"
    assert est["drift/umup"] == "not bracketed (width 128: the best grid point is the grid's edge)"
    assert isinstance(est["slope/umup"], str) and isinstance(est["optimum_old/umup/w128"], Interval)
    v = View(cfg, results, decide(cfg, results))
    assert any(
        "u-muP at width 128: no optimum (the best grid point is the grid's edge)" in n for n in notes(v, cfg.umup)
    )
    assert math.isnan(metrics(v)["log2_lr_opt/umup/w128"])

    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    cfg.umup.seeds = [1]  # one seed: the seed resamples are that seed alone, and nothing is paired
    for r in (*results.sweeps.values(), *results.fp8.values(), *results.mult_sweeps.values()):
        keep = [i for i, s in enumerate(r.seed) if s == 1]
        r.lr, r.seed = [r.lr[i] for i in keep], [r.seed[i] for i in keep]
        r.valid_loss, r.train_loss = [r.valid_loss[i] for i in keep], [r.train_loss[i] for i in keep]
    decided = decide(cfg, results)
    est = decided.estimates
    assert est["optimum/sp/w16"].low == est["optimum/sp/w16"].high == pytest.approx(-3.0)
    assert not [k for k in est if k.startswith("mult_gain")]  # nothing paired: no interval, no best setting
    gaps = {k: v for k, v in est.items() if k.startswith(("loss_gap", "fp8_gap"))}
    assert len(gaps) == 4 and all(type(v) is float for v in gaps.values())  # the one seed's gap, as it is
    v = View(cfg, results, decided)
    assert fp8_table(v, "low").rows[0][5] == "0.005"  # one seed's gap, 4 significant digits
    assert [r[4] for r in mults_table(v).rows] == ["-"]
    assert [r[4] for r in loss_gap_table(v, 300).rows] == [pytest.approx(0.0, abs=1e-12)] * 2


def test_the_tables_format_the_results_and_the_estimates():
    cfg, results, decided = _decided()
    v = View(cfg, results, decided)
    rows = {(r[0], r[1]): r for r in optimal_lr_table(v).rows}
    sp16 = rows[("SP", 16)]
    assert sp16[3:5] == ["-10 to -1", "-3"] and str(sp16[5]).startswith("-3 [-3.078, -2.922]")
    assert sp16[6:] == ["-3.00", "2.007"]
    drift = drift_table(v).rows
    assert [r[0] for r in drift] == ["SP", "muP", "u-muP"] and drift[0][2] == "0.00" and drift[0][4] == "-1.00"
    assert drift[0][1].startswith("-3 [") and drift[0][3].startswith("-3 [")
    gaps = loss_gap_table(v, 300).rows
    assert [r[:2] for r in gaps] == [["SP", 128], ["muP", 128]] and gaps[0][2] == "2.007"
    default = np.mean([2.01, 2.0, 2.01])  # u-muP at width 16, lr 2^-2: 0.1^2 + 2 off-centre seeds
    lr, default_mean, ((name, value, mean, gain),) = mult_rows(v)
    assert (lr, default_mean, name, value) == (0.25, pytest.approx(default), "residual", 2.0)
    assert mean == pytest.approx(1.02 * default) and gain == pytest.approx(-0.02)
    assert mults_table(v).rows == [["residual", 2.0, "2.047", "-2.00%", "-2.00% [-2.00, -2.00]"]]
    umup = fp8_table(v, "low").rows[0]
    assert umup[:5] == ["u-muP", 128, "2^-2", "2.007", "2.018, 2.010, 2.022"]  # 2.01 x 1.004, 2 x 1.005, 2.01 x 1.006
    assert umup[5].startswith("0.005 [")  # the decided t interval over the 3 seeds' gaps
    m = metrics(v)
    assert m["log2_lr_opt/sp/w128"] == pytest.approx(-6.0) and m["fp8_gap/umup"] == pytest.approx(0.005)
    assert m["umup_mults/best_gain"] == 0.0  # nothing beat the defaults
    assert list(m)[-1] == "train_seconds"
    # every group: 2 parametrization sweeps x 3 parametrizations x 30 runs, 2 FP8 groups and 1 sweep of 3 runs
    assert notes(v, cfg.umup)[0].startswith(f"{6 * 30 + 3 * 3} training runs")
    report = render(cfg, results, decided)
    assert not report.claims and not report.facts  # the record adds the decision's
    assert [t.name for t in report.tables] == ["optimal_lr", "lr_drift", "loss_gap", "umup_mults", "fp8"]
    assert [f.name for f in report.figures] == ["lr_sweeps", "optimum_vs_width", "umup_mults"]

"""The u-muP reproduction: its config checks, the optimum and drift estimates against known curves and a numpy
reference, why the old 3-point estimate was tied to the grid, the decision on hand-made Results whose verdicts are
known, a group's resumability, and what the smoke run stores."""

import json
import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from core.claims import Interval
from core.config import ConfigError, validate_section
from papers.umup.claims import drift, optimum, percentile_interval, three_point_optimum
from papers.umup.config import MULT_NAMES, PARAMETRIZATIONS, Config, grid
from papers.umup.decide import decide
from papers.umup.results import GroupResult, Results, best_grid_lr


def test_config_rejects_bad_settings_by_name():
    validate_section({}, Config, "umup")
    with pytest.raises(ConfigError, match="parametrizations='ntk' is not allowed"):
        validate_section({"parametrizations": ["ntk"]}, Config, "umup")
    with pytest.raises(ConfigError, match=r"fp8_parametrizations \['sp'\] need their FP32 sweep"):
        validate_section({"parametrizations": ["umup"], "mults": []}, Config, "umup")
    with pytest.raises(ConfigError, match=r"log2_lrs\.sp=.*must be strictly increasing"):
        validate_section({"log2_lrs": {"sp": [-3.0, -5.0, -4.0]}}, Config, "umup")
    with pytest.raises(ConfigError, match=r"width 30 is not divisible by model\.heads=4"):
        validate_section({"widths": [16, 30], "model": {"heads": 4}}, Config, "umup")
    with pytest.raises(ConfigError, match="mult_values: 1 is the default"):
        validate_section({"mult_values": [1.0]}, Config, "umup")
    with pytest.raises(ConfigError, match="mults='tau' is not allowed"):
        validate_section({"mults": ["tau"]}, Config, "umup")
    with pytest.raises(ConfigError, match="grid_shift='ntk' is not allowed"):
        validate_section({"grid_shift": {"ntk": -1.0}}, Config, "umup")


def test_the_config_names_the_parametrizations_and_hyperparameters_of_core():
    # core.unit_scaling.hparams (no JAX), which the ops' module re-exports: one definition
    from core.unit_scaling import umup

    assert PARAMETRIZATIONS is umup.PARAMETRIZATIONS == ("sp", "mup", "umup")
    assert MULT_NAMES == tuple(umup.Mults.__dataclass_fields__) == (
        "residual", "residual_attn_ratio", "attn_softmax", "ffn_act", "loss_softmax",
    )  # fmt: skip


def test_each_width_trains_its_parametrizations_grid_moved_by_its_shift():
    c = Config()
    assert [math.log2(lr) for lr in grid(c, "sp", 16)] == c.log2_lrs["sp"]
    assert [math.log2(lr) for lr in grid(c, "sp", 256)] == [e - 4 for e in c.log2_lrs["sp"]]  # -1 per doubling
    assert grid(c, "umup", 256) == grid(c, "umup", 16)  # no shift


def test_optimum_recovers_a_parabolas_vertex_and_says_when_it_is_not_bracketed():
    x = np.arange(-8.0, 0.0)
    o = optimum(x, (x + 4.3) ** 2 + 2.0)
    assert o.log2_lr == pytest.approx(-4.3) and o.grid_log2_lr == -4.0 and o.bracketed and not o.at_edge
    edge = optimum(x, -x)  # still falling at the largest rate
    assert edge.at_edge and edge.grid_log2_lr == -1.0 and math.isnan(edge.log2_lr) and "edge" in edge.unbracketed
    # a diverged point (inf) beside the best one leaves the fit to the finite points
    y = (x + 4.0) ** 2
    y[5] = math.inf
    assert optimum(x, y).log2_lr == pytest.approx(-4.0)
    assert optimum(x, np.full_like(x, math.nan)).unbracketed == "no finite loss"
    # no estimate where the fit is concave (a best point dipping between higher neighbours than the ends), or where
    # its vertex lies beyond the fitted points (the two rates above the best diverged)
    x = np.arange(-3.0, 4.0)
    assert "not convex" in optimum(x, np.array([9.0, 1.2, 1.9, 1.0, 1.9, 1.2, 9.0])).unbracketed
    beyond = optimum(x, np.array([9.0, 3.0, 1.9, 1.0, math.inf, math.inf, 9.0]))
    assert math.isnan(beyond.log2_lr) and beyond.unbracketed == "the fit's vertex 4.00 lies outside [-2, 0]"


def test_optimum_is_the_least_squares_quadratic_over_five_points_against_numpy_polyfit():
    rng = np.random.default_rng(1)
    x = np.arange(-11.0, -1.0)
    for _ in range(20):
        centre = rng.uniform(-8.0, -5.0)
        y = 0.1 * (x - centre) ** 2 + 0.02 * np.abs(x - centre) ** 3 + rng.normal(0, 0.01, x.size) + 2.0
        b = int(np.argmin(y))
        a2, a1, _ = np.polyfit(x[b - 2 : b + 3], y[b - 2 : b + 3], 2)
        o = optimum(x, y)
        assert o.log2_lr == pytest.approx(-a1 / (2 * a2), abs=1e-9) and o.grid_log2_lr == x[b]


def test_the_old_estimate_never_leaves_half_a_step_of_the_best_grid_point_and_the_fit_can():
    # the old 3-point vertex through the lowest of three evenly spaced points: (h/2)(a - c)/(a + c) with a, c >= 0
    rng = np.random.default_rng(0)
    x = np.array([-1.0, 0.0, 1.0])
    for _ in range(1000):
        y = np.array([rng.exponential(), 0.0, rng.exponential()])
        assert abs(three_point_optimum(x, y).log2_lr) <= 0.5
        unclamped = 0.5 * (y[0] - y[2]) / (y[0] - 2 * y[1] + y[2])
        assert abs(unclamped) <= 0.5  # the clamp never binds
    # a loss curve lowest at grid point 0 whose basin lies mostly to its right: the 5-point fit follows the basin
    x = np.arange(-3.0, 4.0)
    y = np.array([4.0, 2.0, 1.3, 1.0, 1.01, 1.05, 1.6])
    assert three_point_optimum(x, y).log2_lr == pytest.approx(0.5 * (0.3 - 0.01) / (0.3 + 0.01))  # (h/2)(a-c)/(a+c)
    new = optimum(x, y)
    assert new.grid_log2_lr == 0.0 and new.log2_lr > 0.5


def test_a_resample_without_an_optimum_counts_against_the_interval():
    values = np.linspace(-1.0, 1.0, 100)
    full = percentile_interval(0.0, values)
    assert (full.low, full.high, full.confidence) == (pytest.approx(-0.95), pytest.approx(0.95), 0.95)
    one = values.copy()
    one[50] = math.nan  # 1 of 100: both ends move outward by one place
    assert percentile_interval(0.0, one).low < full.low and percentile_interval(0.0, one).high > full.high
    many = values.copy()
    many[:3] = math.nan  # 3 of 100 lie beyond the 2.5% end
    assert percentile_interval(0.0, many) == "not bracketed in 3 of 100 resamples"


def _result(width, centre_by_seed, lrs=tuple(range(-10, 0))):
    rows = [(2.0**e, s, (e - c) ** 2 + 1.0) for e in lrs for s, c in centre_by_seed.items()]
    return GroupResult(
        group=f"w{width}",
        parametrization="sp",
        width=width,
        fp8=False,
        mults={},
        lr=[r[0] for r in rows],
        seed=[r[1] for r in rows],
        valid_loss=[r[2] for r in rows],
        train_loss=[r[2] for r in rows],
        seconds=0.0,
        params=0,
    )


def test_drift_is_the_move_of_the_optimum_with_its_seed_spread():
    results = {16: _result(16, {0: -3.0, 1: -3.2, 2: -2.9}), 128: _result(128, {0: -6.0, 1: -6.3, 2: -5.8})}
    d, optima = drift(results, [0, 1, 2], optimum)
    assert isinstance(d, Interval)
    # the seed-mean curve of parabolas is a parabola centred on the mean centre
    assert d.estimate == pytest.approx(np.mean([-6.0, -6.3, -5.8]) - np.mean([-3.0, -3.2, -2.9]))
    assert d.high < -1 and d.low <= d.estimate <= d.high
    assert optima[16].log2_lr == pytest.approx(np.mean([-3.0, -3.2, -2.9]))
    edge = {16: _result(16, {0: -3.0}), 128: _result(128, {0: 2.0})}
    assert drift(edge, [0], optimum)[0] == "not bracketed (width 128: the best grid point is the grid's edge)"


def _group(p, width, loss, lrs, seeds=(0, 1, 2), fp8=False, mults=None):
    """A group whose run at log2 lr e and seed s has valid loss loss(e, s)."""
    runs = [(e, s) for e in lrs for s in seeds]
    return GroupResult(
        group=f"{p}_w{width}",
        parametrization=p,
        width=width,
        fp8=fp8,
        mults=mults or {},
        lr=[2.0**e for e, _ in runs],
        seed=[s for _, s in runs],
        valid_loss=[loss(e, s) for e, s in runs],
        train_loss=[loss(e, s) for e, s in runs],
        seconds=0.0,
        params=0,
    )


def _hand_made(sp_fp8_factor, umup_fp8_factor, mult_factor):
    """SP's optimum at -3 (width 16) and -6 (width 128), u-muP's at -2 at both; FP8 and the one hyperparameter sweep
    multiply the FP32 loss at the best grid point by the given per-seed factors."""
    lrs = tuple(range(-10, 0))

    def parabola(centre):
        return lambda e, s: (e - centre - 0.1 * (s - 1)) ** 2 + 2.0

    sweeps = {
        ("sp", 16): _group("sp", 16, parabola(-3.0), lrs),
        ("sp", 128): _group("sp", 128, parabola(-6.0), lrs),
        ("mup", 16): _group("mup", 16, parabola(-3.0), lrs),
        ("mup", 128): _group("mup", 128, parabola(-4.0), lrs),
        ("umup", 16): _group("umup", 16, parabola(-2.0), lrs),
        ("umup", 128): _group("umup", 128, parabola(-2.0), lrs),
    }

    def scaled(p, width, best, factors, **kw):
        return _group(p, width, lambda e, s: sweeps[(p, width)].at_lr(2.0**best)[s] * factors[s], (best,), **kw)

    fp8 = {
        "umup": scaled("umup", 128, -2, umup_fp8_factor, fp8=True),
        "sp": scaled("sp", 128, -6, sp_fp8_factor, fp8=True),
    }
    mults = {("residual", 2.0): scaled("umup", 16, -2, mult_factor, mults={"residual": 2.0})}
    cfg = NS(
        umup=Config(widths=[16, 128], seeds=[0, 1, 2], mults=["residual"], mult_values=[2.0]),
        paper=NS(title="u-muP"),
    )
    return cfg, Results(sweeps=sweeps, fp8=fp8, mult_sweeps=mults)


def _decided(cfg, results):
    return {c.id: c for c in decide(cfg, results).claims}


def test_verdicts_on_hand_made_results_whose_outcome_is_known():
    # SP's optimum falls 3 octaves, u-muP's stays; u-muP's FP8 gap 0.5% +- 0.1% (within 1%); SP's FP8 gap ~20%
    # against u-muP's 0.5%; the hyperparameter sweep only loses (gain 0); u-muP's best loss equals muP's
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    got = _decided(cfg, results)
    assert list(got) == ["umup-lr-transfers", "umup-defaults-near-optimal", "umup-fp8-close", "sp-fp8-worse",
                         "umup-matches-mup"]  # fmt: skip
    # SP's drift is a calibration fact since issue 62 (its grid follows the drift it would show), not a claim
    (fact,) = decide(cfg, results).facts
    assert (fact.id, fact.kind) == ("sp-lr-drift", "calibration") and fact.value.estimate == pytest.approx(-3.0)
    assert "until 2026-11-29 it was the claim sp-lr-drifts" in fact.detail.lower()
    assert got["umup-lr-transfers"].ours.estimate == pytest.approx(0.0, abs=1e-9)
    assert (
        got["umup-lr-transfers"].ours.confidence == 0.95 and "27 seed resamples" in got["umup-lr-transfers"].ours.method
    )
    assert got["umup-fp8-close"].ours.estimate == pytest.approx(0.005) and got["umup-fp8-close"].ours.high < 0.01
    assert got["umup-defaults-near-optimal"].ours == 0.0
    assert got["umup-matches-mup"].ours.estimate == pytest.approx(0.0, abs=1e-12)
    assert got["umup-matches-mup"].detail == "best seed-mean validation loss u-muP at 2^-2: 2.0067, muP at 2^-4: 2.0067"
    assert {k: c.verdict.value for k, c in got.items()} == {
        "umup-lr-transfers": "holds",
        "umup-defaults-near-optimal": "holds",
        "umup-fp8-close": "holds",
        "sp-fp8-worse": "holds",
        "umup-matches-mup": "holds",
    }
    # u-muP's FP8 gap 3%, a sweep that gains 5%, SP's FP8 gap spread across u-muP's (the interval straddles 0)
    cfg, results = _hand_made([0.99, 1.03, 1.05], [1.03, 1.03, 1.03], [0.95, 0.95, 0.95])
    got = _decided(cfg, results)
    assert got["umup-fp8-close"].ours.estimate == pytest.approx(0.03)
    assert got["umup-defaults-near-optimal"].ours == pytest.approx(0.05)
    assert "paired by seed: 0.05 [" in got["umup-defaults-near-optimal"].detail
    assert got["umup-fp8-close"].verdict.value == "fails"
    assert got["umup-defaults-near-optimal"].verdict.value == "fails"
    assert got["sp-fp8-worse"].verdict.value == "undecided"
    # u-muP's FP8 gaps 0.5%, 1%, 1.5%: the mean is within 1%, its interval is not (the old point rule held)
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.005, 1.01, 1.015], [1.02, 1.02, 1.02])
    fp8_close = _decided(cfg, results)["umup-fp8-close"]
    assert fp8_close.ours.estimate == pytest.approx(0.01) and fp8_close.verdict.value == "undecided"


def test_u_mup_against_mup_fails_beyond_the_margin_and_is_undecided_across_it():
    # u-muP's loss at width 128 x 1.03 at every seed: 3% above muP's, all of its interval beyond 1%
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    umup = results.sweeps[("umup", 128)]
    results.sweeps[("umup", 128)] = _group("umup", 128, lambda e, s: umup.at_lr(2.0**e)[s] * 1.03, tuple(range(-10, 0)))
    got = _decided(cfg, results)["umup-matches-mup"]
    assert got.ours.estimate == pytest.approx(0.03) and got.verdict.value == "fails"
    # 0.5%, 1%, 1.5% above: the mean at the margin, the interval across it; the design says what would decide it
    factor = {0: 1.005, 1: 1.01, 2: 1.015}
    results.sweeps[("umup", 128)] = _group(
        "umup", 128, lambda e, s: umup.at_lr(2.0**e)[s] * factor[s], tuple(range(-10, 0))
    )
    got = _decided(cfg, results)["umup-matches-mup"]
    assert got.verdict.value == "undecided" and (got.n, got.n_of) == (3, "seeds")
    assert got.to_decide.startswith(("about", "the estimate sits on the margin", "more than 10^9"))
    # a best learning rate at its grid's edge is named: the optimum may lie beyond the grid
    results.sweeps[("mup", 128)] = _group("mup", 128, lambda e, s: -e + 2.0, tuple(range(-10, 0)))
    assert "muP at 2^-1 (its grid's edge" in _decided(cfg, results)["umup-matches-mup"].detail


def test_u_mup_transfer_fails_when_its_optimum_moves_an_octave():
    cfg, results = _hand_made([1.18, 1.2, 1.22], [1.004, 1.005, 1.006], [1.02, 1.02, 1.02])
    results.sweeps[("umup", 128)] = _group(
        "umup", 128, lambda e, s: (e + 3.0 - 0.1 * (s - 1)) ** 2 + 2.0, tuple(range(-10, 0))
    )  # centre -3: one octave below width 16's -2
    got = _decided(cfg, results)["umup-lr-transfers"]
    assert got.ours.estimate == pytest.approx(-1.0) and got.verdict.value == "fails"


TINY = NS(
    model=NS(depth=1, heads=2, seq_len=8),
    widths=[8, 16],
    steps=4,
    batch_size=2,
    warmup_steps=1,
    log_every=2,
    checkpoint_every=2,
    valid_windows=4,
)


@pytest.mark.slow  # ~26 s (2026-11-28); resuming is tested in tests/core/test_runner.py in make test
def test_a_group_trains_every_run_and_is_reused_when_resumed(tmp_path):
    import shutil

    from core.context import RunContext
    from core.data.shakespeare import load_shakespeare
    from papers.umup.train import Group, kept_group

    corpus = load_shakespeare()
    group = Group("umup", 16, (2.0**-3, 2.0**-1), (0, 1))
    fresh = RunContext.detached(tmp_path / "checkpoints", memo_dir=tmp_path / "memo")
    resumed = RunContext.detached(tmp_path / "checkpoints", memo_dir=tmp_path / "memo", resume=True)
    first = kept_group(TINY, corpus, group, fresh)
    assert first.lr == [2.0**-3, 2.0**-3, 2.0**-1, 2.0**-1] and first.seed == [0, 1, 0, 1]
    assert all(math.isfinite(v) for v in first.valid_loss)
    assert len(set(first.valid_loss)) == 4  # every run is its own model
    (kept,) = (tmp_path / "memo" / "group").glob("*/value.json")
    assert json.loads(kept.read_text())["valid_loss"] == first.valid_loss
    # a resumed run reads the kept result; without it (killed after the last checkpoint, before the result was
    # stored) the checkpoint gives the same numbers
    assert kept_group(TINY, corpus, group, resumed) == first
    shutil.rmtree(kept.parent)
    assert kept_group(TINY, corpus, group, resumed).valid_loss == first.valid_loss


@pytest.mark.slow  # ~36 s (2026-11-28); core/unit_scaling/test_umup.py checks muP = SP at base width
def test_mup_group_at_the_base_width_equals_sp(tmp_path):
    from core.data.shakespeare import load_shakespeare
    from papers.umup.train import Group, train_group

    corpus = load_shakespeare()
    sp = train_group(TINY, corpus, Group("sp", 8, (2.0**-5,), (0,)), None, resume=False)
    mup = train_group(TINY, corpus, Group("mup", 8, (2.0**-5,), (0,)), None, resume=False)
    assert sp.valid_loss == mup.valid_loss


@pytest.mark.slow  # the smoke run: make test-all (tests/papers/conftest.py SMOKE says what covers it)
def test_the_smoke_run_stores_every_group_and_decides_from_them(smoke_run):
    run = smoke_run("umup")  # what every run record holds: tests/papers/test_contract.py
    results, decision, cfg = run.results, run.decision, run.record["config"]["umup"]
    widths, seeds = sorted(cfg["widths"]), cfg["seeds"]
    c = NS(widths=cfg["widths"], log2_lrs=cfg["log2_lrs"], grid_shift=cfg["grid_shift"])

    # every learning-rate sweep: its grid at every seed, one run each
    assert set(results.sweeps) == {(p, w) for p in cfg["parametrizations"] for w in widths}
    for (p, w), r in results.sweeps.items():
        assert (r.parametrization, r.width, r.fp8, r.params > 0) == (p, w, False, True)
        assert sorted(zip(r.lr, r.seed, strict=True)) == sorted((lr, s) for lr in grid(c, p, w) for s in seeds)
        assert len(r.valid_loss) == len(r.lr)
    # the FP8 groups at the widest width and the hyperparameter groups at the narrowest, each at its FP32 sweep's
    # best grid rate
    assert set(results.fp8) == set(cfg["fp8_parametrizations"])
    for p, r in results.fp8.items():
        assert r.fp8 and r.width == widths[-1] and set(r.lr) == {best_grid_lr(results.sweeps[(p, widths[-1])])}
    assert set(results.mult_sweeps) == {(n, v) for n in cfg["mults"] for v in cfg["mult_values"]}
    umup_best = best_grid_lr(results.sweeps[("umup", widths[0])])
    for (name, value), r in results.mult_sweeps.items():
        assert r.mults[name] == value and r.width == widths[0] and set(r.lr) == {umup_best}

    # the decision, recomputed with numpy from the stored losses
    claims = {c["id"]: c for c in decision["claims"]}
    assert list(claims) == [
        "umup-lr-transfers",
        "umup-defaults-near-optimal",
        "umup-fp8-close",
        "sp-fp8-worse",
        "umup-matches-mup",
    ]
    fp8 = results.fp8["umup"]
    ref, low = results.sweeps[("umup", widths[-1])].at_lr(fp8.lr[0]), fp8.at_lr()
    gap = np.mean([(low[s] - ref[s]) / ref[s] for s in ref])
    assert claims["umup-fp8-close"]["ours"] == pytest.approx(gap, rel=1e-9)  # one seed: the gap alone
    assert claims["umup-fp8-close"]["verdict"] in ("holds", "fails")  # a point value is never undecided
    default = results.sweeps[("umup", widths[0])].at_lr(umup_best)
    default_mean = np.mean(list(default.values()))
    gains = [(default_mean - np.mean(r.valid_loss)) / default_mean for r in results.mult_sweeps.values()]
    assert claims["umup-defaults-near-optimal"]["ours"] == pytest.approx(max(0.0, *gains), rel=1e-9, abs=1e-12)

    # umup-lr-transfers left the claims in issue 41 (a construction with the clamped estimate) and came back in
    # issue 44, decided on the quadratic fit: the drift of the decided optima
    transfer, est = claims["umup-lr-transfers"], decision["estimates"]
    if isinstance(transfer["ours"], dict):
        drift_ = est[f"optimum/umup/w{widths[-1]}"]["estimate"] - est[f"optimum/umup/w{widths[0]}"]["estimate"]
        assert transfer["ours"]["estimate"] == pytest.approx(drift_)
    else:
        assert transfer["ours"].startswith("not bracketed") and transfer["verdict"] == "fails"
    facts = {f["id"]: f for f in decision["facts"]}  # SP's drift: a calibration fact since issue 62
    assert est["drift/umup"] == transfer["ours"] and est["drift/sp"] == facts["sp-lr-drift"]["value"]
    assert list(facts) == ["sp-lr-drift"] and facts["sp-lr-drift"]["kind"] == "calibration"
    assert claims["umup-matches-mup"]["ours"] == est["loss_gap/umup_vs_mup"]  # the loss-gap table's muP row
    entries = [e["kind"] for e in decision["ledger"] if e["claim"] == "umup-lr-transfers"]
    # after its return: issue 57's Results (code), issue 58's grid entry (respecified), issue 62's labels
    assert entries[:2] == ["removed", "added"] and set(entries[2:]) <= {"code", "respecified", "labelled"}
    tables = {t["name"]: t for t in decision["tables"]}
    assert set(tables) == {"optimal_lr", "lr_drift", "loss_gap", "umup_mults", "fp8"}
    assert len(tables["optimal_lr"]["rows"]) == 3 * 2  # parametrizations x widths
    for name in ("lr_sweeps", "optimum_vs_width", "umup_mults"):
        assert (run.run_dir / f"{name}.png").stat().st_size > 0

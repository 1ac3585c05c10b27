"""The FP8 LLM claims decide on their seed spreads: each holds on results that show the effect, fails on results
that show the opposite and is undecided where the seeds' interval straddles the margin (synthetic arm results, no
training); the expected intervals are computed here with scipy, not with the claims' own code."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from core.report import Interval, Verdict
from papers.fp8_llm import Config, claims
from papers.fp8_llm.claims import facts, measure
from papers.fp8_llm.pretrained import LAYER_TYPES, PretrainedResult
from papers.fp8_llm.train import ArmResult

SIZES = {"s": 30_000, "m": 150_000, "l": 450_000}
STATS = [(1, {"block_0/mlp/up": [[1.0, 6], [0.1, 11], [1e-6, 27]]})]


def _cfg(seeds=3):
    c = Config()
    c.seeds = seeds
    return SimpleNamespace(fp8_llm=c, seed=0)


def _results(losses: dict, seeds=(0, 1, 2)):
    """losses: {(size, arm): [loss per seed]}; arms not seeded (delayed, none) get seed 0 only."""
    out = {}
    for (size, arm), values in losses.items():
        s = list(seeds) if len(values) == len(seeds) else [0]
        out[(size, arm)] = ArmResult(arm, size, s, list(values), stats=STATS, parameters=SIZES[size])
    return out


def _inference(results):
    return {
        s: {
            "losses": [v * 1.001 for v in results[(s, "fp32")].valid_losses],
            "fp32": results[(s, "fp32")].valid_losses,
            "stats": {},
        }
        for s in SIZES
    }


def _losses(cscale_gap: dict, amax_gap=0.002):
    base = {"s": [2.0, 2.01, 1.99], "m": [1.8, 1.81, 1.79], "l": [1.7, 1.71, 1.69]}
    out = {}
    for s, b in base.items():
        out[(s, "fp32")] = b
        out[(s, "amax")] = [v * (1 + amax_gap) for v in b]
        out[(s, "cscale")] = [v * (1 + g) for v, g in zip(b, cscale_gap[s], strict=True)]
        out[(s, "delayed")] = [b[0] * 1.001]
        out[(s, "none")] = [b[0] * 1.3]
    return out


def _pretrained(amax_gap=0.003, none_gap=0.2, windows=8):
    rng = np.random.default_rng(0)
    fp32 = list(3.0 + 0.2 * rng.standard_normal(windows))
    noise = 0.001 * rng.standard_normal(windows)
    nats = {
        "fp32": fp32,
        "amax": [v * (1 + amax_gap) + e for v, e in zip(fp32, noise, strict=True)],
        "none": [v * (1 + none_gap) for v in fp32],
    }
    biases = {"amax": {t: {"x": 4.0, "w": 6.0} for t in LAYER_TYPES}}
    return PretrainedResult(512, 8 * 1600, nats, biases, {"amax": {"x": [4], "w": [6]}}, 1.0)


def _measured(losses, seeds=3, pretrained=None):
    cfg = _cfg(seeds)
    results = _results(losses)
    return {c.id: c for c in measure(cfg, results, _inference(results), pretrained or _pretrained())}


def test_pretrained_inference_claim_decides_on_the_windows_interval():
    base = _losses({"s": [0.01] * 3, "m": [0.03] * 3, "l": [0.06] * 3})
    good = _measured(base)["pretrained-fp8-inference"]
    assert good.holds and good.ours.estimate == pytest.approx(0.003, abs=5e-4) and good.ours.high < 0.01
    assert "no scaling" in good.detail and "+20.00%" in good.detail
    assert _measured(base, pretrained=_pretrained(amax_gap=0.02))["pretrained-fp8-inference"].verdict is Verdict.FAILS
    # a gap whose interval reaches past 1% is undecided even with its estimate inside
    wide = _pretrained(amax_gap=0.0)
    wide.nats["amax"] = [v * (1 + g) for v, g in zip(wide.nats["fp32"], [0.0, 0.04] * 4, strict=True)]
    got = _measured(base, pretrained=wide)["pretrained-fp8-inference"]
    assert got.ours.low < 0.01 < got.ours.high and got.verdict is Verdict.UNDECIDED
    off = _cfg()
    off.fp8_llm.pretrained.windows = 0
    assert "pretrained-fp8-inference" not in [c.id for c in claims(off)]


def _t_interval(values):
    v = np.asarray(values, float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return v.mean() - half, v.mean() + half


def test_every_claim_holds_when_cscale_falls_behind_more_at_every_size():
    cscale = {"s": [0.01, 0.012, 0.011], "m": [0.03, 0.032, 0.028], "l": [0.06, 0.065, 0.058]}
    got = _measured(_losses(cscale))
    assert list(got) == [c.id for c in claims(_cfg())]
    assert all(c.verdict is Verdict.HOLDS for c in got.values()), {k: (c.ours, c.verdict) for k, c in got.items()}
    trend = got["cscale-gap-grows"].ours
    assert isinstance(trend, Interval) and trend.low > 0 and "over 9 points" in trend.method  # (size, seed) points
    assert got["amax-matches-fp32"].ours == pytest.approx(0.002)
    assert got["fp8-inference"].ours == pytest.approx(0.001)
    # cscale / amax - 1 per seed at the smallest size (the lowest interval), as a t interval over the 3 seeds
    low, high = _t_interval([(1 + g) / 1.002 - 1 for g in cscale["s"]])
    worse = got["cscale-worse-than-amax"].ours
    assert (worse.low, worse.high) == (pytest.approx(low, rel=1e-6), pytest.approx(high, rel=1e-6)) and low > 0
    # the slope of cscale / fp32 - 1 against ln(parameters), by numpy's least squares
    x = np.repeat(np.log([SIZES[s] for s in cscale]), 3)
    y = np.concatenate([cscale[s] for s in cscale])
    assert trend.estimate == pytest.approx(np.polyfit(x, y, 1)[0], rel=1e-6)


def test_a_flat_gap_is_undecided_a_shrinking_gap_fails_and_so_does_amax_beyond_one_percent():
    flat = _measured(_losses({"s": [0.03, 0.05, 0.01], "m": [0.03, 0.01, 0.05], "l": [0.05, 0.03, 0.01]}))
    assert flat["cscale-gap-grows"].verdict is Verdict.UNDECIDED  # slope 0, interval across 0: cannot tell
    assert flat["cscale-gap-grows"].ours.low < 0 < flat["cscale-gap-grows"].ours.high
    shrinking = _measured(_losses({"s": [0.06, 0.065, 0.058], "m": [0.03, 0.032, 0.028], "l": [0.01, 0.012, 0.011]}))
    assert shrinking["cscale-gap-grows"].verdict is Verdict.FAILS and shrinking["cscale-gap-grows"].ours.high < 0
    # cscale within amax's noise at the middle size: the seeds' interval straddles 0 there
    mid = [0.0, 0.01, -0.006]
    mixed = _measured(_losses({"s": [0.01, 0.012, 0.011], "m": mid, "l": [0.06, 0.065, 0.058]}))
    low, high = _t_interval([(1 + g) / 1.002 - 1 for g in mid])
    assert low < 0 < high
    assert mixed["cscale-worse-than-amax"].verdict is Verdict.UNDECIDED
    assert "lowest at size m" in mixed["cscale-worse-than-amax"].detail
    got = _measured(_losses({"s": [0.01] * 3, "m": [0.03] * 3, "l": [0.06] * 3}, amax_gap=0.02))
    assert got["amax-matches-fp32"].ours == pytest.approx(0.02) and got["amax-matches-fp32"].verdict is Verdict.FAILS


def test_a_single_seed_declares_no_seed_interval():
    ids = [c.id for c in claims(_cfg(seeds=1))]
    assert "cscale-worse-than-amax" not in ids  # an interval over seeds needs 2 or more
    assert "cscale-gap-grows" in ids  # 3 sizes x 1 seed: 3 points, a slope with 1 degree of freedom


def test_the_gradient_biases_are_a_construction_fact_not_a_claim():
    cfg = _cfg()
    assert "gradients-need-largest-biases" not in [c.id for c in claims(cfg)]
    results = _results(_losses({"s": [0.01] * 3, "m": [0.03] * 3, "l": [0.06] * 3}))
    (fact,) = facts(cfg, results)
    assert fact.id == "gradient-biases-largest" and fact.kind == "construction"
    assert fact.value == "activations 6, weights 11, gradients 27"  # STATS' biases (x, w, g)
    # the construction: E5M2's max is 2^7 x E4M3's, so the same amax gets a bias 7 larger
    assert np.log2(57344 / 448) == 7
    cfg.fp8_llm.arms = ["fp32", "cscale"]
    assert facts(cfg, results) == []

"""The unit-scaling decision on hand-made Results whose outcome is known: the verdicts, the paired gap and the
estimates the report's tables show (no JAX, no run)."""

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from core.claims import Interval
from papers.unit_scaling.arms import ARMS, IID_LABEL
from papers.unit_scaling.claims import decide, paired_gap
from papers.unit_scaling.config import Config
from papers.unit_scaling.results import ArmResult, Corpus, Results, TensorScale


def _arm(name, test_bpc):
    n = len(test_bpc)
    return ArmResult(name, list(test_bpc), [], [0] * n, {"init": 0.0, "final": 0.0}, [1.0] * n, 0.0)


def _scale(name, kind, std):
    return TensorScale(name, kind, std, (4,))


def _results(scales, arms) -> Results:
    return Results(scales, [], arms, Corpus(65, 1000, 100, 100, ["a play"]), {})


CFG = NS(unit_scaling=Config())


def test_verdicts_on_hand_made_results_whose_outcome_is_known():
    # unit-scaled on text: activations within 2x of 1 but a weight gradient 5x off (the claim covers every tensor:
    # fails); on i.i.d. tokens within 2x (holds); regular: activation gradients 2^-10, 2^-12, 2^-14 (median -12)
    unit = [_scale("a", "activation", 1.2), _scale("b", "activation grad", 0.6), _scale("w", "weight grad", 5.0)]
    iid = [_scale("a", "activation", 1.2), _scale("w", "weight grad", 1.7)]
    regular = [_scale(f"g{i}", "activation grad", 2.0**e) for i, e in enumerate((-10, -12, -14))]
    scales = {ARMS["fp32_unit"].label: unit, ARMS["fp32_regular"].label: regular, IID_LABEL: iid}
    fp32 = [2.0, 2.1, 2.2]
    unit32 = [1.9, 2.0, 2.1]
    arms = {
        "fp32_regular": _arm("fp32_regular", fp32),
        "fp32_unit": _arm("fp32_unit", unit32),
        # FP16 unit-scaled -0.2% / +0.1% / 0 against FP32 unit-scaled: the interval inside +-1%, holds (it is 5%
        # better than FP32 regular, which the old rule counted as matching)
        "fp16_unit": _arm("fp16_unit", [1.9 * 0.998, 2.0 * 1.001, 2.1]),
        # loss-scaled +0.5% / -0.5% / +1.5%: the interval straddles +1%, undecided
        "fp16_regular_ls2048": _arm("fp16_regular_ls2048", [2.0 * 1.005, 2.1 * 0.995, 2.2 * 1.015]),
        "fp16_regular": _arm("fp16_regular", [math.nan, 2.0, 2.1]),  # a diverged seed: holds
        "fp8_unit": _arm("fp8_unit", [1.9 * 1.05, 2.0 * 1.051, 2.1 * 1.049]),  # +5%: all of it beyond 1%, fails
        "fp8_regular": _arm("fp8_regular", [2.0 * 1.02, 2.1 * 1.021, 2.2 * 1.019]),  # +2% on FP32 regular: holds
    }
    decided = decide(CFG, _results(scales, arms))
    got = {c.id: c for c in decided.claims}
    assert got["init-unit-scales"].ours == pytest.approx(math.log2(5.0))
    assert got["init-unit-scales-iid"].ours == pytest.approx(math.log2(1.7))
    assert got["fp8-unit-matches-fp32-unit"].ours.estimate == pytest.approx(0.05, abs=1e-9)
    assert {cid: c.verdict.value for cid, c in got.items()} == {
        "init-unit-scales": "fails",
        "init-unit-scales-iid": "holds",
        "fp16-unit-matches-fp32-unit": "holds",
        "fp16-regular-ls-matches-fp32": "undecided",
        "fp8-unit-matches-fp32-unit": "fails",
        "fp16-regular-worse": "holds",
        "fp8-regular-fails": "unverified",  # its figure's source is none (issue 62): the rule's outcome beside
    }
    assert got["fp8-regular-fails"].rule_verdict.value == "holds"
    # the regular model's gradient scale is a fact (construction), not a claim: the loss's mean over the analysis
    # batch's 16 x 64 = 1024 tokens puts 10 of its octaves there (issue 62)
    (fact,) = decided.facts
    assert (fact.id, fact.kind, fact.value) == ("init-regular-gradient-scale", "construction", pytest.approx(-12.0))
    assert "1/1024 (-10 octaves" in fact.detail and "-2.0 with the loss summed" in fact.detail
    assert "init-regular-gradients-small" not in got
    # the estimates the tables show: each claim's gap is the claim's own figure; the gaps against FP32 regular and
    # each arm's test BPC carry their t interval; a diverged arm is named so
    est = decided.estimates
    for cid, arm, twin in (
        ("fp16-unit-matches-fp32-unit", "fp16_unit", "fp32_unit"),
        ("fp8-unit-matches-fp32-unit", "fp8_unit", "fp32_unit"),
        ("fp8-regular-fails", "fp8_regular", "fp32_regular"),
        ("fp16-regular-worse", "fp16_regular", "fp32_regular"),
    ):
        assert est[f"gap/{arm}/{twin}"] == got[cid].ours
    assert est["gap/fp16_regular/fp32_regular"] == "diverged" and est["bpc/fp16_regular"] == "diverged"
    assert est["gap/fp32_unit/fp32_regular"].estimate == pytest.approx(np.mean(np.array(unit32) / fp32 - 1))
    fp8_unit = np.array(arms["fp8_unit"].test_bpc)
    assert est["gap/fp8_unit/fp32_regular"].estimate == pytest.approx(np.mean(fp8_unit / fp32 - 1))
    assert isinstance(est["bpc/fp32_regular"], Interval) and est["bpc/fp32_regular"].estimate == pytest.approx(2.1)
    assert "gap/fp16_regular_ls2048/fp32_regular" in est and "gap/fp16_regular/fp32_unit" not in est

    # the opposite outcomes (the regular gradients' fact at 2^-4), FP16 regular 0.5% behind FP32 (the interval
    # below the 1% margin), FP8 regular -3% (all of it below): both fail; an arm left out leaves its claim not measured
    regular_big = [_scale("g", "activation grad", 2.0**-4)]
    scales = {ARMS["fp32_unit"].label: iid, ARMS["fp32_regular"].label: regular_big, IID_LABEL: iid}
    arms["fp16_regular"] = _arm("fp16_regular", [2.0 * 1.005, 2.1 * 1.004, 2.2 * 1.006])
    arms["fp8_regular"] = _arm("fp8_regular", [2.0 * 0.97, 2.1 * 0.971, 2.2 * 0.969])
    arms.pop("fp8_unit")
    decided = decide(CFG, _results(scales, arms))
    got = {c.id: c for c in decided.claims}
    assert got["init-unit-scales"].verdict.value == "holds"
    assert decided.facts[0].value == pytest.approx(-4.0)
    assert got["fp16-regular-worse"].verdict.value == "fails"
    assert got["fp8-regular-fails"].rule_verdict.value == "fails"
    assert got["fp8-unit-matches-fp32-unit"].verdict.value == "not measured"
    assert not any(name.startswith(("gap/fp8_unit/", "bpc/fp8_unit")) for name in decided.estimates)


def test_one_seed_gives_the_claims_a_point_and_the_tables_no_estimate():
    iid = [_scale("a", "activation", 1.2)]
    regular = [_scale("g", "activation grad", 2.0**-10)]
    scales = {ARMS["fp32_unit"].label: iid, ARMS["fp32_regular"].label: regular, IID_LABEL: iid}
    arms = {"fp32_unit": _arm("fp32_unit", [2.0]), "fp16_unit": _arm("fp16_unit", [2.02])}
    decided = decide(CFG, _results(scales, arms))
    got = {c.id: c for c in decided.claims}
    assert got["fp16-unit-matches-fp32-unit"].ours == pytest.approx(0.01)
    assert decided.estimates == {}  # no interval over one seed: nothing for `make compare` to hold a run against


def test_the_paired_gap_is_the_t_interval_of_the_per_seed_ratios():
    from scipy import stats

    a, b = [2.02, 1.97, 2.11, 2.05], [2.0, 2.0, 2.1, 2.0]
    got = paired_gap({"x": _arm("x", a), "y": _arm("y", b)}, "x", "y")
    gaps = np.array(a) / np.array(b) - 1
    half = stats.t.ppf(0.975, 3) * gaps.std(ddof=1) / 2
    assert got.estimate == pytest.approx(gaps.mean())
    assert (got.low, got.high) == pytest.approx((gaps.mean() - half, gaps.mean() + half))
    assert paired_gap({"x": _arm("x", [math.inf, 2.0]), "y": _arm("y", b[:2])}, "x", "y") == "diverged"
    assert paired_gap({"x": _arm("x", a)}, "x", "y") is None

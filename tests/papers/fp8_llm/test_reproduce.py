"""The FP8 LLM reproduction at the smoke scale: every claim, the tables and both figures, decided from the Results the
run stored; a finished SmolLM2 evaluation kept in the checkpoint folder is reused on resume; config errors name the
key."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from core.config import ConfigError, validate_section
from core.context import RunContext
from papers.fp8_llm.config import ARMS, MX_VARIANTS, Config, PretrainedConfig
from papers.fp8_llm.results import PretrainedResult, Results


@pytest.mark.slow  # the smoke run: make test-all (tests/papers/conftest.py SMOKE says what covers it)
def test_smoke_run_reports_every_claim(smoke_run):
    run = smoke_run("fp8_llm")  # what every run record holds: tests/papers/test_contract.py
    decision, claims = run.decision, run.claims
    assert list(claims) == [
        "amax-matches-fp32",
        "cscale-worse-than-amax",
        "cscale-gap-grows",
        "fp8-inference",
    ]
    assert {c["verdict"] for c in claims.values()} == {"unverified"}  # every figure is secondary (REFERENCES.md)
    # the gradients' larger biases hold by construction (E5M2's max is 2^7 x E4M3's), and their smaller amaxes by the
    # loss's mean over the batch's tokens: facts, not claims
    facts = {f["id"]: f for f in decision["facts"]}
    assert facts["gradient-biases-largest"]["kind"] == facts["gradients-smallest-amax"]["kind"] == "construction"
    medians = dict(part.split(" ") for part in facts["gradient-biases-largest"]["value"].split(", "))
    assert int(medians["gradients"]) > max(int(medians["activations"]), int(medians["weights"]))
    removed = {e["claim"] for e in decision["ledger"] if e["kind"] == "removed"}
    assert {"gradients-need-largest-biases", "gradients-smallest-amax"} <= removed
    for cid in claims:  # every claim decided on an interval: 2 seeds in the smoke run
        ours = claims[cid]["ours"]
        assert ours["low"] <= ours["estimate"] <= ours["high"] and ours["confidence"] == 0.95, (cid, ours)
    assert "over 4 points" in claims["cscale-gap-grows"]["ours"]["method"]  # 2 sizes x 2 seeds
    assert all(c["paper"] and "ref." in c["paper"] for c in claims.values())  # the paper's statements
    table, mx = decision["tables"]
    assert [t["name"] for t in decision["tables"]] == ["validation_loss", "mx_inference"]
    seeds = {(row[0], row[2]): row[3] for row in table["rows"]}
    assert seeds[("s", "fp32")] == seeds[("m", "cscale")] == 2
    # post-training MX inference of every size's FP32 models, each variant a row with a t interval over the 2 seeds
    assert [(row[0].split(" (")[0].split(",")[0], row[1][-1]) for row in mx["rows"]] == [
        (v, size) for v in ("MXFP8", "MXFP4 weights", "MXFP8") for size in "sm"
    ]
    for row in mx["rows"]:
        assert row[2] == "2 seeds" and row[3]["low"] <= row[3]["estimate"] <= row[3]["high"]
    for size in "sm":
        assert seeds[(size, "fp32 -> MXFP8 (E4M3 activations and weights) inference")] == 2
        for variant in ("mxfp8", "mxfp4", "mxfp8_ceil"):
            assert math.isfinite(decision["metrics"][f"{size}/inference_{variant}/valid_loss"])
    assert {"validation_curves.png", "scale_biases.png"} <= {f["file"] for f in decision["figures"]}
    assert all(v == 0 for k, v in decision["metrics"].items() if k.endswith("bad_amax"))


@pytest.mark.slow  # the smoke run: make test-all (tests/papers/conftest.py SMOKE says what covers it)
def test_the_stored_results_hold_what_the_claims_read(smoke_run):
    run = smoke_run("fp8_llm")
    results, claims, estimates = run.results, run.claims, run.decision["estimates"]
    assert isinstance(results, Results) and results.pretrained is None  # smoke: SmolLM2 off
    assert list(results.arms) == ["s", "m"] and all(
        list(a) == ["fp32", "amax", "cscale"] for a in results.arms.values()
    )
    for size, arms in results.arms.items():
        assert all(r.seeds == [0, 1] and len(r.valid_losses) == 2 for r in arms.values())
        # the scaling statistics are kept for the amax arm only: 4 recorded steps (1, 3, 5, 6) x 2 seeds
        assert [(step, seed) for step, seed, _ in arms["amax"].stats] == [(k, s) for k in (1, 3, 5, 6) for s in (0, 1)]
        assert arms["fp32"].stats == arms["cscale"].stats == []
        q = results.inference[size]
        assert len(q.fp8) == 2 and list(q.mx) == list(MX_VARIANTS) and all(len(v) == 2 for v in q.mx.values())
        assert set(q.stats) == {f"block_0/{t}" for t in ("attention/qkv", "attention/out", "mlp/up", "mlp/down")}
    # fp8-inference, recomputed from the stored losses with scipy: the size whose t interval reaches farthest from 0
    per_size = {}
    for size, q in results.inference.items():
        gaps = np.asarray(q.fp8) / np.asarray(results.arm(size, "fp32").valid_losses) - 1
        ci = stats.ttest_1samp(gaps, 0.0).confidence_interval(0.95)
        per_size[size] = (gaps.mean(), ci.low, ci.high)
        assert estimates[f"inference/{size}/fp8"]["estimate"] == pytest.approx(gaps.mean(), rel=1e-12)
    far = max(per_size, key=lambda s: max(abs(per_size[s][1]), abs(per_size[s][2])))
    ours = claims["fp8-inference"]["ours"]
    assert (ours["estimate"], ours["low"], ours["high"]) == pytest.approx(per_size[far], rel=1e-9)
    assert {f"gap/{s}/{a}" for s in "sm" for a in ("amax", "cscale", "cscale-vs-amax")} <= set(estimates)


def test_a_kept_smollm2_evaluation_is_reused_on_resume(tmp_path, monkeypatch):
    """SmolLM2's evaluation is kept in the memo store when it finishes and read back, not recomputed, by a resumed
    run, and computed again by a fresh one (a stand-in for the evaluation, so no model runs)."""
    from papers.fp8_llm import pretrained as module
    from papers.fp8_llm.run import _pretrained

    pc = PretrainedConfig(windows=2, window=8, policies=["amax"])
    made = PretrainedResult(8, 40, {"fp32": [3.0, 3.1], "amax": [3.05, 3.12]}, {}, {}, 1.5)
    calls = []
    monkeypatch.setattr(module, "pretrained_fp8_inference", lambda *a: calls.append(a) or made)
    first = _pretrained(pc, RunContext.detached(memo_dir=tmp_path))
    (kept,) = tmp_path.glob("pretrained/*/value.json")
    assert first == made and calls == [(2, 8, ("amax",))] and json.loads(kept.read_text())["nats"] == made.nats
    again = _pretrained(pc, RunContext.detached(memo_dir=tmp_path, resume=True))
    assert again == made and len(calls) == 1  # read back, not recomputed
    assert _pretrained(PretrainedConfig(windows=0), RunContext.detached(memo_dir=tmp_path)) is None
    _pretrained(pc, RunContext.detached(memo_dir=tmp_path))  # a fresh run evaluates again
    _pretrained(PretrainedConfig(windows=3, window=8, policies=["amax"]), RunContext.detached(memo_dir=tmp_path))
    assert len(calls) == 3 and len(list(tmp_path.glob("pretrained/*/value.json"))) == 2


def test_the_arm_names_are_the_fp8_policies():
    from core.numerics.fp8 import POLICIES
    from papers.fp8_llm.train import build_model

    assert ARMS == ("fp32", *POLICIES)  # config.py holds them without importing JAX
    with pytest.raises(ValueError, match="unknown MX variant"):
        build_model(Config().sizes[0], 80, 16, "mx", mx="mxfp5")


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"fp8_llm\.arms"):
        validate_section({"arms": ["fp32", "fp4"]}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match="must include fp32"):
        validate_section({"arms": ["amax"]}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match=r"fp8_llm\.sizes\.x: d_model=30 is not divisible by heads=4"):
        validate_section({"sizes": [{"name": "x", "d_model": 30, "depth": 1, "heads": 4}]}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match="names repeat"):
        validate_section({"sizes": [{"name": "a"}, {"name": "a"}]}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match=r"fp8_llm\.run\.steps"):
        validate_section({"run": {"steps": 0}}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match=r"fp8_llm\.mx='mxfp5' is not allowed"):
        validate_section({"mx": ["mxfp5"]}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match=r"fp8_llm\.seeds=0 is out of range"):
        validate_section({"seeds": 0}, Config, "fp8_llm")
    with pytest.raises(ConfigError, match=r"fp8_llm\.seed_arms='fp16' is not allowed"):
        validate_section({"seed_arms": ["fp32", "fp16"]}, Config, "fp8_llm")

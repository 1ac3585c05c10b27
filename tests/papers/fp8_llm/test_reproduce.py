"""The FP8 LLM reproduction at the smoke scale: every claim, the table and both figures; a resumed run retrains
nothing; config errors name the key."""

import math

import pytest

from core.config import ConfigError, validate_section
from papers.fp8_llm import Config


def test_smoke_run_reports_every_claim(smoke_run):
    results = smoke_run("fp8_llm").results  # what every run record holds: tests/papers/test_contract.py
    claims = {c["id"]: c for c in results["claims"]}
    assert list(claims) == [
        "amax-matches-fp32",
        "cscale-worse-than-amax",
        "cscale-gap-grows",
        "fp8-inference",
        "gradients-smallest-amax",
    ]
    # the gradients' larger biases hold by construction (E5M2's max is 2^7 x E4M3's): a fact, not a claim
    facts = {f["id"]: f for f in results["facts"]}
    assert facts["gradient-biases-largest"]["kind"] == "construction"
    medians = dict(part.split(" ") for part in facts["gradient-biases-largest"]["value"].split(", "))
    assert int(medians["gradients"]) > max(int(medians["activations"]), int(medians["weights"]))
    assert any(e["claim"] == "gradients-need-largest-biases" and e["kind"] == "removed" for e in results["ledger"])
    for cid in claims:  # every claim decided on an interval: 2 seeds in the smoke run
        ours = claims[cid]["ours"]
        assert ours["low"] <= ours["estimate"] <= ours["high"] and ours["confidence"] == 0.95, (cid, ours)
    assert "over 4 points" in claims["cscale-gap-grows"]["ours"]["method"]  # 2 sizes x 2 seeds
    assert all(c["paper"] and "ref." in c["paper"] for c in claims.values())  # the paper's statements
    table, mx = results["tables"]
    assert [t["name"] for t in results["tables"]] == ["validation_loss", "mx_inference"]
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
            assert math.isfinite(results["metrics"][f"{size}/inference_{variant}/valid_loss"])
    assert {"validation_curves.png", "scale_biases.png"} <= {f["file"] for f in results["figures"]}
    assert all(v == 0 for k, v in results["metrics"].items() if k.endswith("bad_amax"))


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

"""The unit-scaling reproduction end to end at the smoke scale, and its config checks."""

import json

import pytest

from core.config import ConfigError, validate_section
from papers.unit_scaling import ARMS, Config


def test_config_rejects_unknown_arms_and_missing_learning_rates():
    lr = {a: 0.01 for a in ARMS}
    validate_section({"lr": lr}, Config, "unit_scaling")
    with pytest.raises(ConfigError, match=r"arms='fp4_unit' is not allowed: choose one of fp32_regular"):
        validate_section({"lr": lr, "arms": ["fp4_unit"]}, Config, "unit_scaling")
    with pytest.raises(ConfigError, match="lr has no learning rate for arm"):
        Config(lr={"fp32_regular": 0.01})  # (a config's lr merges into the defaults, which have every arm)
    with pytest.raises(ConfigError, match=r"unit_scaling\.lr\.fp32_unit=2\.0 is out of range"):
        validate_section({"lr": {**lr, "fp32_unit": 2.0}}, Config, "unit_scaling")
    with pytest.raises(ConfigError, match=r"model\.d_model=30 must be divisible by model\.heads=4"):
        validate_section({"lr": lr, "model": {"d_model": 30}}, Config, "unit_scaling")


def test_smoke_run_writes_every_claim_table_and_figure(cli, tmp_path):
    r = cli(["paper=unit_scaling", "scale=smoke", "logger=none", f"output_root={tmp_path}"], toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "unit_scaling" / "latest"
    results = json.loads((run / "results.json").read_text())
    ids = [c["id"] for c in results["claims"]]
    assert ids == [
        "init-unit-scales",
        "init-regular-gradients-small",
        "fp16-unit-matches-fp32",
        "fp16-regular-worse",
        "fp8-unit-matches-fp32",
        "fp8-regular-fails",
    ]
    assert all(c["ours"] is not None for c in results["claims"])  # every arm ran, so every claim is measured
    arms = {row[0] for row in next(t for t in results["tables"] if t["name"] == "arms")["rows"]}
    assert arms == {a.label for a in ARMS.values()}
    for fig in ("init_scales", "training_curves", "grad_underflow"):
        assert (run / f"{fig}.png").stat().st_size > 1000
    assert results["metrics"]["test_bpc/fp32_regular"] > 0
    report = (run / "report.md").read_text()
    assert (
        "the paper's table beside ours" in report and "| paper (attention pre-norm, WikiText-103) | 1.661 |" in report
    )


@pytest.mark.slow  # ~60 s; the smoke test also reruns nothing it finished
def test_a_finished_arm_is_not_trained_again(cli, tmp_path):
    args = [
        "paper=unit_scaling",
        "scale=smoke",
        "logger=none",
        "unit_scaling.arms=[fp8_regular]",
        f"output_root={tmp_path}",
    ]
    first = cli(args, toy=False)
    assert first.returncode == 0, first.stderr[-3000:]
    metrics = json.loads((tmp_path / "unit_scaling" / "latest" / "results.json").read_text())["metrics"]
    assert metrics["resumed_from/fp8_regular"] == 0
    again = cli(args, toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads((tmp_path / "unit_scaling" / "latest" / "results.json").read_text())["metrics"]
    assert resumed["resumed_from/fp8_regular"] == 6  # the checkpoint of the last step: nothing left to train
    assert resumed["test_bpc/fp8_regular"] == metrics["test_bpc/fp8_regular"]

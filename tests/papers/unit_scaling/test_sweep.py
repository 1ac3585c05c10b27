"""The learning-rate sweep's collector: rows per (arm, rate) and the best rate by mean validation BPC."""

import json

import pytest

from papers.unit_scaling.sweep import collect, load


def _run(root, name, arm, lr, valid):
    run = root / name
    run.mkdir(parents=True)
    results = {
        "paper": "unit_scaling",
        "config": {"unit_scaling": {"arms": [arm], "lr": {arm: lr, "other": 9.0}, "seeds": [0, 1], "steps": 1000}},
        "metrics": {f"valid_bpc/{arm}": valid},
        "tables": [{"name": "arms", "rows": [[arm, lr, 3.0, 0.1, "3.010, 2.990"]]}],
        "versions": {"git commit": "abc1234"},
    }
    (run / "results.json").write_text(json.dumps(results))


def test_collect_picks_the_lowest_mean_validation_bpc_per_arm_and_treats_divergence_as_worst(tmp_path):
    _run(tmp_path, "0", "fp32_unit", 0.0625, 2.91)
    _run(tmp_path, "1", "fp32_unit", 0.125, 2.87)
    _run(tmp_path, "2", "fp32_unit", 0.25, "diverged")
    _run(tmp_path, "3", "fp32_regular", 0.0078125, 2.95)
    table = collect(tmp_path)
    assert table["best"] == {"fp32_unit": 0.125, "fp32_regular": 0.0078125}
    assert [(r["arm"], r["lr"]) for r in table["rows"]] == [
        ("fp32_regular", 0.0078125),
        ("fp32_unit", 0.0625),
        ("fp32_unit", 0.125),
        ("fp32_unit", 0.25),
    ]
    assert table["rows"][3]["valid_bpc"] is None and table["rows"][0]["test_bpc_per_seed"] == "3.010, 2.990"


def test_collect_refuses_multi_arm_runs_and_empty_folders(tmp_path):
    with pytest.raises(ValueError, match=r"no unit_scaling results\.json"):
        collect(tmp_path)
    _run(tmp_path, "0", "fp32_unit", 0.1, 2.9)
    data = json.loads((tmp_path / "0" / "results.json").read_text())
    data["config"]["unit_scaling"]["arms"] = ["fp32_unit", "fp8_unit"]
    (tmp_path / "0" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="a sweep run trains one arm"):
        collect(tmp_path)


def test_the_shipped_sweep_chose_the_rates_the_config_uses():
    from papers.unit_scaling import Config

    sweep = load()
    assert sweep is not None, "papers/unit_scaling/lr_sweep.json is missing"
    lr = Config().lr
    for arm, best in sweep["best"].items():
        assert lr[arm] == best, arm
    # the arms without their own rate take their FP32 twin's
    assert lr["fp8_regular"] == lr["fp32_regular"] and lr["fp16_unit"] == lr["fp32_unit"]
    assert {r["lr"] for r in sweep["rows"] if r["arm"] == "fp32_unit"} == {
        r["lr"] for r in sweep["rows"] if r["arm"] == "fp32_regular"
    }  # one grid for every swept arm

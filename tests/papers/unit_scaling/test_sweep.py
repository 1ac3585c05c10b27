"""The learning-rate sweep's collector: rows per (arm, rate) and the best rate by mean validation BPC, from the run
records of the run -> Results contract and from those of earlier versions; and the shipped sweep the runs store."""

import json
import math

import pytest

from core.results import to_json
from papers.unit_scaling.results import ArmResult, Corpus, Results
from papers.unit_scaling.sweep import collect, load


def _run(root, name, arm, lr, valid, test_bpc=(3.01, 2.99)):
    """A single-arm run's results.json as the runner writes it (core.record): the config and the stored Results."""
    run = root / name
    run.mkdir(parents=True)
    seeds = list(range(len(test_bpc)))
    curve = [(500, [9.0] * len(seeds)), (1000, [valid - 0.01, valid + 0.01])]
    result = ArmResult(arm, list(test_bpc), curve, [0, 0], {"init": 0.0, "final": 0.0}, [1.0, 1.0], 1.0)
    results = Results({}, [], {arm: result}, Corpus(65, 10, 10, 10, []), {})
    record = {
        "format": 2,
        "paper": "unit_scaling",
        "commit": "abc1234",
        "modified": False,
        "config": {"unit_scaling": {"arms": [arm], "lr": {arm: lr, "other": 9.0}, "seeds": seeds, "steps": 1000}},
        "results": to_json(results),
    }
    (run / "results.json").write_text(json.dumps(record))


def _old_run(root, name, arm, lr, valid):
    """A results.json of the versions before the stored Results: the report's tables and metrics."""
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
    _run(tmp_path, "2", "fp32_unit", 0.25, math.nan, test_bpc=(math.nan, 3.0))
    _old_run(tmp_path, "3", "fp32_regular", 0.0078125, 2.95)  # a record of an earlier version reads as well
    _old_run(tmp_path, "4", "fp32_regular", 0.015625, "diverged")
    table = collect(tmp_path)
    assert table["best"] == {"fp32_unit": 0.125, "fp32_regular": 0.0078125}
    assert [(r["arm"], r["lr"]) for r in table["rows"]] == [
        ("fp32_regular", 0.0078125),
        ("fp32_regular", 0.015625),
        ("fp32_unit", 0.0625),
        ("fp32_unit", 0.125),
        ("fp32_unit", 0.25),
    ]
    rows = {(r["arm"], r["lr"]): r for r in table["rows"]}
    assert rows["fp32_unit", 0.25]["valid_bpc"] is None and rows["fp32_regular", 0.015625]["valid_bpc"] is None
    assert rows["fp32_unit", 0.125]["valid_bpc"] == pytest.approx(2.87)  # the mean over seeds, last evaluation
    assert rows["fp32_unit", 0.125]["test_bpc_per_seed"] == "3.010, 2.990"  # as the arms table prints them
    assert rows["fp32_unit", 0.25]["test_bpc_per_seed"] == "nan, 3.000"
    assert rows["fp32_regular", 0.0078125]["test_bpc_per_seed"] == "3.010, 2.990"
    assert {r["commit"] for r in table["rows"]} == {"abc1234"}


def test_collect_refuses_multi_arm_runs_and_empty_folders(tmp_path):
    with pytest.raises(ValueError, match=r"no unit_scaling results\.json"):
        collect(tmp_path)
    _run(tmp_path, "0", "fp32_unit", 0.1, 2.9)
    data = json.loads((tmp_path / "0" / "results.json").read_text())
    data["config"]["unit_scaling"]["arms"] = ["fp32_unit", "fp8_unit"]
    (tmp_path / "0" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="a sweep run trains one arm"):
        collect(tmp_path)


def test_the_shipped_sweep_chose_the_rates_the_config_uses_and_every_run_stores_it():
    from papers.unit_scaling.config import Config
    from papers.unit_scaling.run import shipped_sweep

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
    stored = shipped_sweep()  # what run() puts in the Results, for the report's lr-sweep table
    assert to_json(stored) == sweep

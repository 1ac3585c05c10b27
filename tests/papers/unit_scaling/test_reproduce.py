"""The unit-scaling reproduction end to end at the smoke scale, its config checks, and the reuse of a finished arm's
checkpoints (in process on a tiny config; the full second run from the command line is a slow test)."""

import json
import math

import numpy as np
import pytest

from core.config import ConfigError, validate_section
from papers.unit_scaling.arms import ARMS, IID_LABEL
from papers.unit_scaling.config import Config, ModelConfig


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
    with pytest.raises(ConfigError, match="track_steps: 150 is not an evaluation step"):
        validate_section({"lr": lr, "track_steps": [150]}, Config, "unit_scaling")
    with pytest.raises(ConfigError, match=r"fp8\.rounding='up' is not allowed"):
        validate_section({"lr": lr, "fp8": {"rounding": "up"}}, Config, "unit_scaling")


@pytest.mark.slow  # the smoke run: make test-all (tests/papers/conftest.py SMOKE says what covers it)
def test_smoke_run_writes_every_claim_table_and_figure(smoke_run):
    run = smoke_run("unit_scaling")  # what every run record holds: tests/papers/test_contract.py
    decision, results = run.decision, run.results
    ids = [c["id"] for c in decision["claims"]]
    assert ids == [
        "init-unit-scales",
        "init-unit-scales-iid",
        "fp16-unit-matches-fp32-unit",
        "fp16-regular-ls-matches-fp32",
        "fp8-unit-matches-fp32-unit",
        "fp16-regular-worse",
        "fp8-regular-fails",
    ]
    claims = run.claims
    tables = {t["name"]: t for t in decision["tables"]}
    metrics = decision["metrics"]
    arms = {row[0]: row for row in tables["arms"]["rows"]}
    assert set(arms) == {a.label for a in ARMS.values()} and set(results.arms) == set(ARMS)
    for name, arm in ARMS.items():  # the metric is the mean of the per-seed BPCs the run stored and the table lists
        per = np.asarray(results.arms[name].test_bpc)
        assert arms[arm.label][4] == ", ".join(f"{x:.3f}" for x in per)
        if np.isfinite(per).all():
            assert metrics[f"test_bpc/{name}"] == pytest.approx(np.mean(per), rel=1e-12)
        assert metrics[f"test_bpc/{name}"] == arms[arm.label][2]
        assert metrics[f"resumed_from/{name}"] == 0 and len(per) == 2  # the smoke's 2 seeds, trained from scratch

    # every claim's figure recomputed independently: each gap from the stored per-seed test BPCs, the scale claims
    # from the init-scales table; verdicts are tested on hand-made Results (test_decide.py)
    twin = {
        "fp16-unit-matches-fp32-unit": ("fp16_unit", "fp32_unit"),
        "fp16-regular-ls-matches-fp32": ("fp16_regular_ls2048", "fp32_regular"),
        "fp8-unit-matches-fp32-unit": ("fp8_unit", "fp32_unit"),
        "fp16-regular-worse": ("fp16_regular", "fp32_regular"),
        "fp8-regular-fails": ("fp8_regular", "fp32_regular"),
    }
    for cid, (arm, ref) in twin.items():  # the smoke run's 2 seeds: a t interval of the paired per-seed gaps
        ours, base = np.asarray(results.arms[arm].test_bpc), np.asarray(results.arms[ref].test_bpc)
        if np.isfinite(ours).all():
            gaps = ours / base - 1
            assert claims[cid]["ours"]["estimate"] == pytest.approx(gaps.mean(), rel=1e-9), cid
            assert claims[cid]["ours"]["low"] <= gaps.min() and claims[cid]["ours"]["high"] >= gaps.max()
            assert decision["estimates"][f"gap/{arm}/{ref}"] == claims[cid]["ours"]  # what the gaps table shows
        else:
            assert claims[cid]["ours"] == "diverged", cid
    # the paper's figures: relative gaps of its pre-norm row (papers/unit_scaling/REFERENCES.md, US-BPC)
    assert claims["fp16-unit-matches-fp32-unit"]["paper"] == pytest.approx(1.567 / 1.562 - 1)
    assert claims["fp16-regular-ls-matches-fp32"]["paper"] == pytest.approx(1.587 / 1.582 - 1)
    assert claims["fp16-regular-worse"]["paper"] == pytest.approx(1.661 / 1.582 - 1)
    scales = {(row[0], row[1]): row for row in tables["init-scales"]["rows"]}  # [model, kind, n, min, median, max]
    for cid, model in (("init-unit-scales", "FP32 unit-scaled"), ("init-unit-scales-iid", IID_LABEL)):
        rows = [scales[model, kind] for kind in ("weight", "activation", "weight grad", "activation grad")]
        assert claims[cid]["ours"] == pytest.approx(max(max(abs(row[3]), abs(row[5])) for row in rows)), cid
    median = scales["FP32 regular", "activation grad"][4]
    facts = {f["id"]: f for f in decision["facts"]}  # the regular model's gradient scale: a fact since issue 62
    assert facts["init-regular-gradient-scale"]["value"] == pytest.approx(median)
    # the history of re-specified claims shows beside them
    assert {e["claim"] for e in decision["ledger"]} >= {
        "init-unit-scales",
        "fp16-regular-worse",
        "fp16-unit-matches-fp32",
    }
    gaps = {row[0]: row for row in tables["gaps"]["rows"]}  # each arm against its own FP32 and FP32 regular
    assert set(gaps) == {
        ARMS[a].label for a in ("fp16_unit", "fp8_unit", "fp16_regular_ls2048", "fp16_regular", "fp8_regular")
    } | {"FP32 unit-scaled (the parametrization effect)"}
    for fig in (
        "init_scales",
        "training_curves",
        "grad_underflow",
        "scale_tracks_fp8_unit",
        "scale_tracks_fp8_regular",
    ):
        assert (run.run_dir / f"{fig}.png").stat().st_size > 1000
    # the FP8 gradient error at init: every recipe for both models, a real error (not 0) and a direction kept
    errors = tables["gradient-error"]["rows"]
    assert len(errors) == 8 and {row[0] for row in errors} == {"unit", "regular"}
    assert all(0 < row[2] < 1 and 0.5 < row[3] <= 1 + 1e-9 for row in errors)
    # scale tracks at init and at the smoke's track_steps [3, 6], for both FP8 arms and both formats
    tracks = tables["scale-tracks"]["rows"]
    assert {(row[0], row[1], row[3]) for row in tracks} == {
        (ARMS[a].label, f, step) for a in ("fp8_unit", "fp8_regular") for f in ("e4m3", "e5m2") for step in (0, 3, 6)
    }
    assert {a for a, r in results.arms.items() if r.scale_tracks} == {"fp8_unit", "fp8_regular"}
    assert "stochastic rounding, saturating, LM head in FP32" in claims["fp8-unit-matches-fp32-unit"]["statement"]
    assert "second moment in FP32" in claims["fp16-unit-matches-fp32-unit"]["statement"]
    assert results.sweep is not None and "lr-sweep" in tables  # the shipped sweep, stored with the run
    report = (run.run_dir / "report.md").read_text()
    assert (
        "the paper's table beside ours" in report and "| paper (attention pre-norm, WikiText-103) | 1.661 |" in report
    )


TINY = dict(
    arms=["fp32_regular"],
    seeds=[0, 1],
    model=ModelConfig(d_model=8, depth=1, heads=2, seq_len=8),
    steps=2,
    batch_size=2,
    warmup_steps=1,
    eval_every=1,
    checkpoint_every=1,
    eval_batch_size=4,
    valid_windows=4,
    test_windows=4,
    analysis_batch_size=2,
    track_arms=["fp32_regular"],
    track_steps=[1, 2],
)


@pytest.mark.slow  # ~29 s (2026-11-28); resuming is tested in tests/core/test_runner.py in make test
def test_a_finished_arm_resumes_from_its_checkpoints_without_training_again(tmp_path):
    """The reuse the runner's resume relies on, where the paper keeps it (train_arm's checkpoints and its scale
    tracks beside them), on a tiny config and the cheapest arm to compile (FP32; the command-line test below resumes
    an FP8 arm): a second call with resume finds the last step done, trains nothing, and returns the same figures
    and the tracks it had."""
    from core.data.shakespeare import load_shakespeare
    from papers.unit_scaling.train import train_arm

    c = Config(**TINY)
    corpus = load_shakespeare()
    ckpt = tmp_path / "fp32_regular"
    first = train_arm(c, corpus, ARMS["fp32_regular"], 0.01, ckpt, False, True)
    assert first.resumed_from == 0 and sorted(first.scale_tracks) == [0, 1, 2]
    assert (ckpt / "scale_tracks.json").is_file()
    again = train_arm(c, corpus, ARMS["fp32_regular"], 0.01, ckpt, True, True)
    assert again.resumed_from == 2  # the checkpoint of the last step: nothing left to train
    assert again.test_bpc == first.test_bpc and again.valid_curve == first.valid_curve
    assert again.scale_tracks == first.scale_tracks and again.grad_underflow == first.grad_underflow


@pytest.mark.slow  # ~60 s; the fast test above checks the reuse in process
def test_a_finished_arm_is_not_trained_again(cli, tmp_path):
    args = [
        "paper=unit_scaling",
        "scale=smoke",
        "logger=none",
        "unit_scaling.arms=[fp8_regular]",
        f"output_root={tmp_path}",
    ]

    def stored():
        run_dir = tmp_path / "unit_scaling" / "latest"
        arm = json.loads((run_dir / "results.json").read_text())["results"]["arms"]["fp8_regular"]
        metrics = json.loads((run_dir / "claims.json").read_text())["metrics"]
        return run_dir.resolve(), arm, metrics

    first = cli(args, toy=False)
    assert first.returncode == 0, first.stderr[-3000:]
    first_dir, arm, metrics = stored()
    assert arm["resumed_from"] == 0 and metrics["resumed_from/fp8_regular"] == 0
    again = cli(args, toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    again_dir, resumed, resumed_metrics = stored()
    assert again_dir != first_dir  # a second run, with its own record
    assert resumed["resumed_from"] == 6  # the checkpoint of the last step: nothing left to train
    assert resumed_metrics["resumed_from/fp8_regular"] == 6
    assert resumed["test_bpc"] == arm["test_bpc"] and all(math.isfinite(x) for x in arm["test_bpc"])
    assert resumed["scale_tracks"] == arm["scale_tracks"]
    assert resumed_metrics["test_bpc/fp8_regular"] == metrics["test_bpc/fp8_regular"]

"""The u-muP reproduction: its config checks, the optimum and drift estimates against known curves, a group's
resumability, and the smoke run end to end."""

import json
import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from core.config import ConfigError, validate_section
from core.data.shakespeare import load_shakespeare
from core.report import Interval
from papers.umup import Config
from papers.umup.report import drift
from papers.umup.train import Group, GroupResult, optimum, train_group


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


def test_optimum_recovers_a_parabolas_vertex_and_flags_the_edge():
    x = np.arange(-8.0, 0.0)
    o = optimum(x, (x + 4.3) ** 2 + 2.0)
    assert o.log2_lr == pytest.approx(-4.3) and o.grid_log2_lr == -4.0 and not o.at_edge
    edge = optimum(x, -x)  # still falling at the largest rate
    assert edge.at_edge and edge.grid_log2_lr == -1.0
    # a diverged point (inf) next to the best one keeps the grid point, unrefined
    y = (x + 4.0) ** 2
    y[5] = math.inf
    assert optimum(x, y).log2_lr == -4.0
    assert optimum(x, np.full_like(x, math.nan)).at_edge


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
    d, optima = drift(results, [0, 1, 2])
    assert isinstance(d, Interval)
    # the seed-mean curve of parabolas is a parabola centred on the mean centre
    assert d.estimate == pytest.approx(np.mean([-6.0, -6.3, -5.8]) - np.mean([-3.0, -3.2, -2.9]))
    assert d.high < -1 and d.low <= d.estimate <= d.high
    assert optima[16].log2_lr == pytest.approx(np.mean([-3.0, -3.2, -2.9]))
    edge = {16: _result(16, {0: -3.0}), 128: _result(128, {0: 2.0})}
    assert drift(edge, [0])[0] == "not bracketed"


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


def test_a_group_trains_every_run_and_is_reused_when_resumed(tmp_path):
    corpus = load_shakespeare()
    group = Group("umup", 16, (2.0**-3, 2.0**-1), (0, 1))
    first = train_group(TINY, corpus, group, tmp_path, resume=False)
    assert first.lr == [2.0**-3, 2.0**-3, 2.0**-1, 2.0**-1] and first.seed == [0, 1, 0, 1]
    assert all(math.isfinite(v) for v in first.valid_loss)
    assert len(set(first.valid_loss)) == 4  # every run is its own model
    kept = tmp_path / f"{group.name}.json"
    assert json.loads(kept.read_text())["valid_loss"] == first.valid_loss
    # a resumed run reads the kept result; without it (killed after the last checkpoint, before the result was
    # written) the checkpoint gives the same numbers
    assert train_group(TINY, corpus, group, tmp_path, resume=True).valid_loss == first.valid_loss
    kept.unlink()
    assert train_group(TINY, corpus, group, tmp_path, resume=True).valid_loss == first.valid_loss


def test_mup_group_at_the_base_width_equals_sp(tmp_path):
    corpus = load_shakespeare()
    sp = train_group(TINY, corpus, Group("sp", 8, (2.0**-5,), (0,)), None, resume=False)
    mup = train_group(TINY, corpus, Group("mup", 8, (2.0**-5,), (0,)), None, resume=False)
    assert sp.valid_loss == mup.valid_loss


def test_smoke_run_writes_every_claim_table_and_figure(cli, tmp_path):
    r = cli(["paper=umup", "scale=smoke", "logger=none", f"output_root={tmp_path}"], toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "umup" / "latest"
    results = json.loads((run / "results.json").read_text())
    assert [c["id"] for c in results["claims"]] == [
        "sp-lr-drifts",
        "umup-lr-transfers",
        "umup-defaults-near-optimal",
        "umup-fp8-close",
        "sp-fp8-worse",
    ]
    tables = {t["name"]: t for t in results["tables"]}
    assert set(tables) == {"optimal_lr", "lr_drift", "umup_mults", "fp8"}
    assert len(tables["optimal_lr"]["rows"]) == 3 * 2  # parametrizations x widths
    assert len(tables["umup_mults"]["rows"]) == 2  # the smoke's two hyperparameters, one value each
    for name in ("lr_sweeps", "optimum_vs_width", "umup_mults"):
        assert (run / f"{name}.png").stat().st_size > 0
    claims = {c["id"]: c for c in results["claims"]}
    metrics = results["metrics"]
    # the FP8 claim's figure is the mean relative gap its table lists, and its verdict the declared rule's
    assert claims["umup-fp8-close"]["ours"] == pytest.approx(metrics["fp8_gap/umup"])
    assert claims["umup-fp8-close"]["holds"] == (metrics["fp8_gap/umup"] <= 0.01)
    assert claims["umup-defaults-near-optimal"]["holds"] == (metrics["umup_mults/best_gain"] <= 0.01)

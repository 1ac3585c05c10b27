"""The BESS reproduction end to end at the smoke scale (two simulated devices): every claim, table and figure, BESS
equal to the single-device computation, checkpoints written per graph and model; config errors name
the key."""

import json

import pytest

from core.config import ConfigError, validate_section
from papers.bess import Config


def test_smoke_run_reports_every_claim(cli, tmp_path):
    args = ["paper=bess", "scale=smoke", "logger=none", f"output_root={tmp_path}"]
    r = cli(args, toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads((tmp_path / "bess" / "latest" / "results.json").read_text())
    claims = {c["id"]: c for c in results["claims"]}
    assert list(claims) == [
        "beats-random-floor",
        "mrr-nations-distmult",
        "mrr-nations-rotate",
        "ensemble-nations",
        "bess-equals-single-device",
        "table-memory-1-over-n",
        "bess-moves-less",
    ]
    for always in ("bess-equals-single-device", "table-memory-1-over-n", "bess-moves-less"):
        assert claims[always]["holds"], claims[always]
    assert {t["name"] for t in results["tables"]} == {"link_prediction", "scaling"}
    for fig in ("mrr.png", "scaling.png"):
        assert (tmp_path / "bess" / "latest" / fig).is_file()
    # resumption is checked at the training level (test_train: a killed run resumes to the uninterrupted result)
    assert sorted(p.name for p in (tmp_path / "bess" / "checkpoints").glob("*/nations/*")) == ["distmult", "rotate"]


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"bess\.models"):
        validate_section({"models": ["distmult", "boxe"]}, Config, "bess")
    with pytest.raises(ConfigError, match=r"bess\.datasets"):
        validate_section({"datasets": ["fb15k"]}, Config, "bess")
    with pytest.raises(ConfigError, match=r"bess\.train\.batch=100 must split evenly"):
        validate_section({"train": {"batch": 100}}, Config, "bess")
    with pytest.raises(ConfigError, match=r"bess\.hyper\.complex\.dim=7"):
        validate_section({"hyper": {"complex": {"dim": 7}}}, Config, "bess")
    with pytest.raises(ConfigError, match=r"bess\.scaling\.devices"):
        validate_section({"scaling": {"devices": [3]}}, Config, "bess")


def test_a_graph_that_cannot_be_balanced_stops_the_run_before_training(cli, tmp_path):
    # Nations' 14 entities on 8 shards leave (head shard, tail shard) blocks without a training triple
    args = ["paper=bess", "scale=smoke", "logger=none", f"output_root={tmp_path}", "bess.devices=8"]
    r = cli(args, toy=False)
    assert r.returncode != 0
    assert "bess.devices=8 on nations" in r.stderr and "blocks have no training triple" in r.stderr
    assert not (tmp_path / "bess" / "checkpoints").exists()

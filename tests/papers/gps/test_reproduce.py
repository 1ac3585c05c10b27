"""The GPS++ reproduction end to end at the smoke scale: every claim, table and figure; featurisation cached and
training resumed (nothing retrained) by a second run; config errors name the key."""

import json
from types import SimpleNamespace

import pytest

from core.config import ConfigError, validate_section
from papers import gps
from papers.gps import Config


def test_smoke_run_reports_every_claim_and_reuses_its_work(cli, tmp_path):
    args = ["paper=gps", "scale=smoke", "logger=none", f"output_root={tmp_path}"]
    r = cli(args, toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads((tmp_path / "gps" / "latest" / "results.json").read_text())
    claims = {c["id"]: c for c in results["claims"]}
    declared = json.loads((tmp_path / "gps" / "latest" / "claims.json").read_text())["declared"]
    assert [c["id"] for c in declared] == list(claims)  # declared before the run, kept by the report
    assert list(claims) == ["mpnn-keeps-accuracy", "3d-costs-more", "parameters-44m", "packing-efficiency"]
    assert claims["parameters-44m"]["holds"]
    assert {t["name"] for t in results["tables"]} == {"ablation", "paper_table", "parameters"}
    assert (tmp_path / "gps" / "latest" / "validation_curves.png").is_file()
    caches = sorted((tmp_path / "gps" / "features").glob("qm9-*.npz"))
    assert len(caches) == 2  # the training and the validation molecules
    stamps = [c.stat().st_mtime_ns for c in caches]
    again = cli(args, toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [c.stat().st_mtime_ns for c in caches] == stamps  # featurisation read back, not recomputed
    second = json.loads((tmp_path / "gps" / "latest" / "results.json").read_text())
    assert second["metrics"]["full/valid_mae_mev"] == results["metrics"]["full/valid_mae_mev"]  # resumed: same


def test_declared_claims_follow_the_arms():
    ids = [c.id for c in gps.claims(SimpleNamespace(gps=Config(arms=["full", "no_3d"])))]
    assert ids == ["parameters-44m", "packing-efficiency"]  # the ablation claims need the arms they compare
    ids = [c.id for c in gps.claims(SimpleNamespace(gps=Config(arms=["mpnn_only", "full"])))]
    assert ids == ["mpnn-keeps-accuracy", "parameters-44m", "packing-efficiency"]


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"gps\.arms"):
        validate_section({"arms": ["full", "transformer_only"]}, Config, "gps")
    with pytest.raises(ConfigError, match=r"gps\.model\.preset"):
        validate_section({"model": {"preset": "gps++_1b"}}, Config, "gps")
    with pytest.raises(ConfigError, match=r"exceeds QM9's 130,831 molecules"):
        validate_section({"data": {"train": 130_000, "valid": 2000}}, Config, "gps")
    with pytest.raises(ConfigError, match=r"gps\.limits\.nodes"):
        validate_section({"limits": {"nodes": 4}}, Config, "gps")


@pytest.mark.slow  # ~2 min: the reproduction three times
def test_a_run_over_two_processes_equals_the_single_process_run(cli, tmp_path):
    """Two processes of two simulated devices each join one runtime; the packs of every batch are sharded over the
    4-device mesh that spans them, as in one process with 4 devices: the same validation MAE, up to the order in
    which the cross-process all-reduce sums the gradients."""
    import os
    import sys

    from tests.conftest import REPO_ROOT
    from tests.core.test_distributed import run_workers

    common = ["paper=gps", "scale=smoke", "logger=none", "gps.train.packs_per_batch=4", "gps.arms=[full]"]
    one = cli(
        [*common, f"output_root={tmp_path / 'one'}"],
        toy=False,
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    assert one.returncode == 0, one.stderr[-3000:]
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "reproduce.py"), *common, f"output_root={tmp_path / 'two'}"]
    run_dir = "hydra.run.dir=" + str(tmp_path / "two" / "run_${oc.env:JAX_PROCESS_ID}")
    for code, _, err in run_workers(2, tmp_path, 600, [*cmd, run_dir]):
        assert code == 0, err[-3000:]
    expected = json.loads((tmp_path / "one" / "gps" / "latest" / "results.json").read_text())["metrics"]
    got = json.loads((tmp_path / "two" / "run_0" / "results.json").read_text())["metrics"]
    assert got["full/valid_mae_mev"] == pytest.approx(expected["full/valid_mae_mev"], rel=1e-5)
    assert os.path.exists(tmp_path / "two" / "gps" / "checkpoints")  # process 0 checkpoints

"""End-to-end tests of the command line and the run record, with the toy paper of tests/fixtures."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core import launch
from core.config import ConfigError
from core.launch import load_config, parse_command_line
from core.runner import RunContext
from tests.conftest import FIXTURE_CONFIGS, REPO_ROOT

# every paper config, and the toy paper of the test fixtures
ALL_PAPERS = sorted([*(p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml")), "toy"])


def only_run_dir(root: Path, paper: str = "toy") -> Path:
    runs = [p for p in (root / paper).iterdir() if p.is_dir() and p.name not in ("checkpoints",) and not p.is_symlink()]
    assert len(runs) == 1, runs
    return runs[0]


def test_run_writes_the_record_and_points_latest_at_it(cli, tmp_path):
    r = cli(["paper=toy", "scale=smoke", "logger=none", f"output_root={tmp_path}"])
    assert r.returncode == 0, r.stderr
    run_dir = only_run_dir(tmp_path)
    latest = tmp_path / "toy" / "latest"
    assert latest.is_symlink() and latest.resolve() == run_dir.resolve()
    assert not os.path.isabs(os.readlink(latest))  # relative: outputs/ can be moved or copied
    files = {p.name for p in run_dir.iterdir()}
    assert {"report.md", "results.json", "claims.json", "running_estimate.png", "reproduce.log"} <= files
    assert not (run_dir / "wandb").exists()  # logger=none leaves no wandb directory
    assert (run_dir / "running_estimate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    record = json.loads((run_dir / "results.json").read_text())  # what `run` computed, and the code that did
    assert record["results"]["hits"]["__ndarray__"]["shape"] == [3] and len(record["compute_fingerprint"]) == 12
    assert record["config"]["toy"] == {"samples_per_chunk": 20000, "chunks": 3}  # scale=smoke specialisation
    assert record["scale"] == "smoke" and record["seed"] == 0 and record["wall_seconds"] > 0
    assert {"python", "jax", "numpy", "hydra-core"} <= set(record["versions"])
    assert record["reused"] == [] and not (run_dir / "unfinished.json").exists()  # a fresh run reused nothing
    results = json.loads((run_dir / "claims.json").read_text())  # what decide and render made of it
    assert [c["id"] for c in results["claims"]] == ["pi-estimate", "pi-exact"]
    assert [c["holds"] for c in results["claims"]] == [True, False]
    assert [c["verdict"] for c in results["claims"]] == ["holds", "fails"]
    assert results["verdicts"] == {"holds": 1, "fails": 1, "undecided": 0, "not measured": 0, "unverified": 0}
    assert len(results["decision"]["fingerprint"]) == 12
    for c in results["claims"]:
        assert {"id", "statement", "paper", "ours", "tolerance", "decision", "unit", "verdict", "holds"} <= set(c)
    assert results["metrics"]["samples"] == 60000 and results["facts"][0]["value"] == 60000
    assert results["estimates"]["pi"] == results["claims"][0]["ours"]

    report = (run_dir / "report.md").read_text()
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Claims"
    assert "![Running estimate of pi" in report and "| fails |" in report
    # the claim that fails is reported, and the run still succeeds; the terminal gets a summary
    assert "1 hold, 1 fail, 0 undecided of 2 claims" in r.stdout


def test_overrides_reach_the_paper_and_beat_the_scale_preset(cli, tmp_path):
    r = cli(
        [
            "paper=toy",
            "scale=smoke",
            "toy.chunks=2",
            "toy.samples_per_chunk=500",
            "seed=7",
            "logger=none",
            f"output_root={tmp_path}",
        ]
    )
    assert r.returncode == 0, r.stderr
    results = json.loads((only_run_dir(tmp_path) / "claims.json").read_text())
    assert results["metrics"]["samples"] == 1000
    assert json.loads((only_run_dir(tmp_path) / "results.json").read_text())["config"]["seed"] == 7
    assert len(results["tables"][0]["rows"]) == 2


def test_default_scale_uses_the_paper_yaml(cli, tmp_path):
    r = cli(["paper=toy", "logger=none", "toy.samples_per_chunk=100", f"output_root={tmp_path}"])
    assert r.returncode == 0, r.stderr
    results = json.loads((only_run_dir(tmp_path) / "results.json").read_text())
    assert results["scale"] == "default" and results["config"]["toy"]["chunks"] == 5


@pytest.mark.parametrize(
    ("args", "message"),
    # A process each, ~1.5 s (2026-11-29). The cases marked slow fail in the config's validation, whose messages make
    # test checks in process: test_every_entry_refuses_a_bad_config_with_the_same_message_and_exit_2 (launch.main on
    # a run and a sweep, exit 2) and tests/core/test_config.py::test_bad_configs_name_the_key_and_what_is_allowed;
    # the rest stay (fooo=1: that validation from the command line; device=mk2,mk9: one bad job of a sweep)
    [
        ([], "no paper chosen: pass paper=<name>"),
        (["paper=nope"], f"unknown paper 'nope': choose one of {', '.join(ALL_PAPERS)}"),
        pytest.param(
            ["paper=toy", "toy.foo=1"],
            "unknown config key 'toy.foo': allowed keys under 'toy' are samples_per_chunk, chunks",
            marks=pytest.mark.slow,
        ),
        (
            ["paper=toy", "fooo=1"],
            "unknown config key 'fooo': allowed keys at the top level are seed, output_root",
        ),
        pytest.param(
            ["paper=toy", "toy.chunks=abc"],
            "invalid value for 'toy.chunks': Value 'abc' of type 'str'",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["paper=toy", "toy.chunks=0"],
            "toy.chunks=0 is out of range: allowed values are >= 1 and <= 10000",
            marks=pytest.mark.slow,
        ),
        (
            ["paper=toy", "+toy.extra=1"],
            "unknown config key 'toy.extra': allowed keys here are samples_per_chunk, chunks",
        ),
        (["paper=toy", "scale=huge"], "unknown scale 'huge': choose one of default, full, smoke"),
        pytest.param(
            ["paper=toy", "logger.mode=loud"],
            "'logger.mode': Invalid value 'loud', expected one of [offline, online",
            marks=pytest.mark.slow,
        ),
        pytest.param(["paper=toy", "seed=-1"], "seed=-1 is out of range", marks=pytest.mark.slow),
        (["paper=toy", "+seed=3"], "config key 'seed' already exists: set it without the '+' (seed=3)"),
        (["paper=toy", "toy=3"], "toy=3 is not allowed: it holds the keys samples_per_chunk, chunks"),
        (
            ["paper=toy", "hydra.launcher.partition=cpu"],
            "unknown config key 'hydra.launcher.partition': allowed keys under 'hydra.launcher' are _target_",
        ),
        (["paper=toy", "toy.chunks=["], "cannot parse the override 'toy.chunks=['"),
        (
            ["-m", "paper=toy", "device=mk2,mk9"],
            "unknown device 'mk9': choose one of bow, mk1, mk2",
        ),
        pytest.param(["-m", "paper=toy", "toy.chunks=2,0"], "toy.chunks=0 is out of range", marks=pytest.mark.slow),
    ],
)
def test_bad_invocations_fail_before_any_work_with_a_clear_message(cli, tmp_path, args, message):
    r = cli([*args, "logger=none", f"output_root={tmp_path}"])
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "toy").exists()  # nothing ran, nothing was written


def test_paper_list_comes_from_the_config_directory(cli, tmp_path):
    r = cli(["logger=none"], toy=False)
    assert r.returncode == 2
    shipped = sorted(p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml"))
    listed = r.stderr.strip().split("papers: ")[-1]
    assert listed == (", ".join(shipped) if shipped else "(none yet)")


def test_multirun_sweeps_a_setting(cli, tmp_path):
    r = cli(["-m", "paper=toy", "scale=smoke", "seed=3,4", "logger=none", f"output_root={tmp_path}"])
    assert r.returncode == 0, r.stderr
    jobs = sorted((tmp_path / "multirun").glob("*/*_toy/results.json"))
    assert len(jobs) == 2
    seeds = [json.loads(p.read_text())["config"]["seed"] for p in jobs]
    assert seeds == [3, 4]
    assert (tmp_path / "toy" / "latest").resolve() == jobs[-1].parent.resolve()


@pytest.mark.slow  # ~9 s (2026-11-29): tests/core/test_interrupt.py::
# test_ctrl_c_says_what_was_kept_and_its_command_resumes_the_run checks the offline run in the run directory
def test_wandb_offline_run_lands_in_the_run_directory(cli, tmp_path):
    r = cli(["paper=toy", "scale=smoke", "logger=wandb", f"output_root={tmp_path}"])
    assert r.returncode == 0, r.stderr
    offline = list((only_run_dir(tmp_path) / "wandb").glob("offline-run-*"))
    assert len(offline) == 1
    assert list(offline[0].glob("*.wandb"))  # the run's records, for `wandb sync`


def test_a_crashed_run_resumes_from_its_checkpoint(cli, tmp_path):
    common = ["paper=toy", "toy.chunks=4", "toy.samples_per_chunk=2000", "logger=none"]
    crashed = cli([*common, f"output_root={tmp_path / 'a'}"], env={"TOY_CRASH_AFTER_CHUNK": "2"})
    assert crashed.returncode != 0 and "simulated crash after chunk 2" in crashed.stderr
    assert not (tmp_path / "a" / "toy" / "latest").exists()  # a failed run is never 'latest'
    marked = json.loads((only_run_dir(tmp_path / "a") / "unfinished.json").read_text())  # but marked unfinished
    assert (marked["stopped"], marked["error"]) == ("failed", "RuntimeError: simulated crash after chunk 2")
    again = [*common, f"output_root={tmp_path / 'a'}", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"]
    assert marked["checkpoints"] == {".": 2} and marked["resume"] == shlex.join(
        ["python", "scripts/reproduce.py", *again]
    )
    where = marked["where"]  # the line that raised
    assert where.startswith("tests/fixtures/toy_paper/run.py:") and where.endswith(" in chunk_of")
    resumed = cli([*common, f"output_root={tmp_path / 'a'}"])
    assert resumed.returncode == 0, resumed.stderr
    fresh = cli([*common, f"output_root={tmp_path / 'b'}"])
    assert fresh.returncode == 0, fresh.stderr

    def result(root):
        return json.loads((root / "toy" / "latest" / "claims.json").read_text())["metrics"]

    assert result(tmp_path / "a")["resumed_from_chunk"] == 2
    assert result(tmp_path / "b")["resumed_from_chunk"] == 0
    assert result(tmp_path / "a")["pi_estimate"] == result(tmp_path / "b")["pi_estimate"]
    reused = {r: json.loads((tmp_path / r / "toy" / "latest" / "results.json").read_text())["reused"] for r in "ab"}
    assert reused == {"a": [{"kind": "checkpoint", "what": "chunks", "from_step": 2, "of": 4}], "b": []}

    restart = cli([*common, "resume=false", f"output_root={tmp_path / 'a'}"])
    assert restart.returncode == 0, restart.stderr
    assert result(tmp_path / "a")["resumed_from_chunk"] == 0


def test_the_command_line_is_split_into_hydra_flags_and_overrides():
    line = parse_command_line(["paper=toy", "-m", "seed=3,4"])
    assert (line.overrides, line.multirun, line.runs, line.shows) == (["paper=toy", "seed=3,4"], True, True, False)
    assert line.hydra_argv == ("paper=toy", "seed=3,4", "--multirun")
    shown = parse_command_line(["--cfg", "job", "paper=toy", "seed=3"])  # an override after a flag, too
    assert (shown.overrides, shown.runs, shown.shows) == (["paper=toy", "seed=3"], False, True)
    assert shown.hydra_argv == ("paper=toy", "seed=3", "--cfg", "job")  # the order Hydra's parser accepts
    assert parse_command_line(["paper=toy", "-i", "defaults"]).hydra_argv == ("paper=toy", "--info", "defaults")
    assert parse_command_line(["-cd", "/elsewhere", "paper=toy"]).overrides == ["paper=toy"]
    for flags in (["--help"], ["--version"], ["-cd", "/elsewhere"], ["--bogus"]):
        line = parse_command_line(["paper=toy", *flags])
        assert not line.runs and not line.shows, flags
    assert parse_command_line(["paper=toy", "--bogus"]).hydra_argv == ("paper=toy", "--bogus")  # Hydra reports it


@pytest.mark.parametrize(
    "bad, message",
    [
        ("toy.chunks=0", "toy.chunks=0 is out of range"),
        ("toy.chunsk=2", "unknown config key 'toy.chunsk': allowed keys under 'toy' are"),
    ],
)
def test_every_entry_refuses_a_bad_config_with_the_same_message_and_exit_2(monkeypatch, capsys, bad, message):
    """A plain run, a sweep, `--cfg job` (before or after the overrides) and load_config: one validation."""
    monkeypatch.setattr(launch, "run", lambda cfg, **kw: pytest.fail("a bad config must not run"))
    monkeypatch.setattr(sys, "argv", ["reproduce.py"])
    args = ["paper=toy", "scale=smoke", "logger=none", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"]
    entries = {
        "run": [*args, bad],
        "sweep": ["-m", *args, "seed=1,2", bad],
        "cfg job after": [*args, bad, "--cfg", "job"],
        "cfg job before": ["--cfg", "job", *args, bad],
    }
    errors = {}
    for name, argv in entries.items():
        assert launch.main(argv) == 2, name
        errors[name] = capsys.readouterr().err.strip()
    with pytest.raises(ConfigError) as raised:
        load_config([*args, bad])
    errors["load_config"] = f"error: {raised.value}"
    assert len(set(errors.values())) == 1 and message in errors["run"], errors


def test_cfg_job_prints_a_valid_config_with_overrides_on_either_side(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["reproduce.py"])
    args = ["paper=toy", "scale=smoke", "logger=none", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"]
    for argv in ([*args, "--cfg", "job", "toy.chunks=5"], ["--cfg", "job", *args, "toy.chunks=5"]):
        assert launch.main(argv) == 0
        printed = capsys.readouterr().out
        assert "chunks: 5" in printed and "hydra:" not in printed, printed


def test_a_paper_runs_outside_the_runner_with_a_detached_context(tmp_path):
    from tests.fixtures.toy_paper import PAPER

    cfg = load_config(["paper=toy", "scale=smoke", "toy.chunks=2", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"])
    results = PAPER.compute(cfg, RunContext.detached())
    assert results.hits.size == 2 and not list(tmp_path.iterdir())
    kept = RunContext.detached(tmp_path)
    assert kept.checkpoint_path("a", "b") == tmp_path / "a" / "b"
    again = PAPER.compute(cfg, kept)
    assert (again.hits == results.hits).all() and list(tmp_path.iterdir())  # checkpoints kept there
    resumed = PAPER.compute(cfg, RunContext.detached(tmp_path, resume=True))
    assert resumed.resumed_from_chunk == 2 and (resumed.hits == results.hits).all()
    decided = PAPER.decide_results(cfg, results)  # and decided and rendered in the notebook too
    report = PAPER.render_report(cfg, results, decided)
    assert [c.verdict.value for c in decided.claims] == ["holds", "fails"] and report.metrics["samples"] == 40000
    assert RunContext.detached().checkpoint_path("a") is None
    with pytest.raises(ValueError, match="needs a checkpoint_dir"):
        RunContext.detached(resume=True)


@pytest.mark.parametrize("sweep", [False, True])
def test_a_plain_run_is_validated_once(monkeypatch, tmp_path, sweep):
    seen = []
    monkeypatch.setattr(launch, "run", lambda cfg, **kw: seen.append(kw["validated"]))
    monkeypatch.setattr(sys, "argv", ["reproduce.py"])  # hydra.main reads sys.argv, which main sets
    args = ["paper=toy", "scale=smoke", "logger=none", f"output_root={tmp_path}"]
    quiet = ["hydra/job_logging=none", "hydra/hydra_logging=none"]  # leave this process's logging alone
    argv = [*args, *quiet, f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"]
    assert launch.main(["-m", *argv] if sweep else argv) == 0
    if sweep:  # a sweep's jobs validate the config Hydra composed for them
        assert seen == [None]
    else:  # the job gets the preflight's validated config
        assert len(seen) == 1 and seen[0].config.toy.chunks == 3 and seen[0].typed.scale.name == "smoke"


def test_load_config_takes_one_run():
    with pytest.raises(ConfigError, match="not a sweep"):
        load_config(["paper=toy", "seed=1,2", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"])


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )


def test_make_reproduce_checks_the_paper_before_installing_anything():
    r = make("reproduce")
    assert r.returncode != 0 and "error: no paper chosen: make reproduce PAPER=<name>; papers:" in r.stderr
    r = make("reproduce", "PAPER=nope")
    assert r.returncode != 0 and "error: unknown paper 'nope': choose one of" in r.stderr
    assert "pip" not in r.stdout + r.stderr


def test_make_help_lists_the_targets():
    r = make("help")
    assert r.returncode == 0
    for target in ("install", "test", "test-all", "reproduce", "results", "bench", "lint"):
        assert f"  {target} " in r.stdout


def test_claims_are_declared_before_the_run_and_a_report_cannot_change_them(cli, tmp_path):
    r = cli(["paper=toy", "scale=smoke", "logger=none", f"output_root={tmp_path / 'a'}"])
    assert r.returncode == 0, r.stderr
    run_dir = only_run_dir(tmp_path / "a")
    declared = json.loads((run_dir / "claims.json").read_text())["declared"]
    assert [c["id"] for c in declared] == ["pi-estimate", "pi-exact"]
    assert declared[1]["tolerance"] == "|ours - paper| <= 1.000e-09" and "ours" not in declared[1]
    r = cli(["paper=toy", "scale=smoke", "logger=none", f"output_root={tmp_path / 'b'}"], env={"TOY_ADD_CLAIM": "1"})
    assert r.returncode != 0
    assert "its claims differ from those declared before the run" in r.stderr and "added ['pi-roughly']" in r.stderr
    assert not (tmp_path / "b" / "toy" / "latest").exists()
    refused = only_run_dir(tmp_path / "b")  # the computation was kept: re-deciding it without the extra claim works
    assert (refused / "results.json").is_file() and "decision" not in json.loads((refused / "claims.json").read_text())

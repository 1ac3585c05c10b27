"""scripts/results.py (`make results`): the README's table of papers from a fake outputs tree, the run each row is
read from, and the errors. The expected rows are written out by hand here, not produced by the script's helpers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.provenance import paper_fingerprint
from tests.conftest import REPO_ROOT


def _results_script():
    spec = importlib.util.spec_from_file_location("results_script", REPO_ROOT / "scripts" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = _results_script()


def claim(cid, statement, paper, ours, verdict):
    holds = {"holds": True, "fails": False}.get(verdict)
    return {"id": cid, "statement": statement, "paper": paper, "ours": ours, "verdict": verdict, "holds": holds}


PRNG_CLAIMS = [
    claim("a", "AOX passes every bit", 0, 0, "holds"),
    claim("b", "AOX is cheaper than an adder", 0.553, 0.2375, "holds"),
    claim("c", "plus fails | its low bit", "fails", False, "fails"),
]
INTERVAL = {"estimate": 0.0234, "low": -0.0101, "high": 0.0402, "confidence": 0.95, "method": "paired bootstrap"}
UNIT_CLAIMS = [
    claim("gain", "an ensemble beats its best member", None, INTERVAL, "undecided"),
    claim("gap", "FP8 within 3% of FP32", -0.0095, 0.0801, "fails"),
    claim("skipped", "an arm left out", 1.0, None, "not measured"),
    {**claim("cited", "matches a compiled figure", 0.7, 0.71, "unverified"), "rule_verdict": "holds"},
]
# a record from before verdicts and fingerprints were recorded: holds only
OLD_CLAIMS = [{"id": "a", "holds": True}, {"id": "b", "holds": False}, {"id": "c", "holds": None}]


def write_run(outputs: Path, paper: str, stamp: str, scale: str, claims, wall: float, overrides=(), code=None) -> Path:
    run = outputs / paper / stamp
    (run / ".hydra").mkdir(parents=True)
    record = {
        "paper": paper,
        "claims": claims,
        "scale": scale,
        "started": f"{stamp[:10]}T{stamp[11:].replace('-', ':')}+00:00",
        "wall_seconds": wall,
        "versions": {"git commit": "abc1234"},
    }
    if code is not None:
        record["code_fingerprint"] = code
    (run / "results.json").write_text(json.dumps(record))
    hydra_overrides = [f"paper={paper}", f"scale={scale}", "logger=none", *overrides]
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in hydra_overrides))
    return run


def point_latest(outputs: Path, paper: str, run: Path) -> None:
    link = outputs / paper / "latest"
    if link.is_symlink():
        link.unlink()
    link.symlink_to(run.name)


@pytest.fixture
def outputs(tmp_path):
    out = tmp_path / "outputs"
    write_run(out, "prng", "2026-11-20_10-00-00", "default", PRNG_CLAIMS, 35.2, code=paper_fingerprint("prng"))
    # the newest prng run is a smoke test, and `latest` points at it: the default-scale row must not use it
    smoke = write_run(out, "prng", "2026-11-22_09-00-00", "smoke", [claim("a", "x", 0, 1, "fails")], 7.8)
    point_latest(out, "prng", smoke)
    write_run(out, "unit_scaling", "2026-11-21_08-00-00", "default", UNIT_CLAIMS, 612.0, code="0123456789ab")
    write_run(out, "gps", "2026-11-21_08-00-00", "default", OLD_CLAIMS, 100.0)
    # newer, but a run with a setting changed on the command line: used only when no plain run exists
    changed = [claim("a", "y", 0, 0, "holds")]
    write_run(out, "unit_scaling", "2026-11-23_08-00-00", "default", changed, 60.0, ["unit_scaling.steps=10"])
    (out / "unit_scaling" / "2026-11-24_08-00-00").mkdir()  # a run still going: claims.json, no results.json
    (out / "unit_scaling" / "2026-11-24_08-00-00" / "claims.json").write_text("{}")
    return out


def rows_by_paper(lines):
    return {line.split("](papers/")[1].split("/")[0]: line for line in lines[2:]}


def test_rows_count_the_three_verdicts_and_mark_stale_code(outputs):
    lines, sources = RESULTS.table(["prng", "unit_scaling", "gps", "bess"], "default", outputs)
    assert lines[:2] == [
        "| paper | holds | fails | undecided | time (this 2-core CPU) | commit | code |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = rows_by_paper(lines)
    assert list(rows) == ["prng", "unit_scaling", "gps", "bess"]
    assert rows["prng"] == (
        "| [xoroshiro128aox, the IPU's PRNG (Hanlon & Felix, 2022)](papers/prng/README.md) | 2 | 1 | 0 "
        "| 35 s (default scale, 2026-11-20) | abc1234 | current |"
    )
    # the plain run, not the newer one with an override; undecided and not measured counted apart
    assert rows["unit_scaling"] == (
        "| [Unit Scaling (Blake et al., ICML 2023)](papers/unit_scaling/README.md) | 0 | 1 "
        "| 1 (1 unverified, 1 not measured) "
        f"| 10.2 min (default scale, 2026-11-21) | abc1234 "
        f"| stale: made by code 0123456789ab, this checkout's is {paper_fingerprint('unit_scaling')} |"
    )
    assert rows["gps"].endswith(
        "| 1 | 1 | 0 (1 not measured) | 1.7 min (default scale, 2026-11-21) | abc1234 "
        "| stale: made before results carried a code fingerprint |"
    )
    assert rows["bess"] == (
        "| [BESS (Cattaneo et al., 2022)](papers/bess/README.md) | - | - | - "
        "| no default-scale run: `make reproduce PAPER=bess` | - | - |"
    )
    assert sources == [
        f"prng: {outputs / 'prng' / '2026-11-20_10-00-00' / 'results.json'}",
        f"unit_scaling: {outputs / 'unit_scaling' / '2026-11-21_08-00-00' / 'results.json'}",
        f"gps: {outputs / 'gps' / '2026-11-21_08-00-00' / 'results.json'}",
        f"bess: no finished default-scale run under {outputs / 'bess'}/",
    ]


def test_latest_is_used_for_its_own_scale_and_changed_runs_are_named(outputs):
    lines, _ = RESULTS.table(["prng"], "smoke", outputs)
    assert "| 0 | 1 | 0 | 8 s (smoke scale, 2026-11-22) |" in lines[2]  # `latest`, the smoke run
    # with the plain run gone, the run with an override is reported, and says what was changed
    plain = outputs / "unit_scaling" / "2026-11-21_08-00-00"
    (plain / "results.json").unlink()
    lines, _ = RESULTS.table(["unit_scaling"], "default", outputs)
    assert "| 1 | 0 | 0 | 60 s (default scale, 2026-11-23); overrides: unit_scaling.steps=10 |" in lines[2]


def test_the_table_is_written_between_the_readme_markers(outputs, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{RESULTS.BEGIN}\nold table\n{RESULTS.END}\n\n## Running\n")
    lines, _ = RESULTS.table(["prng"], "default", outputs)
    RESULTS.write_into(readme, lines)
    text = readme.read_text()
    assert text.startswith("# Title\n\n") and text.endswith(f"{RESULTS.END}\n\n## Running\n")
    assert "old table" not in text and lines[2] in text
    with pytest.raises(SystemExit, match="no table markers"):
        RESULTS.write_into(tmp_path / "other.md" if (tmp_path / "other.md").write_text("x") else readme, lines)


def run_script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ""}
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "results.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)


def test_command_line_prints_the_table_and_names_its_sources(outputs):
    r = run_script("--outputs", str(outputs), "--paper", "prng", "--paper", "gps")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| [xoroshiro128aox") and lines[3].startswith("| [GPS++")
    assert "| 2 | 1 | 0 |" in lines[2] and "stale" in lines[3]
    assert f"read prng: {outputs / 'prng' / '2026-11-20_10-00-00' / 'results.json'}" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--paper", "nope"], "unknown paper(s) nope: choose from bess, prng, packing"),
        (["--scale", "huge"], "unknown scale 'huge': choose one of smoke, default, full"),
    ],
)
def test_bad_arguments_are_named(args, message):
    r = run_script(*args)
    assert r.returncode == 2 and message in r.stderr and r.stdout == ""


def test_the_readme_holds_the_generated_table_and_every_paper_has_its_page():
    text = (REPO_ROOT / "README.md").read_text()
    assert text.count(RESULTS.BEGIN) == 1 and text.count(RESULTS.END) == 1
    table = text.split(RESULTS.BEGIN)[1].split(RESULTS.END)[0].strip().splitlines()
    if table:  # a table written by `make readme` starts with the script's header
        assert table[:2] == RESULTS.HEADER
    for paper in RESULTS.configured_papers():
        assert (REPO_ROOT / "papers" / paper / "README.md").is_file(), paper


def test_a_paper_readme_gets_its_last_runs_claims_and_facts(outputs, tmp_path):
    record_dir = outputs / "prng" / "2026-11-20_10-00-00"
    record = json.loads((record_dir / "results.json").read_text())
    record["claims"][0]["original_verdict"] = "ours <= 1: holds on this run"
    record["facts"] = [{"id": "gate-ratio", "kind": "analytic", "paper": 0.553, "value": 0.2375}]
    (record_dir / "results.json").write_text(json.dumps(record))
    lines = RESULTS.paper_section("prng", "default", outputs)
    assert lines[0].startswith("35 s (default scale, 2026-11-20), commit abc1234, code current: 2 hold, 1 fail, ")
    assert "| a | 0 | 0 | - | holds | ours <= 1: holds on this run |" in lines
    assert "| c | fails | no | - | fails | - |" in lines  # a pipe-free row; the statement is not repeated here
    assert "| gate-ratio | analytic | 0.553 | 0.2375 |" in lines
    assert RESULTS.paper_section("bess", "default", outputs)[0].startswith("No default-scale run in outputs/ yet")
    unit = RESULTS.paper_section("unit_scaling", "default", outputs)
    assert "1 undecided, 1 unverified, 1 not measured" in unit[0]
    assert "| cited | 0.7 | 0.71 | - | unverified (rule: holds) | - |" in unit

    readme = tmp_path / "README.md"
    readme.write_text(f"# P\n\n## Last default run\n\n{RESULTS.CLAIMS_BEGIN}\nstale block\n{RESULTS.CLAIMS_END}\n")
    RESULTS.write_into(readme, lines, RESULTS.CLAIMS_BEGIN, RESULTS.CLAIMS_END)
    assert "stale block" not in readme.read_text() and lines[0] in readme.read_text()


def test_every_paper_readme_has_its_last_run_block():
    for paper in RESULTS.configured_papers():
        text = (REPO_ROOT / "papers" / paper / "README.md").read_text()
        assert text.count(RESULTS.CLAIMS_BEGIN) == 1 and text.count(RESULTS.CLAIMS_END) == 1, paper

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

from tests.conftest import REPO_ROOT


def _results_script():
    spec = importlib.util.spec_from_file_location("results_script", REPO_ROOT / "scripts" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = _results_script()


def claim(cid, statement, paper, ours, holds, tolerance="ours <= 1"):
    return {"id": cid, "statement": statement, "paper": paper, "tolerance": tolerance, "ours": ours, "holds": holds}


PRNG_CLAIMS = [
    claim("a", "AOX passes every bit", 0, 0, True),
    claim("b", "AOX is cheaper than an adder", 0.553, 0.2375, True),
    claim("c", "plus fails | its low bit", "fails", False, False),  # a pipe in a statement must not split the cell
]
INTERVAL = {"estimate": 0.0234, "low": 0.0101, "high": 0.0402, "confidence": 0.95, "method": "paired bootstrap"}
UNIT_CLAIMS = [
    claim("gain", "an ensemble beats its best member", None, INTERVAL, True),
    claim("gap", "FP8 within 3% of FP32", -0.0095, 0.0801, False),
    claim("skipped", "an arm left out", 1.0, None, None),
]


def write_run(outputs: Path, paper: str, stamp: str, scale: str, claims, wall: float, overrides=()) -> Path:
    run = outputs / paper / stamp
    (run / ".hydra").mkdir(parents=True)
    record = {
        "paper": paper,
        "claims": claims,
        "scale": scale,
        "started": f"{stamp[:10]}T{stamp[11:].replace('-', ':')}+00:00",
        "wall_seconds": wall,
    }
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
    write_run(out, "prng", "2026-11-20_10-00-00", "default", PRNG_CLAIMS, 35.2)
    # the newest prng run is a smoke test, and `latest` points at it: the default-scale row must not use it
    smoke = write_run(out, "prng", "2026-11-22_09-00-00", "smoke", [claim("a", "x", 0, 1, False)], 7.8)
    point_latest(out, "prng", smoke)
    write_run(out, "unit_scaling", "2026-11-21_08-00-00", "default", UNIT_CLAIMS, 612.0)
    # newer, but a run with a setting changed on the command line: used only when no plain run exists
    changed = [claim("a", "y", 0, 0, True)]
    write_run(out, "unit_scaling", "2026-11-23_08-00-00", "default", changed, 60.0, ["unit_scaling.steps=10"])
    (out / "unit_scaling" / "2026-11-24_08-00-00").mkdir()  # a run still going: claims.json, no results.json
    (out / "unit_scaling" / "2026-11-24_08-00-00" / "claims.json").write_text("{}")
    return out


def rows_by_paper(lines):
    return {line.split(" | ")[2].split("PAPER=")[1].split("`")[0].split(" ")[0]: line for line in lines[2:]}


def test_rows_report_counts_figures_intervals_and_missing_papers(outputs):
    lines, sources = RESULTS.table(["prng", "unit_scaling", "bess"], "default", outputs)
    assert lines[:2] == ["| paper | claim checked | command | time | status |", "|---|---|---|---|---|"]
    rows = rows_by_paper(lines)
    assert list(rows) == ["prng", "unit_scaling", "bess"]

    prng = rows["prng"]
    assert prng.startswith(
        "| xoroshiro128aox, the IPU's PRNG (Hanlon & Felix, 2022) | xoroshiro128+ fails rank and linear complexity"
    )
    assert "| `make reproduce PAPER=prng` | 35 s (default scale, measured 2026-11-20) | " in prng
    assert prng.endswith(
        "| 2 of 3 claims hold: AOX passes every bit: 0 (paper 0) · AOX is cheaper than an adder: 0.2375 (paper 0.553)"
        "; not holding: plus fails \\| its low bit: no |"
    )
    assert prng.count(" | ") == 4  # five cells: the escaped pipe did not add one

    unit = rows["unit_scaling"]
    assert "| 10.2 min (default scale, measured 2026-11-21) |" in unit  # 612 s; the plain run, not the newer one
    assert unit.endswith(
        "| 1 of 3 claims hold: an ensemble beats its best member: 0.0234 [0.0101, 0.0402] (95%)"
        "; not holding: FP8 within 3% of FP32: 0.0801 (paper -0.0095)"
        "; not measured: an arm left out: - (paper 1) |"
    )

    bess = rows["bess"]
    assert bess.startswith("| BESS (Cattaneo et al., 2022) |")
    assert bess.endswith(f"| - | no default-scale run in {outputs / 'bess'}/: run `make reproduce PAPER=bess` |")

    assert sources == [
        f"prng: {outputs / 'prng' / '2026-11-20_10-00-00' / 'results.json'}",
        f"unit_scaling: {outputs / 'unit_scaling' / '2026-11-21_08-00-00' / 'results.json'}",
        f"bess: no finished default-scale run under {outputs / 'bess'}/",
    ]


def test_latest_is_used_for_its_own_scale_and_changed_runs_are_named(outputs):
    lines, _ = RESULTS.table(["prng"], "smoke", outputs)
    # `latest` (the smoke run); 7.8 s shown in whole seconds
    assert '| `make reproduce PAPER=prng ARGS="scale=smoke"` | 8 s (smoke scale, measured 2026-11-22) |' in lines[2]
    assert lines[2].endswith("| 0 of 1 claims hold; not holding: x: 1 (paper 0) |")
    # with the plain run gone, the run with an override is reported, and says what was changed
    plain = outputs / "unit_scaling" / "2026-11-21_08-00-00"
    (plain / "results.json").unlink()
    lines, _ = RESULTS.table(["unit_scaling"], "default", outputs)
    assert "| 60 s (default scale, measured 2026-11-23); overrides: unit_scaling.steps=10 |" in lines[2]
    assert lines[2].endswith("| 1 of 1 claims hold: y: 0 (paper 0) |")


def run_script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ""}
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "results.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)


def test_command_line_prints_the_table_and_names_its_sources(outputs):
    r = run_script("--outputs", str(outputs), "--paper", "prng", "--paper", "gps")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| xoroshiro128aox") and lines[3].startswith("| GPS++")
    assert "2 of 3 claims hold" in lines[2] and "no default-scale run" in lines[3]
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

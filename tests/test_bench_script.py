"""The benchmark script runs and writes its record (no timing is asserted: only ratios are reported)."""

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_bench_quick_numerics_writes_json_and_markdown(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "bench.py"),
            "--section",
            "numerics",
            "--quick",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    (record,) = tmp_path.glob("*.json")
    rows = json.loads(record.read_text())["rows"]
    assert {row["peer"] for row in rows} >= {"ml_dtypes astype round-trip", "gfloat round_ndarray"}
    assert all(row["ours_seconds"] > 0 and row["speedup"] > 0 for row in rows)
    assert len(list(tmp_path.glob("*.md"))) == 1 and "| numerics |" in r.stdout


def test_bench_rejects_unknown_sections():
    r = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--section", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert (
        "unknown section(s) nope: choose from numerics, unit_scaling, prng, ipu_model, packing, sparq, popsparse"
        in r.stderr
    )

"""`python -m ipu_model`: profiles a planned matmul, checks it against numpy and writes the profile files."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ipu_model", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


def test_matmul_profile_files(tmp_path):
    r = _cli("--tiles", "32", "--out", str(tmp_path), "matmul", "96", "80", "72", "--dtype", "float32")
    assert r.returncode == 0, r.stderr
    assert "tile grid" in r.stdout and "matmul/multiply" in r.stdout
    error = float(r.stdout.split("max relative error vs float64 ")[1].split(";")[0])
    assert error < 1e-5  # float32 accumulation of 80 products
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert profile["totals"]["cycles"] > 0 and profile["device"] == "mk2"
    assert (tmp_path / "profile.png").stat().st_size > 1000
    assert (tmp_path / "profile.txt").read_text().startswith("matmul 96x80x72 float32")


def test_bad_sizes_are_rejected():
    r = _cli("matmul", "0", "8", "8")
    assert r.returncode == 2 and "matmul sizes must be positive" in r.stderr

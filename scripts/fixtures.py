#!/usr/bin/env python
"""Remake the stored smoke Results that the tests decide and render (tests/fixtures/results/<paper>/results.json).

    python scripts/fixtures.py                 # every paper (minutes: one smoke run each)
    python scripts/fixtures.py sparq qm1b      # only these

`make fixtures [PAPER=<name>]` runs it. Each paper's smoke run is made in a temporary output root, as the test suite
makes it (tests/papers/conftest.py, SMOKE), and its results.json is copied here: the stored Results with the config
that made them. tests/papers/test_decisions.py decides and renders each one with the current decision code, so a
change to how claims are decided or shown is tested without running any paper; remake a paper's fixture after a
change to what its `run` stores (its Results type), which that test names when the stored Results no longer fit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.papers.conftest import SMOKE  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "results"


def remake(paper: str) -> Path:
    """Make `paper`'s smoke run in a temporary output root and store its results.json as the fixture."""
    spec = SMOKE[paper]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WANDB_MODE": "offline", "TQDM_DISABLE": "1"}
        if spec.bare_path:
            (Path(tmp) / "bin").mkdir()
            env["PATH"] = str(Path(tmp) / "bin")
        args = [f"paper={paper}", "scale=smoke", "logger=none", f"output_root={tmp}", *spec.args]
        cmd = [sys.executable, str(ROOT / "scripts" / "reproduce.py"), *args]
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"error: the {paper} smoke run failed:\n{r.stderr[-3000:]}")
        record = Path(tmp) / paper / "latest" / "results.json"
        data = json.loads(record.read_text())
        data["config"]["output_root"] = "outputs"  # not the temporary directory it ran in
        data["overrides"] = [o for o in data.get("overrides", []) if not str(o).startswith("output_root=")]
        dest = FIXTURES / paper / "results.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        from core.io import json_text

        dest.write_text(json_text(data))
        shutil.rmtree(Path(tmp) / paper, ignore_errors=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("papers", nargs="*", help=f"papers (default: all of {', '.join(SMOKE)})")
    args = parser.parse_args(argv)
    unknown = [p for p in args.papers if p not in SMOKE]
    if unknown:
        parser.error(f"unknown paper(s) {', '.join(unknown)}: choose from {', '.join(SMOKE)}")
    for paper in args.papers or list(SMOKE):
        dest = remake(paper)
        print(f"{paper}: {dest.relative_to(ROOT)} ({dest.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

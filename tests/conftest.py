"""Shared test set-up: no network traffic from wandb, quiet progress bars, and a helper to run the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CONFIGS = REPO_ROOT / "tests" / "fixtures" / "configs"

# Tests never talk to a wandb server: runs that use wandb are forced offline, and nothing is uploaded.
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ.setdefault("TQDM_DISABLE", "1")


def run_cli(
    args: list[str], *, env: dict[str, str] | None = None, toy: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run scripts/reproduce.py in a fresh process (as a user would), with the toy paper on the search path."""
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "reproduce.py"), *args]
    if toy:
        cmd.append(f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]")
    return subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.fixture
def cli():
    return run_cli

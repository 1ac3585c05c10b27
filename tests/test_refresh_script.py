"""scripts/refresh.py (`make refresh`): which papers it plans, the tree it refuses, and a refresh stopped part-way
continued by the same command, without running a finished paper again. The runs themselves are replaced by a
recorder here (a default run takes minutes to most of an hour); the closing note of the issue that made it records a
real refresh killed and continued."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def refresh(monkeypatch):
    spec = importlib.util.spec_from_file_location("refresh_script", REPO_ROOT / "scripts" / "refresh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "modified_files", lambda: [])
    monkeypatch.setattr(module.RESULTS, "drop_pending", lambda paper, references: None)
    return module


def _record(refresh, monkeypatch, stop_at: str | None = None):
    calls = []

    def run_step(argv, child):
        calls.append(argv[1:])
        if stop_at is not None and argv[1:] == ["scripts/reproduce.py", f"paper={stop_at}"]:
            raise KeyboardInterrupt
        return 0

    monkeypatch.setattr(refresh, "run_step", run_step)
    return calls


def test_plans_the_stale_papers_in_the_readme_order(refresh, monkeypatch, tmp_path, capsys):
    stale = {"qm1b": "stale: made by other code", "bess": "no reference run"}
    monkeypatch.setattr(refresh, "why_stale", stale.get)
    calls = _record(refresh, monkeypatch)
    assert refresh.main(["--dry-run", "--state", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert out.index("bess: no reference run") < out.index("qm1b: stale")
    assert calls == [] and not (tmp_path / "s.json").exists()


def test_a_stopped_refresh_continues_where_it_stopped(refresh, monkeypatch, tmp_path, capsys):
    state = tmp_path / "s.json"
    monkeypatch.setattr(refresh, "why_stale", lambda p: None)  # named papers run whatever their state
    calls = _record(refresh, monkeypatch, stop_at="qm1b")
    assert refresh.main(["packing", "qm1b", "prng", "--state", str(state)]) == 130
    kept = json.loads(state.read_text())
    assert kept["papers"] == ["prng", "packing", "qm1b"]  # the README's order
    assert set(kept["done"]) == {"prng", "packing"} and kept["current"] == "qm1b"
    assert ["scripts/record.py", "reference", "packing"] in calls
    assert "run the same command again" in capsys.readouterr().err

    calls = _record(refresh, monkeypatch)
    assert refresh.main(["--state", str(state)]) == 0  # no names: the unfinished refresh is continued
    assert calls[0] == ["scripts/reproduce.py", "paper=qm1b"]
    assert not any("paper=prng" in c or "paper=packing" in c for c in map(" ".join, calls))
    assert json.loads(state.read_text())["finished"] is True


def test_refuses_a_modified_tree_and_unknown_papers(refresh, monkeypatch, tmp_path, capsys):
    calls = _record(refresh, monkeypatch)
    monkeypatch.setattr(refresh, "modified_files", lambda: ["core/train.py"])
    assert refresh.main(["packing", "--state", str(tmp_path / "s.json")]) == 2
    assert "uncommitted changes (core/train.py)" in capsys.readouterr().err
    assert refresh.main(["nonsense", "--state", str(tmp_path / "s.json")]) == 2
    assert "unknown paper(s) nonsense: choose from bess, prng" in capsys.readouterr().err
    assert calls == []


def test_a_failed_run_stops_the_refresh_and_keeps_its_place(refresh, monkeypatch, tmp_path):
    state = tmp_path / "s.json"
    monkeypatch.setattr(refresh, "run_step", lambda argv, child: 1 if "paper=packing" in argv else 0)
    assert refresh.main(["prng", "packing", "qm1b", "--state", str(state)]) == 1
    kept = json.loads(state.read_text())
    assert set(kept["done"]) == {"prng"} and kept["current"] == "packing"

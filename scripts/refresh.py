#!/usr/bin/env python
"""Re-make the evidence: run, one after another, every paper whose reference run is stale or missing (or the papers
named), and make each finished run the paper's reference in results/, with the README's rows written from it.

    python scripts/refresh.py                  # every paper whose reference is stale or missing, in the README's order
    python scripts/refresh.py packing qm1b     # these papers, whatever the state of their references
    python scripts/refresh.py --dry-run        # say what would run, and why, and stop

`make refresh [PAPER="packing qm1b"]` runs it. Each paper is its own process (`scripts/reproduce.py paper=<name>`,
the default scale, nothing overridden: what a reference must be), then `scripts/record.py reference <name>` and
`scripts/results.py --write README.md`. Nothing is committed: the last line says what to commit.

Resumable: the plan and what has finished are kept in outputs/refresh.json (written atomically after each paper).
A refresh stopped by Ctrl-C, SIGTERM or a failed run is continued by running the same command again: the finished
papers are not run again, and the paper that was running resumes from its checkpoints (every run resumes an
identical config made by the same code). A reference may only be made from a committed tree, so a tree with
uncommitted changes to its code (untracked files there too) is refused before anything runs.

Exit status: 0 every paper refreshed, 1 a run or its promotion failed (the message names it; run the command again
to continue), 2 bad arguments or a tree that cannot make references, 130/143 stopped by a signal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.io import atomic_write_text, json_text  # noqa: E402
from core.provenance import modified_code  # noqa: E402
from core.record import REFERENCE_ROOT, RecordError, read_record, status  # noqa: E402

STATE = Path("outputs") / "refresh.json"  # under the repository root


def _results_script():
    """scripts/results.py as a module: the papers' order and results/pending.yaml are its."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("results_script", ROOT / "scripts" / "results.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = _results_script()


def why_stale(paper: str) -> str | None:
    """Why `paper`'s reference needs re-making (None: it is current)."""
    path = ROOT / REFERENCE_ROOT / paper
    if not (path / "results.json").is_file():
        return "no reference run"
    try:
        state = status(read_record(path))["compute"]
    except RecordError as e:
        return f"its reference cannot be read ({e})"
    return None if state == "current" else state


def modified_files() -> list[str]:
    """The code's uncommitted changes, untracked files among them: what makes a run's record say "modified"
    (core.provenance.git_state), which a reference may not be. The READMEs the refresh writes are not code."""
    try:
        return modified_code(ROOT)
    except (OSError, subprocess.SubprocessError) as e:
        return [f"(git status failed: {e})"]


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path} cannot be read ({e}); remove it to start a new refresh") from None


def write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json_text(state))


class Child:
    """The paper's run, a child process; a SIGTERM or SIGINT to the refresh is passed on to it, and the refresh
    stops once it has stopped (its checkpoints written)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.signal: int | None = None

    def handle(self, signum: int, _frame: Any) -> None:
        self.signal = signum
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)

    def run(self, argv: list[str]) -> int:
        self.proc = subprocess.Popen(argv, cwd=ROOT)
        while True:
            try:
                return self.proc.wait()
            except KeyboardInterrupt:  # the terminal's Ctrl-C reached the child too (same process group)
                self.signal = signal.SIGINT


def run_step(argv: list[str], child: Child) -> int:
    code = child.run(argv)
    if child.signal is not None:
        raise KeyboardInterrupt
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("papers", nargs="*", help="papers to refresh (default: every stale or missing reference)")
    parser.add_argument("--dry-run", action="store_true", help="say what would run and stop")
    parser.add_argument("--state", type=Path, default=ROOT / STATE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    known = RESULTS.configured_papers(ROOT)
    unknown = [p for p in args.papers if p not in known]
    if unknown:
        print(f"error: unknown paper(s) {', '.join(unknown)}: choose from {', '.join(known)}", file=sys.stderr)
        return 2

    state = read_state(args.state)
    named = [p for p in known if p in args.papers]
    continuing = state is not None and not state.get("finished") and (not named or named == state["papers"])
    if continuing:
        plan = state["papers"]
        print(f"continuing the refresh started {state['started']}: {', '.join(plan)}")
    else:
        plan = named or [p for p in known if why_stale(p) is not None]
        state = {"papers": plan, "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "done": {}}
    todo = [p for p in plan if p not in state["done"]]
    for p in plan:
        mark = "done" if p in state["done"] else (why_stale(p) or "current; named, so run again")
        print(f"  {p}: {mark}")
    if not todo:
        print("nothing to refresh: every reference is current" if not plan else "every planned paper is done")
        if not args.dry_run and not continuing and plan:
            write_state(args.state, {**state, "finished": True})
        return 0
    if args.dry_run:
        return 0
    modified = modified_files()
    if modified:
        shown = ", ".join(modified[:8]) + (f" and {len(modified) - 8} more" if len(modified) > 8 else "")
        print(
            f"error: the tree has uncommitted changes ({shown}); a reference is made from a committed tree: commit or "
            "stash them, then run the refresh again",
            file=sys.stderr,
        )
        return 2
    write_state(args.state, state)

    child = Child()
    signal.signal(signal.SIGTERM, child.handle)
    py = sys.executable
    try:
        for paper in todo:
            state["current"] = paper
            write_state(args.state, state)
            print(f"\n== refresh: {paper} ({todo.index(paper) + 1} of {len(todo)}) ==", flush=True)
            t0 = time.perf_counter()
            code = run_step([py, "scripts/reproduce.py", f"paper={paper}"], child)
            if code != 0:
                print(f"error: {paper}'s run failed (exit {code}); run the refresh again to continue", file=sys.stderr)
                return 1
            code = run_step([py, "scripts/record.py", "reference", paper], child)
            if code != 0:
                print(f"error: {paper}'s run could not become its reference (exit {code})", file=sys.stderr)
                return 1
            RESULTS.drop_pending(paper, ROOT / REFERENCE_ROOT)
            run_step([py, "scripts/results.py", "--write", "README.md"], child)
            state["done"][paper] = {
                "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "minutes": round((time.perf_counter() - t0) / 60, 1),
            }
            state.pop("current", None)
            write_state(args.state, state)
    except KeyboardInterrupt:
        write_state(args.state, state)
        print(
            f"\nrefresh stopped during {state.get('current')}; run the same command again to continue", file=sys.stderr
        )
        return 143 if child.signal == signal.SIGTERM else 130
    state["finished"] = True
    write_state(args.state, state)
    done = ", ".join(f"{p} {v['minutes']} min" for p, v in state["done"].items())
    print(f"\nrefreshed: {done}")
    print(
        f"commit {REFERENCE_ROOT}/ with README.md and the papers' READMEs (git add {REFERENCE_ROOT} README.md papers)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

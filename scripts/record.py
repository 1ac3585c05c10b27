#!/usr/bin/env python
"""A stored run's record: re-decide it, promote it to the paper's reference, or compare it with the reference.

    python scripts/record.py redecide PAPER [--run DIR]    # decide and render the stored Results again (seconds, no
                                                           # training): claims.json, report.md and figures rewritten
    python scripts/record.py redecide all                  # every reference run in results/
    python scripts/record.py reference PAPER [--run DIR]   # copy a finished default run to results/PAPER/
    python scripts/record.py compare PAPER [--run DIR]     # your run against results/PAPER/, claim by claim
    python scripts/record.py rekey PAPER|all               # after a change of the fingerprint's form: give each
                                                           # reference the fingerprint of the clean commit that made
                                                           # it (git archive of that commit; nothing re-run)

DIR is a run directory (default: outputs/PAPER/latest, the newest finished run); `redecide` also takes a reference
(--run results/PAPER). `make redecide`, `make reference` and `make compare` run these. Exit status: 0 done (compare:
the run reproduces the reference), 1 compare found rows that differ, 2 a bad argument or a record that cannot be
used (the message says why).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.record import (  # noqa: E402
    REFERENCE_ROOT,
    RecordError,
    decide_record,
    promote,
    read_record,
    reference_problems,
    status,
)


def papers() -> list[str]:
    return sorted(p.stem for p in (ROOT / "configs" / "paper").glob("*.yaml"))


def run_dir(paper: str, given: Path | None) -> Path:
    """The run to use: `given`, or outputs/<paper>/latest; an error naming what is missing."""
    path = given if given is not None else ROOT / "outputs" / paper / "latest"
    if not path.exists():
        hint = f"`make reproduce PAPER={paper}` makes one" if given is None else "give a run directory"
        raise RecordError(f"no run at {path}: {hint}")
    return path.resolve()


def cmd_redecide(paper: str, given: Path | None) -> int:
    path = run_dir(paper, given)
    record = read_record(path)
    if record.name != paper:
        raise RecordError(f"{path} is a run of {record.name!r}, not {paper!r}")
    t0 = time.perf_counter()
    report = decide_record(path)
    print(f"{paper}: re-decided {shown(path)} in {time.perf_counter() - t0:.1f} s: {report.verdict_summary()}")
    print(f"  compute code {status(read_record(path))['compute']}; report: {shown(path / 'report.md')}")
    return 0


def cmd_reference(paper: str, given: Path | None) -> int:
    path = run_dir(paper, given)
    record = read_record(path)
    if record.name != paper:
        raise RecordError(f"{path} is a run of {record.name!r}, not {paper!r}")
    problems = reference_problems(record)
    if problems:
        raise RecordError(f"{shown(path)} cannot become {paper}'s reference: " + "; ".join(problems))
    dest = ROOT / REFERENCE_ROOT / paper
    report = promote(path, dest)
    print(f"{paper}: {shown(path)} is the reference now ({shown(dest)}): {report.verdict_summary()}")
    print("  `make readme` writes it into the README's table; commit results/ with the README")
    return 0


def cmd_compare(paper: str, given: Path | None, reference: Path | None, rtol: float) -> int:
    from core.compare import compare

    ref_dir = reference if reference is not None else ROOT / REFERENCE_ROOT / paper
    if not (ref_dir / "results.json").is_file():
        raise RecordError(f"{paper} has no reference run at {shown(ref_dir)}")
    mine = read_record(run_dir(paper, given))
    if mine.name != paper:
        raise RecordError(f"{mine.run_dir} is a run of {mine.name!r}, not {paper!r}")
    comparison = compare(read_record(ref_dir), mine, rtol)
    print(comparison.text())
    return 0 if comparison.reproduces else 1


def cmd_rekey(paper: str) -> int:
    import subprocess
    import tempfile

    from core.record import rekey

    folder = ROOT / REFERENCE_ROOT / paper
    record = read_record(folder)
    commit = record.run.get("commit", "")
    with tempfile.TemporaryDirectory(prefix=f"rekey-{paper}-") as tree:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "core", "ipu_model", "papers"], capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise RecordError(f"{paper}: cannot read commit {commit!r}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        old, new = rekey(folder, Path(tree))
    state = status(read_record(folder))["compute"]
    print(f"{paper}: {shown(folder)} re-keyed from commit {commit}: {old} -> {new}; against this checkout: {state}")
    return 0


def shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("redecide", "reference", "compare", "rekey"))
    parser.add_argument("paper", help="the paper's name (redecide, rekey: 'all' for every reference run)")
    parser.add_argument("--run", type=Path, help="a run directory (default: outputs/PAPER/latest)")
    parser.add_argument("--reference", type=Path, help="compare: another reference run (default: results/PAPER)")
    parser.add_argument("--rtol", type=float, default=1e-6, help="compare: relative tolerance of point values")
    args = parser.parse_args(argv)
    if args.command in ("redecide", "rekey") and args.paper == "all":
        if args.run is not None:
            parser.error(f"{args.command} all takes every reference in results/: leave out --run")
        done = [p for p in papers() if (ROOT / REFERENCE_ROOT / p / "results.json").is_file()]
        try:
            for paper in done:
                if args.command == "rekey":
                    cmd_rekey(paper)
                else:
                    cmd_redecide(paper, ROOT / REFERENCE_ROOT / paper)
        except RecordError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if not done:
            print("no reference runs in results/ yet")
        return 0
    if args.paper not in papers():
        parser.error(f"unknown paper {args.paper!r}: choose one of {', '.join(papers())}")
    try:
        if args.command == "redecide":
            return cmd_redecide(args.paper, args.run)
        if args.command == "reference":
            return cmd_reference(args.paper, args.run)
        if args.command == "rekey":
            if args.run is not None:
                parser.error("rekey takes the paper's reference in results/: leave out --run")
            return cmd_rekey(args.paper)
        return cmd_compare(args.paper, args.run, args.reference, args.rtol)
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

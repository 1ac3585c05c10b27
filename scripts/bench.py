#!/usr/bin/env python
"""Benchmarks: our implementations against a peer library, timed in the same run.

    python scripts/bench.py                 # every section
    python scripts/bench.py --section NAME  # one section (repeatable)
    python scripts/bench.py --list

Writes outputs/bench/<date>.json and outputs/bench/<date>.md, and prints the markdown table. One section per
paper or core library; each is a function returning a list of core.bench.Comparison.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import Comparison, markdown_table
from core.io import atomic_write_json, atomic_write_text
from core.runner import versions

SECTIONS: dict[str, Callable[[bool], list[Comparison]]] = {}


def section(name: str) -> Callable:
    def register(fn: Callable[[bool], list[Comparison]]) -> Callable[[bool], list[Comparison]]:
        SECTIONS[name] = fn
        return fn

    return register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", action="append", help="run only this section (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (for a smoke test)")
    parser.add_argument("--out", default="outputs/bench", help="directory for the JSON and markdown results")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(SECTIONS) if SECTIONS else "(no sections yet)")
        return 0
    chosen = args.section or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS) or '(none yet)'}")
    if not chosen:
        print("no benchmark sections are registered yet")
        return 0
    rows: list[Comparison] = []
    for name in chosen:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        rows += SECTIONS[name](args.quick)
    table = markdown_table(rows)
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out = Path(args.out)
    atomic_write_json(out / f"{stamp}.json", {"rows": [r.to_dict() for r in rows], "versions": versions()})
    atomic_write_text(out / f"{stamp}.md", table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

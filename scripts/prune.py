#!/usr/bin/env python
"""Remove kept work made by other code than this checkout's: stage values (core.memo), their partial work and
leftovers of killed writers under `<outputs>/<paper>/memo/`, and training checkpoints under
`<outputs>/<paper>/checkpoints/` (core.prune says how each is judged).

    python scripts/prune.py                     # list and remove them under outputs/, with their sizes
    python scripts/prune.py --dry-run           # only list them
    python scripts/prune.py --outputs DIR       # another output root

`make prune` runs it (ARGS="--dry-run"). Work made by the current code is never removed. Exit status 0 (also where
the default outputs/ does not exist yet: nothing has run, so nothing is kept); 2 for an output root named with
--outputs that does not exist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.prune import human, remove, stale  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outputs", help="the output root (default: outputs)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    args = parser.parse_args(argv)
    root = Path(args.outputs or "outputs")
    if not root.is_dir():
        if args.outputs is None:
            print(f"nothing to prune: no run has written to {root}/ yet")
            return 0
        print(f"error: the output root {root} does not exist", file=sys.stderr)
        return 2
    total = count = 0
    for item in stale(root):
        print(f"{human(item.bytes):>10}  {item.path}  ({item.why})")
        if not args.dry_run:
            remove(item)
        total += item.bytes
        count += 1
    verb = "would be removed" if args.dry_run else "removed"
    print(
        f"{count} kept item(s) made by other code, {total} bytes ({human(total)}) {verb}"
        if count
        else f"nothing under {root} was made by other code"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

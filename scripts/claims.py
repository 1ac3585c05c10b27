#!/usr/bin/env python
"""The claims lock and ledger of each paper (core/ledger.py).

    python scripts/claims.py check [PAPER ...]   # every disagreement between claims, lock and ledger (exit 1 if any)
    python scripts/claims.py lock PAPER          # rewrite PAPER's lock; refuses while a changed claim has no entry
                                                 # (but writes the `code` entry itself where only decision code
                                                 # changed and results/PAPER re-decides identically)
    python scripts/claims.py show PAPER          # the claims with their fingerprints, and the ledger

After changing a claim (its statement, figure, rule, statistic or design, or the code that measures or decides it),
add a `Change` to papers/<paper>/ledger.py with the fingerprint `lock` prints, then run `lock` again. Entries are
append-only: the lock keeps a digest of each, and an entry edited after it was recorded fails `check`. Where only the
code that decides claims changed (a helper moved to core.stats, say) and re-deciding the paper's reference record
gives identical values and verdicts, `lock` appends the `code` entry itself, naming the record.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.ledger import (  # noqa: E402
    check_lock,
    code_only_changes,
    edited_entries,
    load_paper_claims,
    papers_with_claims,
    redecide_differences,
    write_code_entry,
    write_lock,
)
from core.record import REFERENCE_ROOT  # noqa: E402


def automatic_code_entry(pc):
    """Where only decision code changed: re-decide the paper's reference record(s) and, when every value and verdict
    is identical, append the `code` entries to its ledger and return the paper's claims reloaded; else say why not
    (an entry must be written by hand) and return None."""
    import datetime as dt
    import subprocess

    changed = code_only_changes(pc)
    if not changed:
        if changed is None:
            print(f"{pc.paper}: a declaration changed, or a claim was added or dropped: write its entry by hand")
        return None
    folder = ROOT / REFERENCE_ROOT / pc.paper
    if not (folder / "results.json").is_file():
        print(
            f"{pc.paper}: the decision code of {len(changed)} claim(s) changed, and there is no reference record "
            f"({folder.relative_to(ROOT)}) to show that it decides as before: write the entry by hand"
        )
        return None
    differences = redecide_differences(folder)
    if differences:
        print(f"{pc.paper}: re-deciding {folder.relative_to(ROOT)} gives other values; write the entry by hand:")
        for d in differences:
            print(f"  - {d}")
        return None
    date = dt.date.today().isoformat()
    records = [str(folder.relative_to(ROOT))]
    write_code_entry(pc, changed, records, date)
    subprocess.run(
        [sys.executable, "-m", "ruff", "format", "-q", str(pc.lock_path.parent / "ledger.py")], check=False, cwd=ROOT
    )
    print(f"{pc.paper}: re-decided {', '.join(records)} identically; wrote the code entry of {', '.join(changed)}")
    import importlib
    import sys as _sys

    for name in [m for m in _sys.modules if m == f"papers.{pc.paper}.ledger"]:
        importlib.reload(_sys.modules[name])
    return load_paper_claims(pc.paper)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "lock", "show"))
    parser.add_argument("papers", nargs="*", help="papers (default for check: every paper with a claims.py)")
    args = parser.parse_args(argv)
    known = papers_with_claims()
    papers = args.papers or (known if args.command == "check" else [])
    if not papers:
        parser.error(f"name a paper: one of {', '.join(known)}")
    unknown = [p for p in papers if p not in known]
    if unknown:
        parser.error(f"no papers/<name>/claims.py for {', '.join(unknown)}: choose from {', '.join(known)}")
    status = 0
    for paper in papers:
        pc = load_paper_claims(paper)
        if args.command == "check":
            problems = check_lock(pc)
            print(f"{paper}: " + ("lock and ledger agree" if not problems else f"{len(problems)} problem(s)"))
            for p in problems:
                print(f"  - {p}")
            status |= bool(problems)
        elif args.command == "lock":
            missing = write_lock(pc)
            if missing and not edited_entries(pc):
                pc = automatic_code_entry(pc) or pc
                missing = write_lock(pc)
            if missing:
                print(
                    f"{paper}: not written: the ledger's recorded entries were edited (papers/{paper}/ledger.py):"
                    if edited_entries(pc)
                    else f"{paper}: not written: these claims changed without a ledger entry carrying their new "
                    f"fingerprint (papers/{paper}/ledger.py):"
                )
                for m in missing:
                    print(f"  - {m}")
                status = 1
            else:
                print(f"{paper}: wrote {pc.lock_path.relative_to(ROOT)}")
        else:
            for cid, fp in pc.fingerprints().items():
                print(
                    f"{paper} {cid}: fingerprint {fp['fingerprint']} (declaration {fp['declaration']}, "
                    f"code {fp['code']})"
                )
            for e in pc.ledger:
                print(f"  {e.date} {e.claim} [{e.kind}] {e.old!r} -> {e.new!r}: {e.reason}")
    return status


if __name__ == "__main__":
    sys.exit(main())

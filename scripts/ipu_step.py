"""Cost each paper's main step on the simulated IPU for a stored run, and re-make its report with the table.

    python scripts/ipu_step.py results/packing [results/umup ...] [--device bow]
    python scripts/ipu_step.py packing            # a paper's name: its reference, results/<name>

Writes ipu_step.json into each run directory (ipu_model/steps.py: the paper's `ipu_steps` part at the run's config,
lowered and costed cost-only; resumes a stopped call) and re-decides the record (core.record.decide_record), whose
report then shows the table "The main step on a simulated IPU". The run itself is not touched.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from core.record import decide_record
    from ipu_model.device import PRESETS
    from ipu_model.steps import write_steps

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, or papers' names (their reference, results/<name>)")
    parser.add_argument("--device", choices=sorted(PRESETS), help="the simulated IPU (default: the run's device)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    dirs = []
    for name in args.runs:
        path = Path(name) if Path(name).is_dir() else ROOT / "results" / name
        if not (path / "results.json").is_file():
            parser.error(f"{name}: not a run directory (no results.json there) nor a paper with a reference")
        dirs.append(path)
    for path in dirs:
        out = write_steps(path, device=args.device)
        decide_record(path)
        print(f"{out}: written; {path / 'report.md'} re-made")
    return 0


if __name__ == "__main__":
    sys.exit(main())

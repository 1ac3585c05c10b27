"""The learning-rate sweep behind `Config.lr`: every arm that gets its own rate is trained at every rate of one
grid (the default scale, its seeds trained together), and the rate with the best mean validation BPC is chosen.

    python scripts/reproduce.py -m paper=unit_scaling logger=none output_root=sweep \\
        'unit_scaling.arms=[fp32_unit]' 'unit_scaling.track_arms=[]' unit_scaling.lr.fp32_unit=<grid>
    python -m papers.unit_scaling.sweep sweep/multirun --out papers/unit_scaling/lr_sweep.json

The collected table ships as `lr_sweep.json` beside this file, and the report prints it.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from core.io import atomic_write_json

SWEEP_FILE = Path(__file__).with_name("lr_sweep.json")


def collect(root: str | Path) -> dict[str, Any]:
    """One row per (arm, rate) from the results.json files of single-arm runs under `root`, and the best rate per
    arm by mean validation BPC (a diverged run counts as worst). Reads the records of the run -> Results contract
    (results.json holding "results") and those of earlier versions (results.json holding "tables" and "metrics")."""
    rows = []
    for path in sorted(Path(root).rglob("results.json")):
        r = json.loads(path.read_text())
        if r.get("paper") != "unit_scaling":
            continue
        c = r["config"]["unit_scaling"]
        if len(c["arms"]) != 1:
            raise ValueError(f"{path}: a sweep run trains one arm, this one trains {c['arms']}")
        arm = c["arms"][0]
        if "results" in r:
            valid, per_seed, commit = _stored(r, arm, path)
        else:  # a record of the versions before the stored Results
            arms_table = next(t for t in r["tables"] if t["name"] == "arms")
            per_seed = arms_table["rows"][0][4]
            valid = r["metrics"].get(f"valid_bpc/{arm}")
            commit = r.get("versions", {}).get("git commit", "")
        rows.append(
            {
                "arm": arm,
                "lr": float(c["lr"][arm]),
                "valid_bpc": valid if isinstance(valid, float) and math.isfinite(valid) else None,
                "test_bpc_per_seed": per_seed,
                "seeds": list(c["seeds"]),
                "steps": int(c["steps"]),
                "commit": commit,
            }
        )
    if not rows:
        raise ValueError(f"no unit_scaling results.json under {root}")
    rows.sort(key=lambda row: (row["arm"], row["lr"]))
    best = {}
    for row in rows:
        score = row["valid_bpc"] if row["valid_bpc"] is not None else float("inf")
        if row["arm"] not in best or score < best[row["arm"]][1]:
            best[row["arm"]] = (row["lr"], score)
    return {"rows": rows, "best": {arm: lr for arm, (lr, _) in best.items()}}


def _stored(record: dict[str, Any], arm: str, path: Path) -> tuple[float | None, str, str]:
    """(mean validation BPC over seeds at the last evaluation, the per-seed test BPCs as the arms table prints them,
    the commit) of `arm` in a record's stored Results."""
    import numpy as np

    from core.results import from_json
    from papers.unit_scaling.results import Results

    result = from_json(Results, record["results"], f"{path}: results").arms[arm]
    valid = float(np.mean(result.valid_curve[-1][1])) if result.valid_curve else None
    per_seed = ", ".join(f"{x:.3f}" for x in result.test_bpc)
    commit = (record.get("commit") or "") + (" (modified)" if record.get("modified") else "")
    return valid, per_seed, commit


def load() -> dict[str, Any] | None:
    """The shipped sweep, or None where none is shipped."""
    return json.loads(SWEEP_FILE.read_text()) if SWEEP_FILE.exists() else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="a folder holding the sweep's runs (e.g. the multirun folder)")
    parser.add_argument("--out", default=str(SWEEP_FILE), help="where to write the table (default: %(default)s)")
    args = parser.parse_args(argv)
    table = collect(args.root)
    atomic_write_json(args.out, table)
    for row in table["rows"]:
        mark = " <- best" if table["best"][row["arm"]] == row["lr"] else ""
        print(f"{row['arm']:<14} lr {row['lr']:<10.6g} valid BPC {row['valid_bpc']}{mark}")


if __name__ == "__main__":
    main()

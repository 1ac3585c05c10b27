#!/usr/bin/env python
"""The README's table of papers, generated from the run records in outputs/.

    python scripts/results.py                      # every paper: its newest default-scale run
    python scripts/results.py --paper bess         # one paper (repeatable)
    python scripts/results.py --scale smoke        # runs of another scale
    python scripts/results.py --outputs DIR        # another output root

Prints the markdown rows `| paper | claim checked | command | time | status |` on stdout and, on stderr, which
record each row was read from. `make results` runs it.

Which run: every finished run writes `<outputs>/<paper>/<timestamp>/results.json` and points
`<outputs>/<paper>/latest` at the newest finished run, whatever its scale. `latest` is used when it is a run of the
scale asked for and ran the paper as its scale defines it; otherwise the newest such run among
`<outputs>/<paper>/*/results.json` (by the start time it records). A run whose command line changed what it
computes (a `<paper>.key=value`, `seed=` or `device=` override, read from Hydra's `.hydra/overrides.yaml`) is used
only when no plain run of that scale exists, and its row names the overrides. Sweeps (`<outputs>/multirun/`) are
not read. A paper with no run of that scale gets a row that says so.

The "paper" and "claim checked" columns are the README's stable text (ROWS below); the time and the status are
the record's: wall time and scale, and "N of M claims hold: ...; not holding: ..." from its claims, each as its
statement and our figure (`core.report.format_value`; an interval as estimate [low, high]).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.report import Interval, format_value  # noqa: E402

# paper -> (the "paper" column, the "claim checked" column): what each reproduction checks, in the README's order
ROWS: dict[str, tuple[str, str]] = {
    "bess": (
        "BESS (Cattaneo et al., 2022)",
        "balanced entity sharding with one all-to-all per step equals single-device training; "
        "TransE/DistMult/ComplEx/RotatE reach the literature filtered MRR on Nations, Kinships, UMLS and twice a "
        "random ranker's; an ensemble of >= 2 models beats its best member (paired bootstrap); compiled table "
        "memory per device falls as 1/n and BESS moves fewer bytes than an all-gather",
    ),
    "prng": (
        "xoroshiro128aox, the IPU's PRNG (Hanlon & Felix, 2022)",
        "xoroshiro128+ fails rank and linear complexity on its lowest bit, AOX passes every bit; AOX output "
        "cheaper than an adder",
    ),
    "packing": (
        "Sequence packing without cross-contamination (Krell et al., 2021)",
        "SPFHP/LPFHP/NNLSHP reach the paper's efficiency and speed-up; packed BERT is exact and trains ~2x faster "
        "per token",
    ),
    "fp8_llm": (
        "FP8 LLM training and inference (Perez et al., 2023)",
        "per-tensor amax-scaled FP8 (E4M3 activations and weights, E5M2 gradients) trains and infers within 1% of "
        "FP32; a constant scale does worse, more so as models grow (3 seeds, intervals); gradients need the largest "
        "scale biases",
    ),
    "gps": (
        "GPS++ (Masters et al., 2022)",
        "MPNN-only keeps nearly all of GPS++'s accuracy and 3D features matter more than attention (3 seeds per "
        "arm, Welch intervals); the 44M model's parameter breakdown",
    ),
    "popsparse": (
        "PopSparse (Li et al., 2023)",
        "static beats dynamic; speed-up grows with block size; static FP16 b=16 beats dense from ~90% sparsity "
        "(simulated IPU; CPU timed in interleaved rounds, decided on their spread)",
    ),
    "qm1b": (
        "QM1B / PySCFIPU (Mathiasen et al., NeurIPS 2023)",
        "a JAX DFT labels QM1B-style conformers within chemical accuracy of converged PySCF; SchNet's gap MAE "
        "(3 seeds) falls with data relative to the mean predictor and its train/valid gap narrows",
    ),
    "sparq": (
        "SparQ Attention (Ribar et al., ICML 2024)",
        "at 1/8 of the KV transfer SparQ keeps the paper's share of dense quality and beats H2O / local window "
        "(paired bootstrap); the decode step at 1/8 moves what the formula says and is > 3x faster",
    ),
    "unit_scaling": (
        "Unit Scaling (Blake et al., ICML 2023)",
        "unit-scaled FP16/FP8 train without loss scaling where regular FP8 fails",
    ),
}
SCALES = ("smoke", "default", "full")
# command-line overrides that do not change what a run computes (where it writes, how it logs, resuming)
HARMLESS_OVERRIDES = ("paper", "scale", "logger", "output_root", "resume", "hydra")


def configured_papers(root: Path = ROOT) -> list[str]:
    """The papers with a config (`configs/paper/<name>.yaml`), in the README's order, then any others by name."""
    names = sorted(p.stem for p in (root / "configs" / "paper").glob("*.yaml"))
    return [n for n in ROWS if n in names] + [n for n in names if n not in ROWS]


def paper_columns(name: str, root: Path = ROOT) -> tuple[str, str]:
    """The "paper" and "claim checked" texts: ROWS, or for a paper not listed there its config's title."""
    if name in ROWS:
        return ROWS[name]
    meta = (yaml.safe_load((root / "configs" / "paper" / f"{name}.yaml").read_text()) or {}).get("paper", {})
    title, reference = meta.get("title", name), meta.get("reference", "")
    return (f"{title} ({reference})" if reference else title), "-"


def changed_settings(run_dir: Path) -> list[str]:
    """The run's command-line overrides that change what it computes (from Hydra's record of them)."""
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    overrides = yaml.safe_load(path.read_text()) or []
    return [o for o in overrides if o.lstrip("+~").split("=", 1)[0].split(".", 1)[0] not in HARMLESS_OVERRIDES]


def find_run(outputs: Path, paper: str, scale: str) -> tuple[Path, dict[str, Any], list[str]] | None:
    """(results.json path, its record, the overrides that changed it) of the run to report, or None."""
    folder = outputs / paper
    if not folder.is_dir():
        return None
    latest = folder / "latest"
    runs = []
    for path in folder.glob("*/results.json"):
        if path.parent.is_symlink():
            continue  # `latest` itself: its target is among the directories
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # unreadable: not a finished run
        if record.get("scale") != scale:
            continue
        changed = changed_settings(path.parent)
        is_latest = latest.is_symlink() and latest.resolve() == path.parent.resolve()
        # plain runs first; among them `latest`, then the newest start
        runs.append(((not changed, is_latest, str(record.get("started", "")), path.parent.name), path, record, changed))
    if not runs:
        return None
    _, path, record, changed = max(runs, key=lambda r: r[0])
    return path, record, changed


def as_value(v: Any) -> Any:
    """A value of results.json back as core.report would format it (an interval's dict becomes an Interval)."""
    if isinstance(v, dict) and {"estimate", "low", "high"} <= set(v):
        return Interval(**{k: v[k] for k in ("estimate", "low", "high", "confidence", "method") if k in v})
    return v


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def claim_text(claim: dict[str, Any]) -> str:
    """'<statement>: <ours>', with the paper's figure when it is a number."""
    text = f"{claim['statement']}: {format_value(as_value(claim.get('ours')))}"
    paper = as_value(claim.get("paper"))
    if isinstance(paper, int | float | Interval) and not isinstance(paper, bool):
        text += f" (paper {format_value(paper)})"
    return text


def status(record: dict[str, Any]) -> str:
    claims = record.get("claims", [])
    if not claims:
        return "checks no claims"
    holding = [claim_text(c) for c in claims if c.get("holds") is True]
    failing = [claim_text(c) for c in claims if c.get("holds") is False]
    unmeasured = [claim_text(c) for c in claims if c.get("holds") is None]
    out = f"{len(holding)} of {len(claims)} claims hold"
    if holding:
        out += ": " + " · ".join(holding)
    if failing:
        out += "; not holding: " + " · ".join(failing)
    if unmeasured:
        out += "; not measured: " + " · ".join(unmeasured)
    return out


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 100 else f"{seconds / 60:.1f} min"


def time_text(record: dict[str, Any], changed: list[str]) -> str:
    started = record.get("started")
    date = dt.datetime.fromisoformat(started).date().isoformat() if started else "date not recorded"
    text = f"{duration(float(record['wall_seconds']))} ({record['scale']} scale, measured {date})"
    if changed:
        text += f"; overrides: {' '.join(changed)}"
    return text


def command(paper: str, scale: str) -> str:
    return f"`make reproduce PAPER={paper}" + ("`" if scale == "default" else f' ARGS="scale={scale}"`')


def shown(path: Path) -> str:
    """A path as the reader would type it: relative to the checkout when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def row(paper: str, scale: str, outputs: Path, root: Path = ROOT) -> tuple[str, str]:
    """(the markdown row, where it came from)."""
    name, checked = paper_columns(paper, root)
    found = find_run(outputs, paper, scale)
    if found is None:
        time, text = "-", f"no {scale}-scale run in {shown(outputs / paper)}/: run {command(paper, scale)}"
        source = f"{paper}: no finished {scale}-scale run under {shown(outputs / paper)}/"
    else:
        path, record, changed = found
        time, text = time_text(record, changed), status(record)
        source = f"{paper}: {shown(path)}"
    cells = [name, checked, command(paper, scale), time, text]
    return "| " + " | ".join(cell(c) for c in cells) + " |", source


def table(papers: list[str], scale: str, outputs: Path, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """(the table's lines, header included; the record each row came from)."""
    lines = ["| paper | claim checked | command | time | status |", "|---|---|---|---|---|"]
    sources = []
    for paper in papers:
        line, source = row(paper, scale, outputs, root)
        lines.append(line)
        sources.append(source)
    return lines, sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", action="append", help="a paper (repeatable); default: every configured paper")
    parser.add_argument("--scale", default="default", help=f"the runs' scale: {', '.join(SCALES)} (default: default)")
    parser.add_argument("--outputs", type=Path, default=ROOT / "outputs", help="the output root (default: outputs/)")
    args = parser.parse_args(argv)
    known = configured_papers()
    unknown = [p for p in args.paper or [] if p not in known]
    if unknown:
        parser.error(f"unknown paper(s) {', '.join(unknown)}: choose from {', '.join(known)}")
    if args.scale not in SCALES:
        parser.error(f"unknown scale {args.scale!r}: choose one of {', '.join(SCALES)}")
    lines, sources = table(args.paper or known, args.scale, args.outputs)
    print("\n".join(lines))
    print("\n".join(f"read {s}" for s in sources), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

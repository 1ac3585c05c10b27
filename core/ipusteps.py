"""A run's `ipu_step.json` read back: the paper's main step costed on the simulated IPU (ipu_model/steps.py makes
it), whether the code that made it is the checkout's, and the report's table of it.

The file lies beside results.json in a run directory; `core.record.decide_record` adds its table to the report when
it is there (a run without one has no such table). It is kept apart from the run's Results because a step's cost
follows from the config's sizes and the lowering alone: a change to the lowering makes the file stale, not the run.
This module reads JSON and formats it (no JAX, no ipu_model): what makes the rows is ipu_model.steps.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from core.report import Table

IPU_STEP_FILE = "ipu_step.json"
STEP_FORMAT = 1
COLUMNS = ("step", "at these sizes", "fits in tile memory", "cycles", "time", "compute / exchange / sync / stream",
           "host s (lower, compile, simulate)", "the paper's IPU figure")  # fmt: skip
PHASES = ("compute", "exchange", "sync", "stream")  # the shares the table shows (host transfers are not in a step)


def step_key(signature: str) -> str:
    """12 hex digits naming a step by its name, streamed arguments and argument shapes (a kept row's key)."""
    return hashlib.sha256(signature.encode()).hexdigest()[:12]


def read_steps(run_dir: Path | str) -> dict[str, Any] | None:
    """The run's ipu_step.json, or None where it has none; ValueError naming the file where it cannot be read."""
    path = Path(run_dir) / IPU_STEP_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    if data.get("format") != STEP_FORMAT or not isinstance(data.get("steps"), list):
        raise ValueError(f"{path}: format {data.get('format')!r} with steps {type(data.get('steps')).__name__}, "
                         f"expected format {STEP_FORMAT} with a list of steps")  # fmt: skip
    return data


def settings_of(run: dict[str, Any]) -> dict[str, Any]:
    """What a run's steps are made from besides code: its paper's config section and its device (results.json's)."""
    config = run.get("config", {})
    return {k: config.get(k) for k in (run.get("paper", ""), "device")}


def step_status(data: dict[str, Any], root: Path | None = None, run: dict[str, Any] | None = None) -> str:
    """'current' where the code the rows were made by is the checkout's (and, given the run's results.json, its
    settings are the run's), else 'stale: ...' naming what changed; a file a stopped command left without all its
    rows says so too ('incomplete ...', alone or after the staleness)."""
    from core.provenance import changed_units

    incomplete = "" if data.get("complete") else "incomplete (a stopped command: run it again to finish)"
    if run is not None and data.get("settings") != settings_of(run):
        stale = "stale: made for other settings than this run's (its config section or device)"
        return f"{stale}; {incomplete}" if incomplete else stale
    changed = changed_units(data.get("units", {}), **({} if root is None else {"root": root}))
    if not changed:
        return incomplete or "current"
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    stale = f"stale: made by code {data.get('fingerprint')}; changed since: {shown}"
    return f"{stale}; {incomplete}" if incomplete else stale


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} us"


def _shares(row: dict[str, Any]) -> str:
    phases = row.get("phases") or {}
    total = sum(phases.values())
    if not total:
        return "-"
    return " / ".join(f"{phases.get(p, 0.0) / total:.0%}" for p in PHASES)


def _fits(row: dict[str, Any]) -> str:
    if row["status"] == "fits":
        return f"yes ({row['memory_peak_bytes'] / 1024:,.0f} of {row['memory_per_tile'] / 1024:,.0f} KiB)"
    if row["status"] == "does not fit":
        return "no: " + row["message"].split("; largest tensors")[0]
    if row["status"] == "too large for this host":
        return "not costed: " + row["message"]
    return "does not lower: " + row["message"].removeprefix("cannot lower this function to the simulated IPU: ")


def _host(row: dict[str, Any]) -> str:
    wall = row.get("wall") or {}
    parts = [f"{k} {wall[k]:.0f}" for k in ("lower", "compile", "simulate") if k in wall]
    return ", ".join(parts) if parts else "-"


def step_table(data: dict[str, Any], status: str = "") -> Table:
    """The report's table of the paper's steps on the simulated IPU (one row a step)."""
    rows = []
    for row in data["steps"]:
        costed = row["status"] in ("fits", "does not fit")
        rows.append(
            [
                row["name"],
                row["what"],
                _fits(row),
                f"{row['cycles']:,.0f}" if costed else "-",
                _ms(row["seconds"]) if costed else "-",
                _shares(row) if costed else "-",
                _host(row),
                row.get("paper_figure") or "none published",
            ]
        )
    caption = (
        f"Each step lowered from the jitted JAX function the run uses (ipu_model.lowering) at the run's sizes "
        f"and costed cost-only on a simulated {data['device']} (ipu_model: poplibs' cycle estimates for each "
        f"vertex, the BSP exchange and sync model); 'fits' is the compiler's tile-memory check, and a step that does "
        f"not fit is still costed as if its tiles held it. Shares are of the step's cycles. Host seconds: this "
        f"machine's time to lower, compile and simulate. Made by code {data['fingerprint']} at "
        f"{data.get('commit') or '-'}"
        f"{' (modified)' if data.get('modified') else ''}, {data.get('made', '-')}"
        + (f"; {status}" if status and status != "current" else "")
        + ". What the lowering does not cover yet and how the step differs from a Poplar program: ipu_model/README.md."
    )
    return Table(
        "ipu_steps",
        "The main step on a simulated IPU",
        COLUMNS,
        rows,
        caption,
    )

"""A paper's main step on the simulated IPU, costed apart from its run and kept beside its record.

    python scripts/ipu_step.py results/packing      # or any run directory; `make ipu-step PAPER=packing`

Each paper names its main step (a training step, a decode step, a DFT iteration, a sampling step) in its `ipu_steps`
part (core.paper): `steps(cfg) -> [Step, ...]`, the jitted function at the run's sizes with its arguments as
jax.ShapeDtypeStruct. `write_steps(run_dir)` lowers each (ipu_model.lowering) on the run's device (its `device`
config group: Mk2 by default), costs it cost-only, and writes `ipu_step.json` into the run directory; the report
shows it as its table "The main step on a simulated IPU" (core.ipusteps), re-made by every decision.

Why apart from `run`: a step's cost depends on the config's sizes and on the lowering, never on what the run trained,
so a change to the lowering re-costs the steps in minutes and leaves every run and its claims current. The file
carries its own fingerprint (the code the paper's `steps`, its config and this module reach:
core.provenance.ipu_step_units) and is stale, as a run is, when that code changes.

A row is what the simulator says of the step, three ways: it fits (cycles, time, each phase's share, the fullest
tile); it does not fit in tile memory (the compiler's message, and the cycles it would take if its tiles held it:
`Lowered.cost(over_memory=True)`); or it does not lower (the primitives without a rule, counted, and the equations a
rule refuses). A fourth says this host could not tell: the lowering outgrew its share of the host's memory
(`host_budget`; the graph keeps each vertex as a Python object), stopped between equations before the machine ran out
(`HostMemoryError`, the equation it reached): a bigger host costs it from the same command. Rows are written as
they are made, so a stopped command resumes with the next step; a row made by other code, for other settings (the
run's config section and device, `settings`) or for another step is made again, and so is a row this host could not
cost.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.io import atomic_write_json
from core.ipusteps import IPU_STEP_FILE, STEP_FORMAT, read_steps, settings_of, step_key
from core.provenance import git_state, ipu_step_units, units_fingerprint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One step of a paper for the simulated IPU: `fn(*args)` (args: pytrees of jax.ShapeDtypeStruct or arrays),
    its name and what it is at these sizes in words; `remote`: positions of flattened arguments kept in streaming
    memory (ipu_model.lowering.lower); `paper_figure`: the paper's own IPU figure for this step with its source
    (REFERENCES.md), "" where the paper publishes none."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    what: str
    remote: tuple[int, ...] = ()
    paper_figure: str = ""

    def signature(self) -> str:
        """The step's arguments as dtype[shape] (what, besides the code, a kept row must match)."""
        import jax

        leaves = jax.tree_util.tree_leaves(self.args)
        shapes = " ".join(f"{jax.numpy.dtype(x.dtype).name}{list(x.shape)}" for x in leaves)
        return f"{self.name}|{self.remote}|{shapes}"


HOST_SHARE = 0.7  # of the host's free memory, the most a step's lowering may add to what this process holds


def host_budget() -> int | None:
    """The resident size a step's lowering may reach: what this process holds when the step starts (a step before it
    leaves memory its allocator reuses) plus HOST_SHARE of what the host has free then (compiling and costing the
    graph add about a fifth more); None where /proc/meminfo is missing."""
    from ipu_model.lowering.builder import host_rss_bytes

    try:
        with open("/proc/meminfo") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
    return int(host_rss_bytes() + HOST_SHARE * free)


def _release_memory() -> None:
    """Give what the last step's graph held back to the host (the garbage collector, then glibc's malloc_trim)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def cost_step(step: Step, device: Any) -> dict[str, Any]:
    """Lower `step` on `device` (a DeviceSpec or preset name) and cost it: the row ipu_step.json keeps."""
    from ipu_model.lowering import HostMemoryError, UnsupportedError, lower

    row: dict[str, Any] = {
        "name": step.name,
        "what": step.what,
        "paper_figure": step.paper_figure,
        "key": step_key(step.signature()),
    }
    t0 = time.perf_counter()
    try:
        low = lower(step.fn, *step.args, device=device, remote=step.remote, name=step.name,
                    max_host_bytes=host_budget())  # fmt: skip
    except HostMemoryError as e:
        row.update(status="too large for this host", message=str(e), wall={"lower": time.perf_counter() - t0})
        return row
    except UnsupportedError as e:
        row.update(
            status="does not lower",
            message=str(e).split(". Supported primitives")[0],
            missing=e.missing,
            problems=e.problems,
            wall={"lower": time.perf_counter() - t0},
        )
        return row
    cost = low.cost(over_memory=True)
    row.update(
        status="fits" if cost.fits else "does not fit",
        device=cost.device,
        cycles=cost.cycles,
        seconds=cost.seconds,
        phases=cost.phases,
        memory_peak_bytes=cost.memory_peak_bytes,
        memory_per_tile=cost.memory_per_tile,
        message=cost.message,
        equations=int(sum(cost.primitives.values())),
        vertices=int(sum(len(cs.vertices) for cs in low.graph.compute_sets)),
        streamed_bytes=low.streamed_bytes,
        wall=cost.wall,
    )
    return row


def cost_steps(
    steps: list[Step], device: Any, kept: dict[str, dict] | None = None, save: Callable[[list], None] | None = None
) -> list[dict[str, Any]]:
    """Cost each step (`cost_step`), reusing a kept row of the same key (`kept`, by key); `save(rows)` after each."""
    rows: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        key = step_key(step.signature())
        if kept and key in kept and kept[key]["status"] != "too large for this host":  # that one: try again
            rows.append(kept[key])
            log.info("step %d/%d %s: kept", i + 1, len(steps), step.name)
            continue
        t0 = time.perf_counter()
        rows.append(cost_step(step, device))
        _release_memory()
        log.info("step %d/%d %s: %s (%.0f s)", i + 1, len(steps), step.name, rows[-1]["status"],
                 time.perf_counter() - t0)  # fmt: skip
        if save is not None:
            save(rows)
    return rows


def write_steps(run_dir: Path | str, *, device: str | None = None) -> Path:
    """Cost the paper's steps for the stored run in `run_dir` (its config, its device or `device`) and write
    ipu_step.json there; resumes from the rows a stopped call wrote. Returns the file's path."""
    from core.record import read_record
    from ipu_model import device_from_config, get_device

    run_dir = Path(run_dir)
    record = read_record(run_dir)
    paper, cfg = record.paper, record.config()
    make = paper.load("ipu_steps")
    if make is None:
        raise ValueError(f"paper {paper.name!r} names no ipu_steps part (core.paper): it has no step to cost")
    spec = get_device(device) if device is not None else device_from_config(cfg.device)
    units = ipu_step_units(paper)
    fingerprint, settings = units_fingerprint(units), settings_of(record.run)
    path = run_dir / IPU_STEP_FILE
    old = read_steps(run_dir) or {}
    same = (old.get("fingerprint"), old.get("settings"), old.get("device")) == (fingerprint, settings, spec.name)
    kept = {r["key"]: r for r in old["steps"]} if same else {}
    steps = make(cfg)
    t0 = time.perf_counter()
    commit, modified = git_state()

    def save(rows: list[dict], complete: bool = False) -> None:
        atomic_write_json(
            path,
            {
                "format": STEP_FORMAT,
                "paper": paper.name,
                "device": spec.name,
                "fingerprint": fingerprint,
                "units": units,
                "settings": settings,
                "commit": commit,
                "modified": modified,
                "made": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "complete": complete,
                "seconds": round(time.perf_counter() - t0, 1),
                "steps": rows,
            },
        )

    rows = cost_steps(steps, spec, kept, save)
    save(rows, complete=True)
    return path

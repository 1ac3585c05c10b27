"""The runner: what happens between Hydra composing a config and `outputs/<paper>/<run>/report.md`.

`run(cfg)` validates the config (unless the preflight did), finds the paper's protocol object (core.paper.Paper),
opens the logger, writes the claims declared from the config alone, then
1. computes: `paper.run(cfg, ctx) -> Results`, the only step that trains, simulates or times anything;
2. stores the Results in `results.json` with the compute fingerprint (core.record.write_results);
3. decides and renders from the stored record (core.record.decide_record): claims.json, report.md, figures;
and points `outputs/<paper>/latest` at the run. Step 3 is the code `make redecide` runs on any stored record, so a
change to how claims are decided or shown is re-made from the Results in seconds.

`run` gets the validated config as objects (`cfg.seed`, `cfg.scale.name`, ... and `cfg.<paper>`, an instance of
the paper's `Config` dataclass) and a `RunContext` (core.context): the run and checkpoint directories, whether to
resume, the compute fingerprint, and the paper's store of kept stage values (`<output_root>/<paper>/memo`,
core.memo; the checkpoint directory gets `code.json`, the units of the code that computes it, for `make prune`).
Outside the runner (a test, a notebook) the caller passes `RunContext.detached()`,
which keeps nothing and resumes nothing.

Results are tied to the code that made them: the checkpoint directory is keyed by the config *and* the compute
fingerprint (core.provenance), so a resume after a change to computing code finds nothing to reuse and recomputes,
while a change to decision or rendering code reuses everything. What a run reused (loops resumed from a checkpoint,
memo entries) is collected as it happens (core.context.collecting_reuse), stored in results.json (`reused`) and
named in one line at the end.

How a run stops (Ctrl-C, SIGTERM, an error: its folder marked unfinished, the one line that resumes it) is
core.stopping's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import NamedTuple

from omegaconf import DictConfig, OmegaConf

from core.claims import format_value
from core.config import RECORD_ONLY_KEYS, ConfigError, RunConfig, validate_run_config
from core.context import CODE_MANIFEST, RunContext, collecting_reuse, cpu_description, versions
from core.io import atomic_symlink
from core.paper import Paper, find_paper
from core.profile import profiling
from core.provenance import compute_units, units_fingerprint
from core.record import decide_record, declare, write_results
from core.report import SMOKE_NOTE, Report
from core.stopping import Stopping, stop_signals
from core.tracking import Tracker, activate, make_tracker

log = logging.getLogger(__name__)


COMPILE_CACHE = "jax_cache"  # <output_root>/jax_cache: JAX's persistent compilation cache, shared by every paper


def load_paper(module_name: str, paper: str) -> Paper:
    """Import the paper's package and return its protocol object (`PAPER = core.paper.Paper(...)`)."""
    try:
        return find_paper(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise ConfigError(f"paper {paper!r}: its package {module_name!r} (paper.module) does not exist") from e
        raise
    except TypeError as e:
        raise ConfigError(f"paper {paper!r}: {e}") from None


class Validated(NamedTuple):
    """A run's config once validated: the paper's protocol object, the typed config (what the run record holds and
    the checkpoint key hashes) and the config object `run` gets (`core.config.run_schema`)."""

    paper: Paper
    typed: DictConfig
    config: RunConfig


def prepare(cfg: DictConfig, paper: str) -> Validated:
    """Find the paper and validate the whole config against the shared and the paper's schemas (without JAX)."""
    module_name = OmegaConf.select(cfg, "paper.module") or f"papers.{paper}"
    spec = load_paper(module_name, paper)
    typed, obj = validate_run_config(cfg, paper, spec.Config)
    return Validated(spec, typed, obj)


def config_key(cfg: DictConfig) -> str:
    """A short hash of everything in the config that affects what the run computes."""
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(plain, dict)
    content = {k: v for k, v in plain.items() if k not in RECORD_ONLY_KEYS}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run(cfg: DictConfig, *, paper: str, run_dir: Path, validated: Validated | None = None) -> Report | None:
    """Run one paper's reproduction and write its record to `run_dir`; the report (None in the processes of a
    multi-process run other than the first, which write nothing). `validated`: `cfg` as the preflight already
    validated it (core.launch passes it for a plain run), so that it is not validated twice.

    A run stopped by Ctrl-C (or SIGTERM) raises `Interrupted`, whose message says what was kept and the command
    that resumes it; a run stopped by Ctrl-C or an error leaves its folder marked unfinished (`mark_unfinished`)."""
    from core.devices import initialize_distributed, is_main_process, use_true_fp32  # JAX: once a run starts

    run_dir = Path(run_dir)
    initialize_distributed()  # one of several processes: join them before any JAX work
    use_true_fp32()
    spec, typed, config = validated if validated is not None else prepare(cfg, paper)
    if typed.compile_cache:
        use_compile_cache(Path(typed.output_root) / COMPILE_CACHE)
    main = is_main_process()  # only process 0 of a multi-process run writes the record and logs
    run_dir.mkdir(parents=True, exist_ok=True)
    stop = Stopping(paper=paper, run_dir=run_dir, main=main, started=dt.datetime.now(dt.UTC))
    try:
        with stop_signals(), collecting_reuse() as reuse:
            stop.reuse = reuse
            return _run(spec, typed, config, paper, run_dir, main, stop)
    except KeyboardInterrupt as e:
        raise stop.interrupted(e) from None
    except BaseException as e:
        stop.failed(e)
        raise


def _run(spec: Paper, typed: DictConfig, config: RunConfig, paper: str, run_dir: Path, main: bool, stop: Stopping):
    """`run`'s work, telling `stop` the context and tracker as they are made (what a stopped run says and leaves)."""
    key = config_key(typed)
    units = compute_units(spec)  # the code `run` can reach (core.provenance), stored with the record
    code = units_fingerprint(units)
    checkpoints = Path(typed.output_root) / paper / "checkpoints"
    ctx = RunContext(
        paper=paper,
        run_dir=run_dir,
        checkpoint_dir=checkpoints / f"{key}-{code}",
        resume=bool(typed.resume),
        code=code,
        memo_dir=Path(typed.output_root) / paper / "memo",
    )
    stop.ctx = ctx
    if main:
        write_code_manifest(ctx.checkpoint_dir, paper, units)
    if ctx.resume:
        other = sorted(p.name for p in checkpoints.glob(f"{key}*") if p.name != f"{key}-{code}")
        if other:
            log.warning(
                "%d stored run(s) of this config were computed by other code (%s); this code (%s) recomputes "
                "rather than reuse them",
                len(other),
                ", ".join(other),
                code,
            )
    config_plain = OmegaConf.to_container(typed, resolve=True, enum_to_str=True)
    assert isinstance(config_plain, dict)
    tracker = (
        make_tracker(typed.logger, run_dir=run_dir, name=f"{paper}/{run_dir.name}", group=paper, config=config_plain)
        if main
        else Tracker()
    )
    stop.tracker = tracker
    t0 = time.perf_counter()
    log.info("paper %s, scale %s, seed %d -> %s", paper, typed.scale.name.value, int(typed.seed), run_dir)
    report = None
    declare(spec, config, run_dir if main else None)
    with activate(tracker), profiling() as prof:
        stop.profile = prof  # a run that stops early says where its time went in unfinished.json
        results = spec.compute(config, ctx)
    wall = time.perf_counter() - t0
    if main:
        write_results(
            run_dir, spec, typed, results, config_key=key, compute=code, units=units, started=stop.started,
            wall=wall, versions={**versions(), "cpu": cpu_description()}, reused=stop.reuse.record(),
            profile=prof.summary(), computed_on=device_text(),
        )  # fmt: skip
        figures: list = []
        report = decide_record(run_dir, figures_out=figures)
        for name, path, caption in figures:
            tracker.log_figure(name, path, caption)
        tracker.summary(
            {
                "wall_seconds": wall,
                "claims_holding": report.claims_holding,
                "claims_total": len(report.claims),
                **{f"claims/{k}": v for k, v in report.verdicts.items()},
                **{f"claim/{c.id}": c.verdict.value for c in report.claims},
                **report.metrics,
            }
        )
    stop.tracker = None
    tracker.finish(exit_code=0)
    if main and report is not None:
        atomic_symlink(run_dir, Path(typed.output_root) / paper / "latest")
        stop.finished = True
        print(summary_text(report, run_dir, wall, typed.scale.name.value))
        if stop.reuse.summary():
            print(stop.reuse.summary())
    return report


def device_text() -> str:
    """The devices the run computed on, for its record: 'cpu x2', 'gpu (NVIDIA H200) x1'."""
    import jax

    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    kind = "" if devices[0].platform == "cpu" else f" ({', '.join(kinds)})"
    return f"{devices[0].platform}{kind} x{len(devices)}"


def use_compile_cache(directory: Path) -> None:
    """Keep every compiled XLA program in `directory` (JAX's persistent compilation cache) and load it from there when
    a later run compiles the same program: the same executable, so the same values. JAX keys an entry by the
    program, the backend and the compile options, so programs of other code or another jaxlib never collide."""
    import jax

    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # every program, not only the slow ones
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def write_code_manifest(checkpoint_dir: Path, paper: str, units: dict[str, str]) -> None:
    """Write `checkpoint_dir/code.json`: the compute units (core.provenance.compute_units) of the code the run's
    checkpoints are made by, so that `make prune` can tell checkpoints made by other code."""
    from core.io import atomic_write_text, json_text

    path = checkpoint_dir / CODE_MANIFEST
    if not path.exists():
        atomic_write_text(path, json_text({"paper": paper, "units": units}))


def summary_text(report: Report, run_dir: Path, wall: float, scale: str = "") -> str:
    """The claims as a plain-text table for the terminal."""
    rows = [("claim", "paper", "ours", "verdict")]
    rows += [(c.id, format_value(c.paper), format_value(c.ours), c.verdict.value) for c in report.claims]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["", f"== {report.title} =="]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [f"{report.verdict_summary()} · {wall:.1f} s"]
    if scale == "smoke":
        lines += [SMOKE_NOTE]
    lines += [f"report: {run_dir / 'report.md'}"]
    return "\n".join(lines)

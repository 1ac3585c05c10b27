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

A run that stops early leaves its folder marked (`mark_unfinished`: `unfinished.json`, and its wandb run moved to
`wandb-unfinished/`, out of the README's `wandb sync` line) and never becomes `latest`. Stopped by Ctrl-C or SIGTERM,
it raises `Interrupted`, whose one line says where its work is kept and the command that resumes it, and which the
command line (`reports_interrupts`) prints instead of a traceback, exiting 130 (143 for SIGTERM).

One module over 400 lines: how a run stops is part of its life here (it needs the run's context, tracker, Hydra's
record of its command line and the record's files); it would move whole to a module of its own.
"""

from __future__ import annotations

import _thread
import contextlib
import datetime as dt
import functools
import hashlib
import json
import logging
import os
import shlex
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from core.claims import format_value
from core.config import ConfigError, RunConfig, validate_run_config
from core.context import Reuse, RunContext, collecting_reuse, versions
from core.io import atomic_symlink
from core.paper import Paper, find_paper
from core.provenance import REPO_ROOT, compute_units, units_fingerprint
from core.record import decide_record, declare, write_results
from core.report import SMOKE_NOTE, Report
from core.tracking import Tracker, activate, finish_within, make_tracker

log = logging.getLogger(__name__)


# Keys that change where or how a run is recorded but not what it computes: left out of the checkpoint key, so
# re-running with another logger or output root still resumes the same work.
_RECORD_ONLY_KEYS = ("logger", "output_root", "resume", "hydra")


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
    content = {k: v for k, v in plain.items() if k not in _RECORD_ONLY_KEYS}
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
    main = is_main_process()  # only process 0 of a multi-process run writes the record and logs
    run_dir.mkdir(parents=True, exist_ok=True)
    stop = _Stopping(paper=paper, run_dir=run_dir, main=main, started=dt.datetime.now(dt.UTC))
    try:
        with _stop_signals(), collecting_reuse() as reuse:
            stop.reuse = reuse
            return _run(spec, typed, config, paper, run_dir, main, stop)
    except KeyboardInterrupt as e:
        raise stop.interrupted(e) from None
    except BaseException as e:
        stop.failed(e)
        raise


def _run(spec: Paper, typed: DictConfig, config: RunConfig, paper: str, run_dir: Path, main: bool, stop: _Stopping):
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
    with activate(tracker):
        results = spec.compute(config, ctx)
    wall = time.perf_counter() - t0
    if main:
        write_results(
            run_dir, spec, typed, results, config_key=key, compute=code, units=units, started=stop.started,
            wall=wall, versions=versions(), reused=stop.reuse.record(),
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


# ---------------------------------------------------------------------------------------------- a run that stops


UNFINISHED = "unfinished.json"  # in the folder of a run stopped by Ctrl-C, SIGTERM or an error
WANDB_UNFINISHED = "wandb-unfinished"  # where such a run's `wandb/` folder goes, out of `wandb sync`'s way
NOTHING_KEPT = "interrupted before the run started; nothing was kept"
_TRACKER_SECONDS = 30.0  # the longest a stopped run waits for its tracker (wandb) to finish


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or SIGTERM, once its folder is marked unfinished: `message` is the one line that
    says so (what was kept, the command that resumes it) and `status` the exit status (128 + the signal's number:
    130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message, self.status = message, status


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so that it stops as Ctrl-C stops it."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


@contextlib.contextmanager
def _stop_signals():
    """Inside the with-block Ctrl-C and SIGTERM stop the run where it is:
    - SIGTERM raises as Ctrl-C does (`_Terminated`), where nothing else handles it (a job launcher such as
      submitit installs its own handler, which is left alone);
    - an interrupt that lands in a finaliser (an object's `__del__`, which Python does not let raise: it prints
      "Exception ignored in ..." and goes on) is raised again in the run's own code, so one Ctrl-C always stops it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_hook = sys.unraisablehook

    def interrupt_again(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # from another thread, a moment later: raised here it would land in the finaliser again
            signum = signal.SIGTERM if isinstance(unraisable.exc_value, _Terminated) else signal.SIGINT
            threading.Timer(0.01, _thread.interrupt_main, (signum,)).start()
        else:
            previous_hook(unraisable)

    sys.unraisablehook = interrupt_again
    ours = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if ours:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.unraisablehook = previous_hook


@contextlib.contextmanager
def _sigint_ignored():
    """Ctrl-C ignored inside the with-block: the short teardown of a stopped run (bounded by _TRACKER_SECONDS) is
    not itself cut short by a second press."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class _Stopping:
    """What a run that stops early says and leaves behind; filled in as the run gets its context and tracker."""

    paper: str
    run_dir: Path
    main: bool
    started: dt.datetime
    ctx: RunContext | None = None
    tracker: Tracker | None = None  # None once finished
    reuse: Reuse = field(default_factory=Reuse)
    finished: bool = False  # the record, report and `latest` are written

    def interrupted(self, e: KeyboardInterrupt) -> Interrupted:
        """Mark the run unfinished and return the Interrupted to raise."""
        signame, status = ("SIGTERM", 143) if isinstance(e, _Terminated) else ("SIGINT", 130)
        what = "terminated (SIGTERM)" if signame == "SIGTERM" else "interrupted"
        with _sigint_ignored():
            _close_bars()
            if self.finished:
                return Interrupted(f"{what} after the run finished; its record is complete: {self.run_dir}", status)
            command = rerun_command(self.paper, self.run_dir)
            kept = self.kept()
            if kept:
                message = f"{what}; kept {' and '.join(kept)}; resume with: {command}"
            else:
                message = f"{what}; nothing kept yet; start again with: {command}"
            self.stop(status, {"stopped": what, "signal": signame}, e, command)
        return Interrupted(message, status)

    def failed(self, e: BaseException) -> None:
        """Mark the run unfinished after an error (which the caller re-raises)."""
        with _sigint_ignored():
            command = rerun_command(self.paper, self.run_dir)
            self.stop(1, {"stopped": "failed", "error": f"{type(e).__name__}: {e}"}, e, command)
            if self.main:
                log.warning("the run stopped with an error; %s is marked unfinished (%s)", self.run_dir, UNFINISHED)

    def kept(self) -> list[str]:
        """What the run keeps for a later one to reuse: its checkpoints, and the memo store where it stored,
        started or reused work there."""
        kept = []
        if self.ctx is not None and self.ctx.checkpoint_dir is not None:
            files = (p for p in self.ctx.checkpoint_dir.rglob("*") if p.is_file() and p.name != CODE_MANIFEST)
            if self.ctx.checkpoint_dir.is_dir() and next(files, None) is not None:
                kept.append(f"checkpoints in {self.ctx.checkpoint_dir}")
        if self.ctx is not None and self.ctx.memo_dir is not None and (self.reuse.memo_kept or self.reuse.memo_reused):
            kept.append(f"memo entries in {self.ctx.memo_dir}")
        return kept

    def stop(self, exit_code: int, why: dict[str, Any], e: BaseException, command: str) -> None:
        """Finish the tracker with `exit_code`, move its wandb folder aside and write unfinished.json."""
        if self.tracker is not None:
            finish_within(self.tracker, exit_code, _TRACKER_SECONDS)
            self.tracker = None
        if not self.main or self.finished:
            return
        try:
            mark_unfinished(self.run_dir, {**why, **self.where_kept(e)}, command, self.started)
        except OSError as err:  # the message must still reach the terminal
            log.warning("could not mark %s unfinished: %s", self.run_dir, err)

    def where_kept(self, e: BaseException) -> dict[str, Any]:
        """unfinished.json's account of the kept work: where it stopped, each loop's newest checkpoint, the memo
        stages it stored work of and what it reused."""
        from core.checkpoint import Checkpointer  # JAX, which a run has loaded by now

        ckpt = None if self.ctx is None else self.ctx.checkpoint_dir
        steps = {}
        if ckpt is not None and ckpt.is_dir():
            for d in sorted({p.parent for p in ckpt.rglob("step_*.msgpack")}):
                latest = Checkpointer(d).latest_step()
                if latest is not None:
                    steps[str(d.relative_to(ckpt))] = latest
        return {
            "where": _where(e),
            "checkpoint_dir": None if ckpt is None else str(ckpt),
            "checkpoints": steps,
            "memo_dir": None if self.ctx is None or self.ctx.memo_dir is None else str(self.ctx.memo_dir),
            "memo_stored": dict(self.reuse.memo_kept),
            "reused": self.reuse.record(),
        }


def mark_unfinished(run_dir: Path, why: dict[str, Any], command: str, started: dt.datetime) -> Path:
    """Mark a run folder as one that did not finish: write `unfinished.json` (atomically: when and why it stopped,
    where its work is kept, the command that resumes it) and move its `wandb/` folder to `wandb-unfinished/`, so
    that `wandb sync <run dir>/wandb/offline-run-*` uploads only finished runs (the offline run inside keeps its
    name: `wandb sync <run dir>/wandb-unfinished/offline-run-*` uploads it on purpose)."""
    from core.io import atomic_write_json

    run_dir = Path(run_dir)
    wandb_dir = run_dir / "wandb"
    moved = None
    if wandb_dir.is_dir():
        moved = run_dir / WANDB_UNFINISHED
        os.rename(wandb_dir, moved)
    now = dt.datetime.now(dt.UTC)
    info = {
        **why,
        "stopped_at": now.isoformat(timespec="seconds"),
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((now - started).total_seconds(), 1),
        "resume": command,
        "wandb": None if moved is None else str(moved),
    }
    return atomic_write_json(run_dir / UNFINISHED, info)


def _where(e: BaseException) -> str | None:
    """The innermost line of this repository's code the exception passed through ('path:line in function')."""
    where = None
    for frame, line in traceback.walk_tb(e.__traceback__):
        path = Path(frame.f_code.co_filename)
        if frame.f_code is _raise_terminated.__code__ or not path.is_relative_to(REPO_ROOT):
            continue
        rel = path.relative_to(REPO_ROOT)
        if rel.parts[0] != ".venv":
            where = f"{rel}:{line} in {frame.f_code.co_name}"
    return where


def _close_bars() -> None:
    """Close the progress bars a stopped loop left open, so that each ends its line before the message, and none is
    redrawn after it when the process exits."""
    try:
        from tqdm import tqdm

        for bar in list(getattr(tqdm, "_instances", ())):
            bar.close()
    except Exception:  # a bar that cannot close must not hide the message
        pass


def rerun_command(paper: str, run_dir: Path) -> str:
    """The command line that runs `paper`'s run in `run_dir` again, resuming its kept work: the overrides Hydra
    recorded for it (a sweep's job: the sweep's), without any `resume=` (resuming is the default), as `make reproduce
    PAPER=<paper> ARGS="..."` for a paper of configs/paper, else `python scripts/reproduce.py ...`."""
    overrides, multirun = _recorded_overrides(paper, Path(run_dir))
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] not in ("resume", "hydra.mode")]
    args = ["-m", *kept] if multirun else kept
    rest = [o for o in args if o != f"paper={paper}"]
    if len(rest) == len(args) - 1 and (REPO_ROOT / "configs" / "paper" / f"{paper}.yaml").is_file():
        if not rest:
            return f"make reproduce PAPER={paper}"
        text = shlex.join(rest).replace("$", "$$")  # make reads `$` in ARGS as its own: `$$` passes one on
        quoted = "".join("\\" + c if c in '"\\$`' else c for c in text)  # inside the shell's double quotes
        return f'make reproduce PAPER={paper} ARGS="{quoted}"'
    return shlex.join(["python", "scripts/reproduce.py", *args])


def _recorded_overrides(paper: str, run_dir: Path) -> tuple[list[str], bool]:
    """(the command line's overrides, whether it was a sweep) as Hydra recorded them: in this process where Hydra
    runs the job (a sweep's from its multirun.yaml), else from the run folder's `.hydra/overrides.yaml`; else only
    `paper=<paper>`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    def plain(node: Any) -> list[str]:
        return [str(o) for o in OmegaConf.to_container(node, resolve=False) or []]

    if HydraConfig.initialized():
        hc = HydraConfig.get()
        if hc.mode == RunMode.MULTIRUN:
            sweep = Path(hc.sweep.dir) / "multirun.yaml"
            if sweep.is_file():
                recorded = OmegaConf.load(sweep).hydra.overrides
                return plain(recorded.task) + plain(recorded.hydra), True
            return plain(hc.overrides.task) + plain(hc.overrides.hydra), False  # rerun this job alone
        return plain(hc.overrides.task) + plain(hc.overrides.hydra), False
    path = run_dir / ".hydra" / "overrides.yaml"
    if path.is_file():
        return plain(OmegaConf.load(path)), False
    return [f"paper={paper}"], False


def reports_interrupts(main: Callable[..., int]) -> Callable[..., int]:
    """The command line's entry point `main`, where an interrupt prints one line to stderr instead of a traceback
    and returns the exit status: an interrupted run's `Interrupted` message (130; 143 for SIGTERM), or, where
    Ctrl-C came before the run had kept anything, NOTHING_KEPT (130)."""

    @functools.wraps(main)
    def wrapped(*args: Any, **kwargs: Any) -> int:
        try:
            return main(*args, **kwargs)
        except Interrupted as e:
            print(e.message, file=sys.stderr)
            return e.status
        except KeyboardInterrupt:
            _close_bars()
            print(NOTHING_KEPT, file=sys.stderr)
            return 130

    return wrapped


CODE_MANIFEST = "code.json"  # in a run's checkpoint directory: the units of the code that computes it (`make prune`)


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

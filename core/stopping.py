"""How a run stops (core.runner's `run` uses it): Ctrl-C or SIGTERM raise where the run is (`stop_signals`), a run
that stops early leaves its folder marked (`mark_unfinished`: `unfinished.json`, and its wandb run moved to
`wandb-unfinished/`, out of the README's `wandb sync` line) and never becomes `latest`; stopped by a signal it
raises `Interrupted`, whose one line says where its work is kept and the command that resumes it (`rerun_command`),
and which the command line (`reports_interrupts`) prints instead of a traceback, exiting 130 (143 for SIGTERM).
`Stopping` is what `run` tells this module as the run's context and tracker are made."""

from __future__ import annotations

import _thread
import contextlib
import datetime as dt
import functools
import logging
import os
import shlex
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from core.context import CODE_MANIFEST, Reuse, RunContext
from core.provenance import REPO_ROOT
from core.tracking import Tracker, finish_within

log = logging.getLogger(__name__)


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
def stop_signals():
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
class Stopping:
    """What a run that stops early says and leaves behind; filled in as the run gets its context and tracker."""

    paper: str
    run_dir: Path
    main: bool
    started: dt.datetime
    ctx: RunContext | None = None
    tracker: Tracker | None = None  # None once finished
    reuse: Reuse = field(default_factory=Reuse)
    finished: bool = False  # the record, report and `latest` are written
    profile: Any = None  # the run's core.profile.Profile: where its time went until it stopped

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
            "profile": None if self.profile is None else self.profile.summary(),
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

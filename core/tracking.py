"""Metric and figure logging: wandb (offline by default) or nothing.

Paper code logs through the module-level functions, which route to the tracker of the active run and do
nothing outside a run (in tests, or when a paper's functions are called as a library):

    from core.tracking import log_metrics
    log_metrics({"train/loss": loss, "train/bpc": bpc}, step=step, axis="fp32_unit")

With an `axis`, metrics are logged as `<axis>/<name>` against the axis' own step `<axis>/step`: several loops of
one run (the arms of a paper) each count their steps from 1, which wandb's single global step would refuse.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Tracker:
    """Logs nothing. The base of the real trackers and the tracker of `logger=none`."""

    run_path: Path | None = None

    def log(self, metrics: Mapping[str, Any], step: int | None = None, axis: str | None = None) -> None:
        pass

    def log_figure(self, name: str, path: Path, caption: str = "") -> None:
        pass

    def summary(self, values: Mapping[str, Any]) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        pass


class WandbTracker(Tracker):
    """A wandb run. Offline mode writes `<run_dir>/wandb/offline-run-*`; `wandb sync` uploads it later."""

    def __init__(
        self,
        *,
        run_dir: Path,
        project: str,
        name: str,
        config: dict[str, Any],
        mode: str = "offline",
        entity: str | None = None,
        tags: list[str] | None = None,
        group: str | None = None,
    ):
        import wandb  # imported here: it is slow to import and `logger=none` must not need it

        self._wandb = wandb
        self._run = wandb.init(
            project=project,
            entity=entity,
            name=name,
            group=group,
            tags=tags or None,
            config=config,
            dir=str(run_dir),
            mode=mode,
            reinit="create_new",
            settings=wandb.Settings(
                console="off",  # the run directory already keeps the log; no stdout capture
                silent=True,
                x_disable_stats=True,  # no system-metrics sampling thread
                disable_git=True,
                save_code=False,
            ),
        )
        self._axes: set[str] = set()
        run_path = getattr(self._run, "dir", None)
        self.run_path = Path(run_path).parent if run_path else None

    def log(self, metrics: Mapping[str, Any], step: int | None = None, axis: str | None = None) -> None:
        clean = {k: v for k, v in ((k, _scalar(v)) for k, v in metrics.items()) if v is not None}
        if axis is None:
            self._run.log(clean, step=step)
            return
        if axis not in self._axes:
            self._run.define_metric(f"{axis}/step")
            self._run.define_metric(f"{axis}/*", step_metric=f"{axis}/step")
            self._axes.add(axis)
        self._run.log({f"{axis}/step": step, **{f"{axis}/{k}": v for k, v in clean.items()}})

    def log_figure(self, name: str, path: Path, caption: str = "") -> None:
        self._run.log({f"figures/{name}": self._wandb.Image(str(path), caption=caption or None)})

    def summary(self, values: Mapping[str, Any]) -> None:
        for k, v in values.items():
            self._run.summary[k] = _scalar(v) if _scalar(v) is not None else v

    def finish(self, exit_code: int = 0) -> None:
        self._run.finish(exit_code=exit_code)


def finish_within(tracker: Tracker, exit_code: int, seconds: float = 30.0) -> bool:
    """Finish `tracker` with `exit_code`, waiting at most `seconds` for it (a run stopped by Ctrl-C may have left
    wandb mid-message, and an online run's upload may be slow): False, with a warning, where it did not finish in
    time or failed. It finishes in a thread of its own, which the process does not wait for when it exits."""
    outcome: list[BaseException | None] = []

    def finish() -> None:
        try:
            tracker.finish(exit_code=exit_code)
            outcome.append(None)
        except Exception as e:  # a tracker that cannot finish must not hide why the run stopped
            outcome.append(e)

    thread = threading.Thread(target=finish, name="tracker-finish", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        log.warning("the tracker did not finish within %.0f s; not waiting for it", seconds)
        return False
    if outcome[0] is not None:
        log.warning("the tracker could not finish: %s", outcome[0])
        return False
    return True


def _scalar(v: Any) -> float | int | None:
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int | float):
        return v
    return None


def make_tracker(logger_cfg: Any, *, run_dir: Path, name: str, group: str, config: dict[str, Any]) -> Tracker:
    """The tracker a run's `logger` config asks for."""
    name_, mode = (getattr(v, "value", v) for v in (logger_cfg.name, logger_cfg.mode))
    if name_ == "none" or mode == "disabled":
        return Tracker()
    os.environ.setdefault("WANDB_SILENT", "true")
    return WandbTracker(
        run_dir=run_dir,
        project=logger_cfg.project,
        entity=logger_cfg.entity,
        tags=list(logger_cfg.tags),
        name=name,
        group=group,
        config=config,
        mode=mode,
    )


_NO_TRACKER = Tracker()
_ACTIVE: contextvars.ContextVar[Tracker | None] = contextvars.ContextVar("active_tracker", default=None)


@contextlib.contextmanager
def scoped(var: contextvars.ContextVar, value):
    """Set a context variable for the duration of a with-block."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def activate(tracker: Tracker):
    """Route the module-level logging functions to `tracker` inside the with-block."""
    return scoped(_ACTIVE, tracker)


def active_tracker() -> Tracker:
    return _ACTIVE.get() or _NO_TRACKER


def log_metrics(metrics: Mapping[str, Any], step: int | None = None, axis: str | None = None) -> None:
    """Log scalar metrics to the active run (no-op outside a run). Non-scalar values are skipped. With `axis`, the
    metrics are `<axis>/<name>` plotted against `<axis>/step` (one axis per training loop)."""
    active_tracker().log(metrics, step=step, axis=axis)

"""The one training loop every paper uses.

    state, history = ..., fit(step, state, batch_of, steps=1000, evaluate=valid_loss, eval_every=100,
                              checkpoint_dir=run.checkpoint_dir / "arm", resume=run.resume, name="arm")

`fit` runs `state, metrics = step(state, batch_of(k))` for k = 0 .. steps-1 and around it does what every paper's
loop needs, each on its own cadence:

- train metrics (the step's scalars, or per-seed vectors when seeds are vmapped) averaged over `log_every` steps;
- evaluation (`evaluate(state) -> {name: value}`) every `eval_every` steps and at the last step;
- checkpoints every `checkpoint_every` steps and at the last step, holding the state, the history, the
  partial averages and the timers, so that a killed run resumes to exactly the numbers of an uninterrupted one
  (given that `batch_of(k)` depends only on k: every batch is replayable);
- timing that leaves compilation out: a step's time is dispatch to completion of `step`, without building its batch;
  the first `untimed` steps after every (re)start compile and are not counted;
- a History (one record per logged step: step, compile-free training seconds so far, metrics) that is saved with
  the checkpoint, and every record sent to the run's tracker (wandb) under the loop's `name`;
- a tqdm bar with the rate and the latest metrics (or an outer bar shared by several loops);
- a resume says so: one log line, "<name>: resumed from step N of M (checkpoint <dir>)", also noted in the run's
  record of what it reused (core.context.note_resumed);
- counters of the work done (`count(batch) -> {"tokens": ...}`), summed over all steps and over the timed ones, so
  rates (tokens/s) use the same compile-free time.

A step that skips non-finite updates reports it in the metric `skipped` (0 or 1, or per seed); the loop sums it
instead of averaging it. `fit_seeds` trains several seeds of one arm: together under `jax.vmap` where the model
allows, else one after the other; either way the history holds per-seed lists.

One module over 400 lines: the loop, its history and cadences, resume and the per-seed vmap are one training
loop that every paper calls; the pieces share its state and checkpoint layout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.checkpoint import Checkpointer
from core.context import note_resumed
from core.devices import is_main_process, to_host
from core.numerics import all_finite
from core.progress import progress
from core.tracking import log_metrics

SKIPPED = "skipped"  # the step metric that counts updates skipped for non-finite gradients (summed, not averaged)

Metrics = Mapping[str, Any]


# ---------------------------------------------------------------------------------------------- the history


@dataclass
class History:
    """What a loop measured: one record per logged or evaluated step, `{"step", "seconds", "metrics"}`.

    `seconds` is the compile-free training time up to that step; metric values are floats, or lists with one value
    per seed. Custom series (e.g. scaling statistics every k steps) go through `note`.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)

    def add(self, step: int, seconds: float, metrics: Metrics) -> None:
        clean = {k: _plain(v) for k, v in metrics.items()}
        if self.records and self.records[-1]["step"] == step:
            self.records[-1]["metrics"].update(clean)
            self.records[-1]["seconds"] = seconds
        else:
            self.records.append({"step": int(step), "seconds": float(seconds), "metrics": clean})

    def note(self, series: str, step: int, value: Any) -> None:
        """Keep `value` (anything JSON-able) under `series` for `step`."""
        self.notes.setdefault(series, []).append((int(step), _plain(value)))

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of every record holding `key`; values [records] or [records, seeds]."""
        rows = [(r["step"], r["metrics"][key]) for r in self.records if key in r["metrics"]]
        if not rows:
            return np.zeros(0, int), np.zeros(0)
        steps, values = zip(*rows, strict=True)
        return np.asarray(steps), np.asarray(values, np.float64)

    def last(self, key: str) -> Any:
        """The latest value of `key` (a float or per-seed list); KeyError if it was never recorded."""
        for r in reversed(self.records):
            if key in r["metrics"]:
                return r["metrics"][key]
        raise KeyError(f"no record holds the metric {key!r}; recorded: {sorted(self.keys())}")

    def keys(self) -> set[str]:
        return {k for r in self.records for k in r["metrics"]}

    def to_json(self) -> dict[str, Any]:
        return {"records": self.records, "notes": {k: [list(x) for x in v] for k, v in self.notes.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> History:
        notes = {k: [(int(s), v) for s, v in rows] for k, rows in data.get("notes", {}).items()}
        return cls([dict(r) for r in data.get("records", [])], notes)


def _plain(v: Any) -> Any:
    """Metric values as JSON-able floats / lists (NaN and Inf stay floats; the checkpoint metadata is JSON)."""
    a = np.asarray(v)
    if a.dtype == object:
        return v
    if a.ndim == 0:
        return float(a) if a.dtype.kind in "fiub" else a.item()
    return a.astype(np.float64).tolist() if a.dtype.kind in "fiub" else a.tolist()


# ---------------------------------------------------------------------------------------------- the loop


@dataclass
class Fit:
    """What `fit` returns: the final state and what the loop measured (over every resumed run of it)."""

    state: Any
    history: History
    steps: int
    resumed_from: int = 0  # the step this process started from (0: a fresh start; `steps`: it was already done)
    train_seconds: float = 0.0  # compile-free step time over the timed steps
    wall_seconds: float = 0.0  # the loop's whole time: steps, batches, evaluations, checkpoints, compilation
    counts: dict[str, float] = field(default_factory=dict)  # `count(batch)` summed over every step
    timed_counts: dict[str, float] = field(default_factory=dict)  # ... over the timed steps only
    timed_steps: int = 0
    skipped: Any = 0  # updates skipped for non-finite gradients (per seed when vmapped)

    def rate(self, counter: str | None = None) -> float:
        """Steps (or `counter` units) per compile-free second; NaN when no step was timed."""
        work = self.timed_steps if counter is None else self.timed_counts.get(counter, 0.0)
        return work / self.train_seconds if self.train_seconds > 0 else math.nan


def every(n: int, steps: int) -> Callable[[int], bool]:
    """True at multiples of n and at the last step; n = 0: only at the last step."""
    return lambda done: done == steps or (n > 0 and done % n == 0)


def fit(
    step: Callable[[Any, Any], tuple[Any, Metrics]],
    state: Any,
    batch_of: Callable[[int], Any],
    *,
    steps: int,
    evaluate: Callable[[Any], Metrics] | None = None,
    eval_every: int | Callable[[int], bool] = 0,
    eval_at_start: bool = False,
    log_every: int | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    name: str = "train",
    bar: Any = None,
    count: Callable[[Any], Mapping[str, float]] | None = None,
    on_step: Callable[[int, Any, Metrics, History], None] | None = None,
    untimed: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> Fit:
    """Train `state` for `steps` steps (see the module docstring); returns the final state and the measurements.

    `eval_every` is a step interval (0: only at the end) or a predicate on the number of steps done;
    `log_every` defaults to the evaluation interval (train metrics averaged between evaluations).
    `on_step(done, state, metrics, history)` runs after every step with that step's metrics (which may hold more than
    scalars), for series of its own (`history.note`).
    `bar`: an outer tqdm bar to advance instead of a bar of the loop's own.
    `clock`: seconds now (time.perf_counter; tests inject a fake one instead of sleeping).
    """
    if steps < 0:
        raise ValueError(f"fit: steps must be >= 0, got {steps}")
    for key, value in (("checkpoint_every", checkpoint_every), ("untimed", untimed)):
        if value < 0:
            raise ValueError(f"fit: {key} must be >= 0, got {value}")
    evaluating = eval_every if callable(eval_every) else every(int(eval_every), steps)
    if log_every is None:
        logging = evaluating
    else:
        if log_every < 0:
            raise ValueError(f"fit: log_every must be >= 0, got {log_every}")
        logging = every(log_every, steps)
    saving = every(checkpoint_every, steps)

    t_start = clock()
    history, acc = History(), _Accumulator()
    out = Fit(state, history, steps)
    ckpt = Checkpointer(checkpoint_dir, keep=1) if checkpoint_dir is not None else None
    start = 0
    if ckpt is not None and resume and ckpt.latest_step() is not None:
        start, restored, meta = ckpt.restore(state)
        state = _place_like(state, restored)
        history = History.from_json(meta["history"])
        acc = _Accumulator.from_json(meta["accumulator"])
        for key in ("train_seconds", "wall_seconds", "timed_steps", "counts", "timed_counts", "skipped"):
            setattr(out, key, meta["timers"][key])
        out.history = history
        note_resumed(name, start, steps, ckpt.directory)  # one log line, and the run's record of what it reused
    elif ckpt is not None and is_main_process():
        ckpt.clear()  # a fresh start: an older run's checkpoints must not be resumed later
    out.resumed_from = start
    wall_before = out.wall_seconds

    own_bar = bar is None
    if own_bar:
        bar = progress(total=steps, initial=start, desc=name, unit="step")
    elif start:
        bar.update(start)

    def record(done: int, metrics: Metrics) -> None:
        history.add(done, out.train_seconds, metrics)
        means = {k: float(np.mean(v)) for k, v in metrics.items() if _is_number(v)}
        log_metrics(means, step=done, axis=name)
        if means:
            bar.set_postfix({k.split("/")[-1]: f"{v:.4g}" for k, v in list(means.items())[-3:]}, refresh=False)

    if start == 0 and eval_at_start and evaluate is not None and steps > 0:
        record(0, evaluate(state))
    for k in range(start, steps):
        batch = batch_of(k)
        t = clock()
        state, metrics = step(state, batch)
        metrics = to_host(metrics)  # waits for the step: its time is the step's, not the next batch's
        seconds = clock() - t
        done = k + 1
        work = dict(count(batch)) if count is not None else {}
        _add(out.counts, work)
        if k - start >= untimed:
            out.train_seconds += seconds
            out.timed_steps += 1
            _add(out.timed_counts, work)
        acc.add(metrics)
        if SKIPPED in metrics:
            out.skipped = _plain(np.asarray(out.skipped) + np.asarray(metrics[SKIPPED]))
        bar.update(1)
        if on_step is not None:
            on_step(done, state, metrics, history)
        logged = {}
        if logging(done):
            logged.update(acc.means())
            acc = _Accumulator()
        if evaluate is not None and evaluating(done):
            logged.update(evaluate(state))
        if logged:
            record(done, logged)
        if ckpt is not None and saving(done):
            out.wall_seconds = wall_before + clock() - t_start
            timers = {key: getattr(out, key) for key in ("train_seconds", "wall_seconds", "timed_steps")}
            timers |= {"counts": out.counts, "timed_counts": out.timed_counts, "skipped": out.skipped}
            meta = {"history": history.to_json(), "accumulator": acc.to_json(), "timers": timers}
            host = to_host(state)  # every process takes part in gathering a state spread over several
            if is_main_process():
                ckpt.save(done, host, meta)
    if own_bar:
        bar.close()
    out.state = state
    out.wall_seconds = wall_before + clock() - t_start
    return out


def _is_number(v: Any) -> bool:
    a = np.asarray(v)
    return a.dtype.kind in "fiub" and a.ndim <= 1


def _add(total: dict[str, float], work: Mapping[str, float]) -> None:
    for k, v in work.items():
        total[k] = total.get(k, 0.0) + float(v)


def _place_like(like: Any, restored: Any) -> Any:
    """A restored (numpy) state on the devices and shardings of the freshly initialised one. A leaf the fresh state
    left uncommitted (an optimiser's step count, made without a device) stays uncommitted, so that it may meet
    arrays sharded over a mesh in the step as the fresh one did (committed to one device, it could not)."""

    def put(ref, x):
        if not isinstance(ref, jax.Array):
            return x
        return jax.device_put(x, ref.sharding) if ref.committed else jnp.asarray(x, dtype=ref.dtype)

    return jax.tree.map(put, like, restored)


class _Accumulator:
    """Running sums of the step metrics between two logged steps (JSON-able, so it is checkpointed too)."""

    def __init__(self, sums: dict[str, Any] | None = None, count: int = 0):
        self.sums, self.count = sums or {}, count

    def add(self, metrics: Metrics) -> None:
        for k, v in metrics.items():
            if _is_number(v):
                v = np.asarray(v, np.float64)
                self.sums[k] = self.sums[k] + v if k in self.sums else v
        self.count += 1

    def means(self) -> dict[str, Any]:
        if not self.count:
            return {}
        return {f"train/{k}": v if k == SKIPPED else v / self.count for k, v in self.sums.items()}

    def to_json(self) -> dict[str, Any]:
        return {"sums": {k: _plain(v) for k, v in self.sums.items()}, "count": self.count}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Accumulator:
        return cls({k: np.asarray(v, np.float64) for k, v in data["sums"].items()}, int(data["count"]))


# ---------------------------------------------------------------------------------------------- seeds


def stack(trees: Sequence[Any]) -> Any:
    """Pytrees of equal structure stacked on a new leading axis (numpy)."""
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def fit_seeds(
    seeds: Sequence[int],
    init: Callable[[Any], Any],
    step: Callable[[Any, Any], tuple[Any, Metrics]],
    batch_of: Callable[[int, int], Any],
    *,
    vmap: bool = True,
    evaluate: Callable[[Any], Metrics] | None = None,
    checkpoint_dir: str | Path | None = None,
    **loop: Any,
) -> Fit:
    """Train one arm from every seed in `seeds`: `init(seed)`, `step(state, batch)`, `batch_of(seed, k)`.

    vmap=True trains them together: init and step are vmapped over the seeds (the step is jitted), batches stacked;
    `evaluate` then receives the stacked state and returns per-seed values. vmap=False trains them in turn (each
    with its checkpoints in `checkpoint_dir/seed_<s>`), with `evaluate(state)` per seed; the returned Fit holds the
    stacked final states and a history whose metrics are per-seed lists, as under vmap.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("fit_seeds: no seeds given")
    if vmap:
        state = jax.vmap(init)(np.asarray(seeds))
        return fit(
            jax.jit(jax.vmap(step)),
            state,
            lambda k: stack([batch_of(s, k) for s in seeds]),
            evaluate=evaluate,
            checkpoint_dir=checkpoint_dir,
            **loop,
        )
    jitted = jax.jit(step)
    runs = [
        fit(
            jitted,
            init(s),
            lambda k, s=s: batch_of(s, k),
            evaluate=evaluate,
            checkpoint_dir=None if checkpoint_dir is None else Path(checkpoint_dir) / f"seed_{s}",
            **{**loop, "name": f"{loop.get('name', 'train')}/seed_{s}"},
        )
        for s in seeds
    ]
    return _merge(runs)


def _merge(runs: list[Fit]) -> Fit:
    """Per-seed fits as one: states stacked, each record's metrics as per-seed lists, timers summed."""
    first = runs[0]
    history = History()
    for i, rec in enumerate(first.history.records):
        metrics = {k: [r.history.records[i]["metrics"][k] for r in runs] for k in rec["metrics"]}
        history.add(rec["step"], sum(r.history.records[i]["seconds"] for r in runs), metrics)
    for series, rows in first.history.notes.items():
        for j, (s, _) in enumerate(rows):
            history.note(series, s, [r.history.notes[series][j][1] for r in runs])
    counts: dict[str, float] = {}
    timed: dict[str, float] = {}
    for r in runs:
        _add(counts, r.counts)
        _add(timed, r.timed_counts)
    return Fit(
        state=stack([r.state for r in runs]),
        history=history,
        steps=first.steps,
        resumed_from=min(r.resumed_from for r in runs),
        train_seconds=sum(r.train_seconds for r in runs),
        wall_seconds=sum(r.wall_seconds for r in runs),
        counts=counts,
        timed_counts=timed,
        timed_steps=sum(r.timed_steps for r in runs),
        skipped=[r.skipped for r in runs],
    )


# ---------------------------------------------------------------------------------------------- steps


def optimizer_step(
    loss_fn: Callable[..., Any],
    optimizer: optax.GradientTransformation,
    *,
    has_aux: bool = False,
    skip_nonfinite: bool = False,
) -> Callable[[dict, Any], tuple[dict, dict]]:
    """The plain step on a state {"params", "opt"}: value_and_grad of `loss_fn(params, batch)`, one optimizer
    update. Metrics: {"loss": ...} plus the aux dict when `has_aux`. With `skip_nonfinite`, a step whose gradients
    hold a NaN or Inf changes nothing (`if_finite`) and reports `skipped`."""

    def step(state: dict, batch: Any) -> tuple[dict, dict]:
        out, grads = jax.value_and_grad(loss_fn, has_aux=has_aux)(state["params"], batch)
        loss, aux = out if has_aux else (out, {})
        updates, opt = optimizer.update(grads, state["opt"], state["params"])
        new = {"params": optax.apply_updates(state["params"], updates), "opt": opt}
        metrics = {"loss": loss, **aux}
        if skip_nonfinite:
            finite = all_finite(grads)
            new = if_finite(finite, new, state)
            metrics[SKIPPED] = (~finite).astype(jnp.int32)
        return new, metrics

    return step


def init_state(params: Any, optimizer: optax.GradientTransformation) -> dict:
    """The state `optimizer_step` trains: {"params", "opt"}."""
    return {"params": params, "opt": optimizer.init(params)}


def if_finite(finite: jax.Array, new: Any, old: Any) -> Any:
    """`new` if `finite` (every gradient of the step was finite), else `old`: a skipped step changes nothing, neither
    the parameters nor the optimizer's moments and step count. Report `(~finite)` as the step's `skipped` metric."""
    return jax.tree.map(lambda a, b: jnp.where(finite, a, b), new, old)


__all__ = [
    "SKIPPED",
    "Fit",
    "History",
    "every",
    "fit",
    "fit_seeds",
    "if_finite",
    "init_state",
    "optimizer_step",
    "stack",
]

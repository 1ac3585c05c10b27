"""Where a run's time goes: a time profile measured while the run computes, stored in its record (results.json
`profile`) and shown in its report and README.

    with profiling() as prof:          # the runner wraps a paper's compute in it
        results = paper.compute(config, ctx)
    prof.summary()                     # {"wall_seconds", "compilations", "phases", "cores", ...}

Three measurements, none of which needs a line in the code that computes (so no result goes stale when this module
or its rules change: core.provenance.NOT_COMPUTING names it):

1. **Compilations**: JAX's monitoring events. Every XLA compilation JAX asks for is one backend-compile event
   (its seconds; a hit in the persistent compilation cache is one too, and is counted apart as a cache hit), tracing
   and lowering to MLIR are events of their own. Compilations are counted per jitted function's name, so a function
   compiled once per seed shows as such.
2. **Phases**: a sampler thread reads the main thread's stack every `interval` seconds and files the sample under
   the first phase of `PHASES` one of whose rules matches a frame on the stack: compilation (JAX tracing, lowering
   or compiling), io (checkpoints, kept values, files), data (making or loading datasets and features), evaluation,
   training, else other. Each phase's seconds are its share of samples times the wall time; its commonest project
   functions (the innermost frame under core, papers or ipu_model) are named with their shares, so "other" says
   what it is.
3. **Cores**: the process's CPU seconds (user and system, every thread, and waited-for child processes) against
   the wall time times the cores it may use: the share of the machine the run left idle.
4. **The machine's speed** at the start and the end (`machine_speed`: a fixed float32 matrix product on every core
   and a fixed pure-Python loop, about half a second each time): the same code on the same kind of machine ran
   about 35% slower in one session than in the one before, so minutes from different days compare only through these.

The sampler holds the GIL for a few microseconds per sample (20 samples a second by default): the run's own
timings (compile-free step times, throughput) are not moved by it beyond their noise.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

INTERVAL = 0.05  # seconds between samples of the main thread's stack
PROJECT = ("core", "papers", "ipu_model")  # top-level packages whose functions a phase names
TOP = 5  # functions named per phase
COMPILED_TOP = 10  # jitted functions, and the project functions that compiled, named

# (phase, module prefixes, function-name prefixes), several rules per phase allowed: a frame matches a rule when its
# module starts with one of the module prefixes (empty: any module) and its function's name with one of the name
# prefixes (empty: any name). A sample goes to the first phase (in PHASE_NAMES' order) any frame of its stack
# matches, so compiling inside an evaluation is compilation.
PHASES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "compilation",
        (
            "jax._src.compiler",
            "jax._src.interpreters.mlir",
            "jax._src.interpreters.partial_eval",
            "jax._src.interpreters.pxla",
        ),
        ("compile", "backend_compile", "lower", "jaxpr_subcomp", "trace_to_jaxpr", "_to_jaxpr"),
    ),
    (
        "io",
        ("core.checkpoint", "core.io", "orbax", "pyarrow", "papers.qm1b.dft.store", "pickle", "json"),
        (),
    ),
    # a kept stage (core.memo.kept) computes inside core.memo: only its reading and writing are io
    ("io", ("core.memo",), ("_read", "_write", "_install", "store_value", "lookup")),
    (
        "data",
        (
            "core.data",
            "core.packing",
            "papers.bess.kg",
            "papers.bess.data",
            "papers.gps.features",
            "papers.gps.graphs",
            "papers.gps.cache",
            "papers.gps.batching",
            "papers.qm1b.generate",
            "papers.qm1b.label",
            "papers.sparq.tasks",
            "qm9pack",
            "rdkit",
            "tokenizers",
        ),
        (),
    ),
    ("evaluation", ("papers.prng.battery", "papers.bess.ranking"), ()),
    ("evaluation", PROJECT, ("evaluat", "valid", "rank", "compiled_loss", "test_")),
    ("training", PROJECT, ("fit", "train")),
)
OTHER = "other"
PHASE_NAMES = (*dict.fromkeys(p for p, _, _ in PHASES), OTHER)  # in order, each once

# JAX's monitoring events (jax._src.dispatch's names)
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
CACHE_HIT = "/jax/compilation_cache/cache_hits"


def _matches(module: str, function: str) -> str | None:
    for phase, modules, names in PHASES:
        if (not modules or module.startswith(modules)) and (not names or function.startswith(names)):
            return phase
    return None


def classify(frames: list[tuple[str, str]]) -> tuple[str, str | None]:
    """The phase of one sample, from its stack as (module, function) pairs outermost first, and the innermost
    project function on it ("module:function"; None when there is none)."""
    found = [_matches(m, f) for m, f in frames]
    order = {p: i for i, p in enumerate(PHASE_NAMES)}
    phase = min((p for p in found if p is not None), key=order.__getitem__, default=OTHER)
    where = next((f"{m}:{f}" for m, f in reversed(frames) if m.split(".", 1)[0] in PROJECT), None)
    return phase, where


def _stack(frame: Any) -> list[tuple[str, str]]:
    out = []
    while frame is not None:
        out.append((frame.f_globals.get("__name__", ""), frame.f_code.co_name))
        frame = frame.f_back
    out.reverse()
    return out


@dataclass
class Profile:
    """What `profiling` measured; `summary()` is the record's form."""

    interval: float = INTERVAL
    started: float = field(default_factory=time.perf_counter)
    wall: float | None = None
    samples: Counter = field(default_factory=Counter)  # phase -> samples
    where: dict[str, Counter] = field(default_factory=dict)  # phase -> {function: samples}
    compiles: Counter = field(default_factory=Counter)  # jitted function's name -> backend compilations
    compiled_from: Counter = field(default_factory=Counter)  # the project function that called -> compilations
    compile_seconds_from: Counter = field(default_factory=Counter)  # the same -> seconds compiling (the top named)
    compile_seconds: float = 0.0
    trace_seconds: float = 0.0
    lower_seconds: float = 0.0
    cache_hits: int = 0
    cpu_start: float = 0.0  # the process's CPU seconds when the profile started
    cpu_seconds: float | None = None
    cores: int = field(default_factory=lambda: len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    speed: dict[str, dict[str, float]] = field(default_factory=dict)  # "start"/"end" -> machine_speed()
    unread: int = 0  # samples whose stack could not be read (a frame torn down while it was walked)

    def add_sample(self, frames: list[tuple[str, str]]) -> None:
        phase, where = classify(frames)
        self.samples[phase] += 1
        if where is not None:
            self.where.setdefault(phase, Counter())[where] += 1

    def on_duration(self, event: str, seconds: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE:
            self.compiles[str(kwargs.get("fun_name", "?"))] += 1
            self.compile_seconds += seconds
            # JAX compiles in the thread that called: the project function that asked for it is on this stack
            where = next(
                (
                    f"{m}:{f}"
                    for m, f in reversed(_stack(sys._getframe()))
                    if m.split(".", 1)[0] in PROJECT and m != __name__
                ),
                "?",
            )
            self.compiled_from[where] += 1
            self.compile_seconds_from[where] += seconds
        elif event == TRACE:
            self.trace_seconds += seconds
        elif event == LOWER:
            self.lower_seconds += seconds

    def on_event(self, event: str, **kwargs: Any) -> None:
        if event == CACHE_HIT:
            self.cache_hits += 1

    def summary(self) -> dict[str, Any]:
        """The profile as stored: seconds rounded to 0.1, each phase's seconds its share of the samples times the wall
        time, and the functions it was spent in."""
        wall = self.wall if self.wall is not None else time.perf_counter() - self.started
        total = sum(self.samples.values())
        phases = {}
        for phase in PHASE_NAMES:
            n = self.samples.get(phase, 0)
            if not n:
                continue
            top = self.where.get(phase, Counter()).most_common(TOP)
            phases[phase] = {
                "seconds": round(wall * n / total, 1),
                "share": round(n / total, 4),
                "functions": {name: round(k / n, 3) for name, k in top},
            }
        cpu = self.cpu_seconds
        compiled = sum(self.compiles.values())
        return {
            "wall_seconds": round(wall, 1),
            "samples": total,
            "interval_seconds": self.interval,
            "phases": phases,
            "compilations": compiled - self.cache_hits,
            "compile_cache_hits": self.cache_hits,
            "compile_seconds": round(self.compile_seconds, 1),
            "trace_seconds": round(self.trace_seconds, 1),
            "lower_seconds": round(self.lower_seconds, 1),
            "compiled_most": dict(self.compiles.most_common(COMPILED_TOP)),
            "compiled_functions": len(self.compiles),
            "compiled_from": {  # the project functions whose calls compiled longest
                where: {"compilations": self.compiled_from[where], "seconds": round(seconds, 1)}
                for where, seconds in self.compile_seconds_from.most_common(COMPILED_TOP)
            },
            "cores": self.cores,
            "cpu_seconds": None if cpu is None else round(cpu, 1),
            "idle_share": None if cpu is None or wall <= 0 else round(max(0.0, 1 - cpu / (wall * self.cores)), 3),
            **({"unread_samples": self.unread} if self.unread else {}),
            **({"machine_speed": self.speed} if self.speed else {}),
        }


MATMUL_N = 512  # the probe's float32 product is [N, N] @ [N, N]
PYTHON_LOOP = 200_000  # iterations of the probe's Python loop


def machine_speed(trials: int = 3, clock=time.perf_counter) -> dict[str, float]:
    """How fast this machine is now: GFLOP/s of a float32 [512, 512] @ [512, 512] product (numpy's BLAS, every core
    this process may use) and millions of iterations per second of a fixed pure-Python loop (one core), each the
    fastest of `trials` rounds of about 0.05 s (core.bench.time_call). Independent of JAX, so it measures the machine,
    not the code."""
    import numpy as np

    from core.bench import time_call

    a = np.random.default_rng(0).standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)

    def loop() -> int:
        acc = 0
        for i in range(PYTHON_LOOP):
            acc += i & 7
        return acc

    timed = functools.partial(time_call, repeat=trials, min_seconds=0.05, stat="min", clock=clock)
    return {
        "matmul_gflops": round(2 * MATMUL_N**3 / timed(lambda: a @ a) / 1e9, 1),
        "python_mips": round(PYTHON_LOOP / timed(loop) / 1e6, 2),
    }


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_active: Profile | None = None
_listening = False


def _duration(event: str, seconds: float, **kwargs: Any) -> None:
    if _active is not None:
        _active.on_duration(event, seconds, **kwargs)


def _event(event: str, **kwargs: Any) -> None:
    if _active is not None:
        _active.on_event(event, **kwargs)


def _listen() -> None:
    """JAX's monitoring listeners, registered once per process (JAX keeps them for the process's life); they
    forward to the profile being taken, if any."""
    global _listening
    if _listening:
        return
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_duration)
    jax.monitoring.register_event_listener(_event)
    _listening = True


@contextlib.contextmanager
def profiling(interval: float = INTERVAL, speed: bool = True) -> Iterator[Profile]:
    """Profile what runs inside: the calling thread's stack sampled every `interval` seconds, JAX's compilations and
    the process's CPU seconds; with `speed`, the machine's speed (machine_speed) before and after, outside the
    profiled time. One at a time in a process."""
    global _active
    if _active is not None:
        raise RuntimeError("a profile is already being taken in this process (core.profile.profiling is not nested)")
    if interval <= 0:
        raise ValueError(f"interval={interval!r} must be a positive number of seconds")
    _listen()
    prof = Profile(interval=interval)
    if speed:
        prof.speed["start"] = machine_speed()
    prof.cpu_start = _cpu()
    target = threading.get_ident()
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(interval):
            frame = sys._current_frames().get(target)
            try:
                if frame is not None:
                    prof.add_sample(_stack(frame))
            except (AttributeError, ValueError, RuntimeError):
                # the profiled thread runs on while its stack is walked: CPython 3.11 can hand back a frame being torn
                # down (seen as "'code' object has no attribute 'f_globals'"); the sample is counted as unread and
                # the sampler goes on rather than dying for the rest of the run
                prof.unread += 1
            del frame

    thread = threading.Thread(target=sample, name="core.profile", daemon=True)
    _active = prof
    prof.started = time.perf_counter()
    thread.start()
    try:
        yield prof
    finally:
        stop.set()
        thread.join()
        prof.wall = time.perf_counter() - prof.started
        prof.cpu_seconds = _cpu() - prof.cpu_start
        _active = None
        if speed:
            prof.speed["end"] = machine_speed()


def profile_line(p: dict[str, Any]) -> str:
    """One sentence for a README: where the time went."""
    if not p:
        return ""
    parts = [f"{name} {v['seconds'] / 60:.1f} min" for name, v in p.get("phases", {}).items()]
    idle = p.get("idle_share")
    cores = f"; {idle:.0%} of {p['cores']} cores' time idle" if idle is not None else ""
    cache = f" ({p['compile_cache_hits']} more from the persistent cache)" if p.get("compile_cache_hits") else ""
    speed = p.get("machine_speed", {}).get("start")
    machine = f"; machine at {speed['matmul_gflops']:.0f} GFLOP/s (core.profile.machine_speed)" if speed else ""
    return (
        f"{p['wall_seconds'] / 60:.1f} min: " + ", ".join(parts) + f"; {p['compilations']} compilations{cache}, "
        f"{p['compile_seconds']:.0f} s compiling{cores}{machine}"
    )


def profile_markdown(p: dict[str, Any]) -> list[str]:
    """A report's section: the phases with their seconds, shares and functions, then compilations and cores."""
    out = [
        f"Measured while the run computed (core.profile): the main thread's stack sampled every "
        f"{p['interval_seconds']} s ({p['samples']} samples), each sample filed under its phase; compilations from "
        "JAX's monitoring events; cores from the process's CPU seconds.",
        "",
        "| phase | minutes | share | where (share of the phase's samples) |",
        "|---|---|---|---|",
    ]
    for name, v in p.get("phases", {}).items():
        where = ", ".join(f"`{f}` {share:.0%}" for f, share in v.get("functions", {}).items()) or "-"
        out.append(f"| {name} | {v['seconds'] / 60:.2f} | {v['share']:.1%} | {where} |")
    compiled = ", ".join(f"`{k}` x{n}" for k, n in p.get("compiled_most", {}).items())
    cache = f", {p['compile_cache_hits']} loaded from the persistent cache" if p.get("compile_cache_hits") else ""
    origin = ", ".join(
        f"`{k}` {v['compilations']} ({v['seconds']:.0f} s)" for k, v in p.get("compiled_from", {}).items()
    )
    out += [
        "",
        f"- {p['compilations']} XLA compilations{cache}: {p['compile_seconds']:.1f} s in the backend, "
        f"{p['trace_seconds']:.1f} s tracing, {p['lower_seconds']:.1f} s lowering; most compiled: {compiled or '-'}",
        *([f"- compiled from (the project function that asked): {origin}"] if origin else []),
    ]
    if p.get("cpu_seconds") is not None:
        out.append(
            f"- CPU: {p['cpu_seconds'] / 60:.1f} min over {p['cores']} cores in {p['wall_seconds'] / 60:.1f} min of "
            f"wall time: {p['idle_share']:.0%} of the cores' time idle"
        )
    speed = p.get("machine_speed")
    if speed:
        at = "; ".join(
            f"{when} {v['matmul_gflops']:.1f} GFLOP/s (float32 {MATMUL_N}x{MATMUL_N} product), "
            f"{v['python_mips']:.2f} M Python loop iterations/s"
            for when, v in speed.items()
        )
        out.append(
            f"- the machine's speed (core.profile.machine_speed), {at}: minutes of runs made on other days compare "
            "through these, not directly"
        )
    return out

"""Benchmark plumbing: time our implementation and a peer (ml_dtypes, numpy, scipy, a dense matmul, ...) in the
same process, and report the ratio. Absolute times vary between machines; the ratio to a peer measured a moment
earlier on the same machine is what a benchmark asserts nothing about but reports.

Where benchmarks live: a module `bench.py` beside the code it measures (`papers/<name>/bench.py`,
`core/numerics/bench.py`, `ipu_model/bench.py`) defines one function per section, registered with `@section`:

    @section("packing")
    def bench_packing(size: str) -> list[Comparison]:
        from core.packing import pack_histogram  # heavy imports inside the function, not at module level
        n = by_size(size, tiny=500, quick=5_000, full=20_000)
        ...

- the name is a string literal: scripts/bench.py finds the modules by listing files and reads the section names
  from the decorators without importing anything; it imports a module only to run one of its sections;
- `size` is one of SIZES: "tiny" (the smallest size that still runs every code path and produces every row: seconds,
  for tests), "quick" (a smoke run) or "full" (the benchmark itself); anything else is a ValueError, raised by the
  registered wrapper before the section starts;
- the section returns its rows, every one with `section` equal to the section's name.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar


def block(x: Any) -> Any:
    """Wait for asynchronous (JAX) results so that timings measure the work, not its dispatch."""
    try:
        import jax

        return jax.block_until_ready(x)
    except ImportError:
        return x


def time_call(
    fn: Callable[[], Any],
    *,
    repeat: int = 5,
    min_seconds: float = 0.2,
    warmup: int = 1,
    stat: str = "median",
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds per call of `fn()`: the median (or, `stat="min"`, the fastest) of `repeat` rounds; each round runs
    enough calls to last `min_seconds`. The minimum suits sweeps of many short cells on a shared machine, where a
    round slowed by other work would otherwise decide a cell.

    `warmup` calls run first and are not timed (JAX compiles on the first call).
    """
    if stat not in ("median", "min"):
        raise ValueError(f"time_call: stat must be 'median' or 'min', got {stat!r}")
    for _ in range(warmup):
        block(fn())
    t0 = clock()
    block(fn())
    once = max(clock() - t0, 1e-9)
    number = max(1, int(min_seconds / once))
    rounds = []
    for _ in range(repeat):
        t0 = clock()
        for _ in range(number):
            block(fn())
        rounds.append((clock() - t0) / number)
    return statistics.median(rounds) if stat == "median" else min(rounds)


def time_rounds(
    fns: dict[str, Callable[[], Any]],
    *,
    repeat: int = 5,
    min_seconds: float = 0.2,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds per call of every `fns[name]()` in each of `repeat` rounds, the rounds interleaved (round i of every
    function runs before round i + 1 of any), so that load from other work on a shared machine falls on all of
    them alike and round i of two functions can be paired. Each function is warmed by `warmup` untimed calls; a
    round runs enough calls to last about `min_seconds`. A claim decides on the spread of these rounds (e.g. a
    bootstrap interval of the per-round ratio), not on one number."""
    if repeat < 1:
        raise ValueError(f"time_rounds: repeat must be >= 1, got {repeat}")
    number = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            block(fn())
        t0 = clock()
        block(fn())
        number[name] = max(1, int(min_seconds / max(clock() - t0, 1e-9)))
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            for _ in range(number[name]):
                block(fn())
            out[name].append((clock() - t0) / number[name])
    return out


@dataclass(frozen=True)
class Comparison:
    """One benchmark row: our time, the peer's, and peer/ours (above 1: we are faster)."""

    section: str
    name: str
    ours: str
    peer: str
    ours_seconds: float
    peer_seconds: float
    size: str = ""

    @property
    def speedup(self) -> float:
        return self.peer_seconds / self.ours_seconds

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "speedup": self.speedup}


def compare(
    section: str,
    name: str,
    *,
    ours: tuple[str, Callable[[], Any]],
    peer: tuple[str, Callable[[], Any]],
    size: str = "",
    **timing: Any,
) -> Comparison:
    """Time `ours` and `peer` back to back and return the comparison."""
    (ours_name, ours_fn), (peer_name, peer_fn) = ours, peer
    t_peer = time_call(peer_fn, **timing)
    t_ours = time_call(ours_fn, **timing)
    return Comparison(section, name, ours_name, peer_name, t_ours, t_peer, size)


def markdown_table(rows: list[Comparison]) -> str:
    lines = [
        "| section | benchmark | size | ours | peer | ours (ms) | peer (ms) | speed-up vs peer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.section} | {r.name} | {r.size} | {r.ours} | {r.peer} | {r.ours_seconds * 1e3:.3f} "
            f"| {r.peer_seconds * 1e3:.3f} | {r.speedup:.2f}x |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- sections

SIZES = ("tiny", "quick", "full")

Section = Callable[[str], list[Comparison]]
SECTIONS: dict[str, Section] = {}  # section name -> its function, filled as bench modules are imported

T = TypeVar("T")


def check_size(size: str) -> str:
    """`size` if it is one of SIZES, else a ValueError naming it and the allowed sizes."""
    if size not in SIZES:
        raise ValueError(f"benchmark size {size!r} is not known: choose one of {', '.join(SIZES)}")
    return size


def by_size(size: str, *, tiny: T, quick: T, full: T) -> T:
    """The value for `size` (checked): `n = by_size(size, tiny=1 << 12, quick=1 << 20, full=1 << 24)`."""
    return {"tiny": tiny, "quick": quick, "full": full}[check_size(size)]


def section(name: str) -> Callable[[Section], Section]:
    """Register `fn(size) -> list[Comparison]` as the benchmark section `name` (see the module docstring). The
    registered function checks `size` before the section runs; the decorated name stays the plain function."""

    def register(fn: Section) -> Section:
        @functools.wraps(fn)
        def checked(size: str) -> list[Comparison]:
            return fn(check_size(size))

        known = SECTIONS.get(name)
        if known is not None and (known.__module__, known.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(
                f"benchmark section {name!r} is registered twice: by {known.__module__}.{known.__qualname__} "
                f"and by {fn.__module__}.{fn.__qualname__}"
            )
        SECTIONS[name] = checked
        return fn

    return register

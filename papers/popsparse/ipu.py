"""PopSparse on the simulated IPU (`ipu_model`): static and dynamic block-sparse matmuls and the benchmark cell.

    prog, y, plan = static_sparse_matmul(graph, pattern, w, x)          # papers.popsparse.ipu_static
    op = dynamic_sparse_matmul(graph, m, k, n, block, max_density, dtype)  # papers.popsparse.ipu_dynamic
    simulate_cell("static", 4096, 4096, 1024, 16, 1 / 16, "float16", get_device("mk2"))

The paper's benchmark measures Y[m, n] = W[m, k] X[k, n] with W block-sparse (b = 1, 4, 8, 16; uniformly random
blocks) and reports the best FLOP/s over the batch n, as a speed-up over the dense matmul of the same m, k, n.
`simulate_cell` builds one such matmul on a simulated IPU and runs it cost-only (the engine charges the cycles
without computing values): W and X start spread linearly over the tiles, as `ipu_model.ops.matmul`'s operands do,
and only the matmul program is timed (not host transfers, including the dynamic case's upload of buckets). A cell
also reports its compute cycles alone (the paper's benchmark script prints both "Compute TFLOPS" and "Compute and
exchange TFLOPS"; which one the paper plots is not stated, so the report shows both for dense).

The dense matmul accumulates FP16 in FP16 partials (DENSE_PARTIALS), like the static sparse one: at the FP16
rate the paper measured for dense (232 TFLOP/s at m = k = 4096 on its Bow, its dense figure) the AMP must use its 16
half-partials conv units, since float partials get 8 (at most 174 TFLOP/s on a Bow; papers/popsparse/REFERENCES.md,
"the dense baseline's partials").
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from time import perf_counter
from typing import Any

import numpy as np

from core.sparsity.formats import BlockPattern
from ipu_model import Engine, Graph, GraphError, Sequence, ops
from ipu_model.device import DeviceSpec
from papers.popsparse.ipu_common import program_cycles
from papers.popsparse.ipu_dynamic import (
    DynamicPlan,
    DynamicSparseMatmul,
    assign_buckets,
    dynamic_sparse_matmul,
    plan_dynamic,
)
from papers.popsparse.ipu_static import StaticPlan, plan_static, static_sparse_matmul

KINDS = ("dense", "static", "dynamic")
DENSE_PARTIALS = {"float16": "float16", "float32": "float32"}  # the dense matmul's accumulator type per dtype


@lru_cache(maxsize=2)
def _pattern(m: int, k: int, block: int, density: float, seed: int) -> BlockPattern:
    """The random pattern of a cell (shared by its static and dynamic cells at every n; immutable)."""
    return BlockPattern.random((m, k), block, density, seed)


def _build(kind: str, graph: Graph, m: int, k: int, n: int, block: int, density: float, dtype: str, seed: int):
    """(program to run, the part to time, host inputs, plan, non-zero blocks) for one benchmark matmul."""
    x = graph.add_variable((k, n), dtype, "X")
    graph.map_linearly(x)
    if kind == "dense":
        w = graph.add_variable((m, k), dtype, "W")
        graph.map_linearly(w)
        prog, _, plan = ops.matmul(graph, w, x, partials=DENSE_PARTIALS[dtype])
        return prog, prog, {}, plan, (m // block) * (k // block)
    pattern = _pattern(m, k, block, density, seed)
    if kind == "static":
        w = graph.add_variable((pattern.nnz_blocks, block, block), dtype, "W")
        graph.map_linearly(w)
        prog, _, plan = static_sparse_matmul(graph, pattern, w, x)
        return prog, prog, {}, plan, pattern.nnz_blocks
    op = dynamic_sparse_matmul(graph, m, k, n, block, density, dtype, x=x)
    inputs = dict(zip(op.streams, assign_buckets(op.plan, pattern), strict=True))  # values stay zero: cost only
    return Sequence(op.upload, op.program), op.program, inputs, op.plan, pattern.nnz_blocks


def simulate_cell(
    kind: str, m: int, k: int, n: int, block: int, density: float, dtype: str, device: DeviceSpec, seed: int = 0
) -> dict[str, Any]:
    """Simulate one benchmark matmul: `kind` dense, static or dynamic (W at `density`, blocks of `block`).

    Returns cycles, seconds, `tflops` (dense-equivalent: 2 m k n / time, the paper's effective rate), `tflops_actual`
    (2 nnz-elements n / time, what the tiles computed), `tflops_compute` (dense-equivalent over the compute cycles
    alone, without exchange and sync), the plan and its estimate, and the wall time of the
    simulation (build, compile, run). A matmul with no plan fitting in tile memory returns `fits: False` and the
    reason."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not known: choose one of {', '.join(KINDS)}")
    density = 1.0 if kind == "dense" else float(density)
    cell: dict[str, Any] = {"kind": kind, "m": m, "k": k, "n": n, "block": block, "density": density, "dtype": dtype}
    t0 = perf_counter()
    graph = Graph(device)
    try:
        program, timed, inputs, plan, nnz_blocks = _build(kind, graph, m, k, n, block, density, dtype, seed)
    except GraphError as e:
        return {**cell, "fits": False, "error": str(e), "wall": {"total": perf_counter() - t0}}
    t1 = perf_counter()
    engine = Engine(graph, program)
    t2 = perf_counter()
    engine.run(inputs, evaluate=False)
    t3 = perf_counter()
    cycles = program_cycles(engine, timed)
    compute = program_cycles(engine, timed, part="compute")
    seconds = device.seconds(cycles)
    nnz_elements = nnz_blocks * block * block
    return {
        **cell,
        "fits": True,
        "nnz_blocks": int(nnz_blocks),
        "cycles": cycles,
        "seconds": seconds,
        "tflops": 2 * m * k * n / seconds / 1e12,
        "tflops_actual": 2 * nnz_elements * n / seconds / 1e12,
        "compute_cycles": compute,
        "tflops_compute": 2 * m * k * n / device.seconds(compute) / 1e12,
        "plan": plan.describe() if hasattr(plan, "describe") else f"{plan.pm}x{plan.pk}x{plan.pn}",
        "estimate": float(plan.estimate),
        "wall": {"build": t1 - t0, "compile": t2 - t1, "run": t3 - t2, "total": t3 - t0},
    }


def _cell_key(kind: str, m: int, k: int, n: int, block: int, density: float, dtype: str, seed: int) -> str:
    """The cache key of a cell; a sparse cell's pattern seed is part of it (dense has no pattern)."""
    key = f"{kind}/m{m}/k{k}/n{n}/b{block}/d{density:.10g}/{dtype}"
    return key if kind == "dense" else f"{key}/s{seed}"


def _simulate_task(task: tuple) -> tuple[str, dict[str, Any]]:
    key, args = task
    return key, simulate_cell(*args)


class CellCache:
    """Simulated cells, each kept as its own entry of the memo store `store` (core.memo, stage "ipu_cell": keyed by
    the cell and the device, and by the code `simulate_cell` can reach) as soon as it is simulated, so a killed sweep
    resumes where it stopped and a sweep of other sizes reuses the cells it shares. `resume=False` simulates every
    cell again (replacing what is kept); `store=None` keeps the cells in memory only."""

    def __init__(self, store: str | os.PathLike | None = None, device: DeviceSpec | None = None, resume: bool = True):
        from core.memo import Stage

        if store is not None and device is None:
            raise ValueError("CellCache: a store needs the device its cells are simulated on")
        # the code of the task a worker runs, found by its names (a stand-in patched over simulate_cell is not it)
        self.stage = Stage(store, "ipu_cell", _simulate_task) if store is not None else None
        self.device, self.resume = device, resume
        self.cells: dict[str, dict[str, Any]] = {}

    def _entry(self, key: str):
        return self.stage.entry({"cell": key, "device": self.device})

    def __contains__(self, key: str) -> bool:
        if key in self.cells:
            return True
        if self.stage is None or not self.resume:
            return False
        from core.memo import lookup

        found, cell = lookup(self._entry(key), report=False)  # the sweep's progress bar counts reused cells
        if found:
            self.cells[key] = cell
        return found

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self.cells[key]

    def put(self, key: str, cell: dict[str, Any]) -> None:
        self.cells[key] = cell
        if self.stage is not None:
            from core.memo import store_value

            store_value(
                self._entry(key), cell, seconds=float(cell.get("wall", {}).get("total", 0.0)), replace=not self.resume
            )


def simulate_cells(tasks, device: DeviceSpec, cache: CellCache | None = None, workers: int = 1, log=None, chunk=1):
    """Simulate every (kind, m, k, n, block, density, dtype, seed) in `tasks` not already in `cache`, in `workers`
    processes (the simulator is single-threaded Python; the cells are independent). `log(key, cell)` is called as
    cells complete; `chunk` consecutive tasks go to the same process (so cells sharing a pattern reuse it). Returns
    the cache."""
    cache = cache if cache is not None else CellCache()
    todo = []
    queued = set()
    for task in tasks:
        key = _cell_key(*task)
        if key in cache:
            if log:
                log(key, cache[key])
        elif key not in queued:
            queued.add(key)
            kind, m, k, n, block, density, dtype, seed = task
            todo.append((key, (kind, m, k, n, block, density, dtype, device, seed)))
    if workers > 1 and len(todo) > 1:
        # spawn, not fork: the parent may hold JAX's threads
        with ProcessPoolExecutor(min(workers, len(todo)), mp_context=mp.get_context("spawn")) as pool:
            for key, cell in pool.map(_simulate_task, todo, chunksize=chunk):
                cache.put(key, cell)
                if log:
                    log(key, cell)
    else:
        for task in todo:
            key, cell = _simulate_task(task)
            cache.put(key, cell)
            if log:
                log(key, cell)
    return cache


def _best(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell with the highest dense-equivalent FLOP/s (cells that do not fit are skipped), with every cell under
    "cells"."""
    fitting = [c for c in cells if c["fits"]]
    best = max(fitting, key=lambda c: c["tflops"]) if fitting else {"fits": False}
    return {**best, "cells": cells}


_RATES = ("tflops", "tflops_actual", "tflops_compute", "cycles", "compute_cycles", "seconds")


def _seed_mean(bests: list[dict[str, Any]]) -> dict[str, Any]:
    """The best cells of several pattern seeds as one: the first seed's cell (its n, plan and cells) with each
    rate the mean over the seeds' best cells (not fitting where any seed's does not)."""
    if not all(b["fits"] for b in bests):
        return {"fits": False, "cells": bests[0]["cells"]}
    return {**bests[0], **{key: float(np.mean([b[key] for b in bests])) for key in _RATES}}


def best_over_n(
    kind: str, m: int, k: int, ns, block: int, density: float, dtype: str, device: DeviceSpec, seed: int = 0
) -> dict[str, Any]:
    """The cell with the highest dense-equivalent FLOP/s over the batch sizes `ns` (cells that do not fit are
    skipped), with every cell under "cells"."""
    return _best([simulate_cell(kind, m, k, n, block, density, dtype, device, seed) for n in ns])


def speedups(
    m: int,
    k: int,
    ns,
    blocks,
    densities,
    dtypes,
    device: DeviceSpec,
    seeds=(0,),
    log=None,
    cache: CellCache | None = None,
    workers: int = 1,
    kinds=("static", "dynamic"),
    kind_ns: dict | None = None,
):
    """Best-over-n FLOP/s of dense and of the sparse `kinds` (static, dynamic), and the sparse speed-ups over dense,
    for every (block, density, dtype), each sparse cell with a random pattern per seed in `seeds`. Dense (no
    pattern) is simulated once per dtype; every kind over `ns` unless `kind_ns` gives it its own batch sizes. Cells
    run in `workers` processes and are kept in `cache` (resumable); `log(key, cell)` is called as cells complete.

    A row holds, per kind, `<kind>_speedups` (one per seed, in `seeds` order: best over n of that seed's pattern
    over dense's best), `<kind>_speedup` (their mean), `<kind>_best_n` (each seed's best n) and `<kind>` (the seeds'
    best cells as one, `_seed_mean`)."""
    kind_ns = {kind: list(kind_ns.get(kind) or ns) if kind_ns else list(ns) for kind in ("dense", *kinds)}
    unknown = sorted(set(kinds) - {"static", "dynamic"})
    if unknown or not kinds:
        raise ValueError(f"kinds {list(kinds)} must be a non-empty subset of ('static', 'dynamic')")
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds {seeds} must be one or more distinct pattern seeds")
    tasks = [("dense", m, k, n, 1, 1.0, dtype, 0) for dtype in dtypes for n in kind_ns["dense"]]
    tasks += [
        (kind, m, k, n, block, density, dtype, seed)
        for dtype in dtypes
        for block in blocks
        for density in densities
        for seed in seeds
        for kind in kinds
        for n in kind_ns[kind]
    ]
    chunk = sum(len(kind_ns[kind]) for kind in kinds)
    cache = simulate_cells(tasks, device, cache, workers, log, chunk=chunk)

    def best(kind, block, density, dtype, seed):
        return _best([cache[_cell_key(kind, m, k, n, block, density, dtype, seed)] for n in kind_ns[kind]])

    rows = []
    for dtype in dtypes:
        dense = best("dense", 1, 1.0, dtype, 0)
        for block in blocks:
            for density in densities:
                row: dict[str, Any] = {"dtype": dtype, "block": block, "density": density, "dense": dense}
                for kind in kinds:
                    bests = [best(kind, block, density, dtype, s) for s in seeds]
                    row[f"{kind}_speedups"] = [
                        b["tflops"] / dense["tflops"] if b["fits"] and dense["fits"] else float("nan") for b in bests
                    ]
                    row[f"{kind}_speedup"] = float(np.mean(row[f"{kind}_speedups"]))
                    row[f"{kind}_best_n"] = [b.get("n") for b in bests]
                    row[kind] = _seed_mean(bests)
                rows.append(row)
    return rows


__all__ = [
    "KINDS",
    "CellCache",
    "DynamicPlan",
    "DynamicSparseMatmul",
    "StaticPlan",
    "best_over_n",
    "dynamic_sparse_matmul",
    "plan_dynamic",
    "plan_static",
    "simulate_cell",
    "simulate_cells",
    "speedups",
    "static_sparse_matmul",
]

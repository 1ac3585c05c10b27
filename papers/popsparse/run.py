"""The PopSparse run: simulate the paper's benchmark on the simulated IPU (the grid and the FP16 static crossover
sweep, every sparse cell over the pattern seeds; papers.popsparse.ipu) and time the CPU sweep
(papers.popsparse.cpu). Everything the claims, tables and figures read is in the Results it returns
(papers/popsparse/results.py); each simulated cell is kept in the run's memo store (core.memo), so a killed run
resumes from the cells already simulated."""

from __future__ import annotations

import os
from typing import Any

from core.context import RunContext
from papers.popsparse.results import Best, Cell, CpuCell, Results, Row, Sparse

_FIGURES = ("cycles", "compute_cycles", "seconds", "tflops", "tflops_actual", "tflops_compute")


def _cell(d: dict[str, Any]) -> Cell:
    """A simulated cell (papers.popsparse.ipu.simulate_cell's dict) as stored: without the simulator's wall time."""
    return Cell(
        n=d.get("n"),
        fits=bool(d["fits"]),
        **{k: float(d[k]) for k in _FIGURES if k in d},
        plan=d.get("plan", ""),
        error=d.get("error", ""),
    )


def _best(d: dict[str, Any]) -> Best:
    """A kind's best over n (papers.popsparse.ipu's `_best` or `_seed_mean` dict), with its cells."""
    return Best(**vars(_cell(d)), cells=[_cell(c) for c in d["cells"]])


def _row(d: dict[str, Any]) -> Row:
    """A row of papers.popsparse.ipu.speedups as stored."""
    kinds = {
        kind: Sparse(
            speedups=[float(s) for s in d[f"{kind}_speedups"]],
            best_n=list(d[f"{kind}_best_n"]),
            best=_best(d[kind]),
        )
        for kind in ("static", "dynamic")
        if kind in d
    }
    return Row(dtype=d["dtype"], block=int(d["block"]), density=float(d["density"]), dense=_best(d["dense"]), **kinds)


def _cpu_cell(d: dict[str, Any]) -> CpuCell:
    """A timed CPU cell (papers.popsparse.cpu.time_cell's dict) as stored: its rounds (the medians follow)."""
    return CpuCell(
        block=int(d["block"]),
        density=float(d["density"]),
        nnz_blocks=int(d["nnz_blocks"]),
        error=float(d["error"]),
        rounds={k: [float(x) for x in v] for k, v in d["rounds"].items()},
    )


def run(cfg, ctx: RunContext) -> Results:
    from core.progress import progress
    from core.tracking import log_metrics
    from ipu_model import device_from_config
    from papers.popsparse.cpu import cpu_sweep
    from papers.popsparse.ipu import CellCache, speedups

    c = cfg.popsparse
    device = device_from_config(cfg.device)
    seeds = [int(cfg.seed) + i for i in range(c.ipu.pattern_seeds)]
    ipu_rows: list[dict] = []
    crossover_rows: list[dict] = []
    if c.ipu.enabled:
        static_ns = list(c.ipu.static_ns) or list(c.ipu.ns)
        sparse = len(c.ipu.ns) + len(static_ns)
        cells = len(c.ipu.dtypes) * (len(c.ipu.ns) + len(seeds) * sparse * len(c.ipu.blocks) * len(c.ipu.densities))
        if c.ipu.crossover_blocks:
            per_seed = len(c.ipu.crossover_blocks) * len(c.ipu.crossover_densities)
            cells += len(c.ipu.crossover_ns) * (1 + len(seeds) * per_seed)
        bar = progress(total=cells, desc=f"simulated {device.name} matmuls", unit="cell")
        cache = CellCache(ctx.memo_dir, device, resume=ctx.resume)

        def log(key, cell):
            bar.update(1)
            if cell["fits"]:
                log_metrics({f"ipu/{key}/tflops": cell["tflops"]})

        # both sweeps share the cell cache: cells they have in common are simulated once
        shared = {"seeds": seeds, "log": log, "cache": cache, "workers": c.ipu.workers or os.cpu_count() or 1}
        ipu_rows = speedups(
            c.ipu.m,
            c.ipu.k,
            list(c.ipu.ns),
            list(c.ipu.blocks),
            [float(d) for d in c.ipu.densities],
            list(c.ipu.dtypes),
            device,
            kind_ns={"static": static_ns},
            **shared,
        )
        if c.ipu.crossover_blocks:
            crossover_rows = speedups(
                c.ipu.m,
                c.ipu.k,
                list(c.ipu.crossover_ns),
                list(c.ipu.crossover_blocks),
                [float(d) for d in c.ipu.crossover_densities],
                ["float16"],
                device,
                kinds=("static",),
                **shared,
            )
        bar.close()
        log_metrics(
            {
                f"ipu/{r['dtype']}/b{r['block']}/d{r['density']:.4g}/{kind}_speedup": r[f"{kind}_speedup"]
                for r in ipu_rows
                for kind in ("static", "dynamic")
            }
        )
    cpu_cells: list[dict] = []
    if c.cpu.enabled:
        cpu_cells = cpu_sweep(
            c.cpu.m,
            c.cpu.k,
            c.cpu.n,
            list(c.cpu.blocks),
            [float(d) for d in c.cpu.densities],
            peers=list(c.cpu.peers),
            dynamic=c.cpu.dynamic,
            seed=int(cfg.seed),
            repeat=c.cpu.repeat,
            progress=progress,
        )
    return Results(
        device=device.name,
        pattern_seeds=seeds if c.ipu.enabled else [],
        ipu=[_row(r) for r in ipu_rows],
        crossover=[_row(r) for r in crossover_rows],
        cpu=[_cpu_cell(x) for x in cpu_cells],
    )

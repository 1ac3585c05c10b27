"""The PopSparse report, made from the Results and the decision: the tables (the paper's speed-up table beside the
simulated IPU's, the dense rate and the figures' cells beside the paper's, the IPU grid, the crossover sparsity per
block size, the CPU sweep against its peers and its crossovers) and the figures (papers/popsparse/figures.py: the
sim/paper ratio of every cell of the paper's table, speed-up over dense against density on the simulated IPU and on
the CPU). It formats: the claims, the facts and every interval or seed range it shows are decided in
papers/popsparse/claims.py (`decided.estimates`, named by papers/popsparse/sweep.py).

One module over 400 lines: one table or figure a function, each reading the same decided estimates and the
paper's cells; the report is long because the paper's table and figures are many, not because it does two jobs.
"""

from __future__ import annotations

import math

from core.claims import Decided, Interval
from core.report import Report, Table, fixed
from papers.popsparse import paper as published
from papers.popsparse.figures import figures
from papers.popsparse.results import Results, Row
from papers.popsparse.sweep import (
    CPU_SLOPE_KEY,
    at_paper_clock,
    cpu_dynamic_key,
    cpu_key,
    crossover_density,
    crossover_key,
    crossover_sparsity,
    crossover_speedup_key,
    dense_cells,
    dense_key,
    figure_key,
    frac,
    rows_at,
    speedup_key,
)


def _reading(v) -> str:
    """A paper value read off its figure: estimate [low, high]."""
    return f"{fixed(v.estimate)} [{fixed(v.low)}, {fixed(v.high)}]"


def _mean(decided: Decided, key: str) -> float:
    """The estimate named `key` (an interval's estimate; nan where the decision has none)."""
    v = decided.estimates.get(key, math.nan)
    return v.estimate if isinstance(v, Interval) else float(v)


def _spread(decided: Decided, key: str) -> str:
    """An estimate's range over the pattern seeds: lowest-highest."""
    v = decided.estimates.get(key, math.nan)
    low, high = (v.low, v.high) if isinstance(v, Interval) else (float(v), float(v))
    return f"{fixed(low)}-{fixed(high)}"


def _at_figure_scale(cfg) -> bool:
    """Whether the IPU sweep is at the m = k of the paper's figures."""
    return cfg.popsparse.ipu.m == cfg.popsparse.ipu.k == published.FIGURE_M


def _same_n_speedup(row: Row, kind: str) -> float:
    """The sparse speed-up at the batch n where the simulated dense matmul did best (same m, k, n)."""
    n = row.dense.n
    same = [c for c in row.kind(kind).best.cells if c.n == n and c.fits]
    return same[0].tflops / row.dense.tflops if same and row.dense.fits else float("nan")


def _absolute_factors(ipu_rows: list[Row]) -> dict[tuple[int, str, str], float]:
    """(block, dtype, kind) -> the simulated best FLOP/s over the paper's, for the table's cells and dense (block 1,
    kind "dense"): the paper's sparse FLOP/s = its speed-up x the best of its dense figure. Each kind runs on its own
    clock (the simulated cells taken to the paper's 1.85 GHz)."""
    out = {}
    for (block, dtype), (p_static, p_dynamic) in published.PUBLISHED.items():
        found = rows_at(ipu_rows, dtype, block, published.PAPER_DENSITY)
        if not found:
            continue
        best = published.paper_dense_best(dtype).estimate
        r = found[0]
        out[(1, dtype, "dense")] = at_paper_clock(r.dense) / best
        for kind, paper in (("static", p_static), ("dynamic", p_dynamic)):
            out[(block, dtype, kind)] = at_paper_clock(r.kind(kind).best) / (paper * best)
    return out


def table_factors(decided: Decided) -> dict[tuple[int, str, str], float]:
    """(block, dtype, kind) -> sim (seed mean) / paper (as printed) of the paper's table cells (nan: not run)."""
    out = {}
    for (block, dtype), printed_pair in published.PUBLISHED.items():
        for kind, p in zip(("static", "dynamic"), printed_pair, strict=True):
            out[(block, dtype, kind)] = _mean(decided, speedup_key(dtype, block, published.PAPER_DENSITY, kind)) / p
    return out


def _crossover_sweep(results: Results) -> dict[int, list[Row]]:
    """block -> its rows of the crossover sweep by density, for blocks swept at >= 2 densities."""
    out = {}
    for b in sorted({r.block for r in results.crossover}):
        sweep = sorted(rows_at(results.crossover, None, b), key=lambda r: r.density)
        if len(sweep) >= 2:
            out[b] = sweep
    return out


# ---------------------------------------------------------------------------------------------- tables


def _paper_cells(ipu_rows: list[Row], decided: Decided) -> dict[tuple[int, str], tuple[float, float, float, float]]:
    """Per published (block, dtype): the simulated static and dynamic speed-ups, best over n (seed mean) and at
    dense's n."""
    out = {}
    for block, dtype in published.PUBLISHED:
        found = rows_at(ipu_rows, dtype, block, published.PAPER_DENSITY)
        if found:
            r = found[0]
            out[(block, dtype)] = (
                _mean(decided, speedup_key(dtype, block, published.PAPER_DENSITY, "static")),
                _mean(decided, speedup_key(dtype, block, published.PAPER_DENSITY, "dynamic")),
                _same_n_speedup(r, "static"),
                _same_n_speedup(r, "dynamic"),
            )
        else:
            out[(block, dtype)] = (float("nan"),) * 4
    return out


def _paper_crossover_text(block: int) -> str:
    """Where the paper's static FP16 speed-ups at `block` cross 1, from its figures' readings."""
    cells = sorted(
        (d, v.estimate) for (kind, b, d), v in published.FIGURE_SPEEDUPS.items() if kind == "static" and b == block
    )
    if len(cells) >= 2:
        return crossover_sparsity([d for d, _ in cells], [s for _, s in cells])[1]
    if not cells:
        return "n/a"
    d, at = cells[0]
    return f"{'below' if at > 1 else 'above'} {1 - d:.1%} ({at:.2f}x at {frac(d)})"


def _crossover_text(density: float | None) -> str:
    return "never on the grid" if density is None else f"{density:.3g} (sparsity {1 - density:.1%})"


def _ours_crossover_text(sweep: list[Row], decided: Decided) -> str:
    """A block's crossover sparsity (decided, at the seed-mean speed-ups), saying where it is the grid's edge."""
    sparsity = decided.estimates[crossover_key(sweep[0].block)]
    speeds = [_mean(decided, crossover_speedup_key(r.block, r.density)) for r in sweep]
    if not any(s >= 1 for s in speeds):
        return f"above {sparsity:.1%} (never faster on the grid)"
    if all(s >= 1 for s in speeds):
        return f"below {sparsity:.1%} (faster everywhere on the grid)"
    return f"{sparsity:.1%}"


def _cpu_crossovers(results: Results) -> dict[tuple[int, str], float | None]:
    """(block, method) -> the density below which the method beats dense on the medians (None: never on the grid)."""
    cpu_cells = results.cpu
    out = {}
    for b in sorted({cell.block for cell in cpu_cells}):
        cells = [cell for cell in cpu_cells if cell.block == b]
        for k in cpu_cells[0].methods:
            out[(b, k)] = crossover_density(
                [x.density for x in cells], [x.seconds("dense") / x.seconds(k) for x in cells]
            )
    return out


def _static_best_n_text(cfg, ipu_rows: list[Row]) -> str:
    """How often static did best at the crossover sweep's largest n in the grid's static cells (every seed)."""
    top = max(cfg.popsparse.ipu.crossover_ns)
    ns = [n for r in ipu_rows if r.static is not None for n in r.static.best_n]
    if not ns:
        return ""
    return f"In the grid, static did best at n = {top} in {sum(n == top for n in ns)} of {len(ns)} (cell, seed)s."


def _table_ipu_crossover(cfg, results: Results, decided: Decided) -> Table | None:
    """Static FP16 speed-up by block size and density, and the sparsity from which static beats dense, beside the
    paper's figures (None without a crossover sweep)."""
    sweeps = _crossover_sweep(results)
    if not sweeps:
        return None
    dens = sorted({r.density for sweep in sweeps.values() for r in sweep}, reverse=True)
    return Table(
        "ipu_crossover",
        f"Simulated {results.device}, FP16: static speed-up over dense by block size and density (best over n = "
        f"{list(cfg.popsparse.ipu.crossover_ns)}), and the sparsity from which static beats dense",
        ["block", *(frac(d) for d in dens), "crossover sparsity", "paper (its figures)"],
        [
            [
                b,
                *(
                    fixed(_mean(decided, crossover_speedup_key(b, d)) if rows_at(sweep, None, b, d) else math.nan)
                    for d in dens
                ),
                _ours_crossover_text(sweep, decided),
                _paper_crossover_text(b),
            ]
            for b, sweep in sweeps.items()
        ],
        caption="The paper: static FP16 beats dense 'at lower sparsity (around 90%)' than GPUs' 99%, without "
        "naming a block size; its table has b=1 at 0.7x and b=16 at 4.9x at 93.75% sparsity, and its "
        "figures (read by papers.popsparse.digitise) put b=1 at 0.74x at 1/16 and 1.22x at 1/32, b=4 at 1.52x "
        "and b=8 at 3.46x at 1/16. Speed-ups and crossovers are seed means; the crossover is interpolated in log "
        f"density between the grid points that bracket it. {_static_best_n_text(cfg, results.ipu)}",
    )


def _table_paper(cfg, results: Results, decided: Decided) -> Table:
    """The paper's speed-up table (density 1/16) beside the simulated IPU's, with sim/paper per cell and, at the
    figures' m = k, each side's FP/s against the paper's."""
    factors = table_factors(decided)
    absolute = _absolute_factors(results.ipu) if _at_figure_scale(cfg) else {}
    rows = []
    for (block, dtype), (s, d, s_same, d_same) in _paper_cells(results.ipu, decided).items():
        p_static, p_dynamic = published.PUBLISHED[(block, dtype)]
        rows.append(
            [
                block,
                dtype,
                p_static,
                fixed(s),
                fixed(factors[(block, dtype, "static")]),
                fixed(s_same),
                fixed(absolute.get((block, dtype, "static"), float("nan"))),
                p_dynamic,
                fixed(d),
                fixed(factors[(block, dtype, "dynamic")]),
                fixed(d_same),
                fixed(absolute.get((block, dtype, "dynamic"), float("nan"))),
                fixed(absolute.get((1, dtype, "dense"), float("nan"))),
            ]
        )
    return Table(
        "paper_table",
        f"Speed-up over dense at m = k = {cfg.popsparse.ipu.m}, density 1/16: the paper's IPU (Bow) beside the "
        f"simulated {results.device}",
        [
            "block",
            "dtype",
            "paper static",
            "sim static",
            "sim/paper",
            "sim static, dense's n",
            "static FLOP/s sim/paper",
            "paper dynamic",
            "sim dynamic",
            "sim/paper",
            "sim dynamic, dense's n",
            "dynamic FLOP/s sim/paper",
            "dense FLOP/s sim/paper",
        ],
        rows,
        caption="Best FLOP/s over the batch n in both; the simulated speed-ups are means over the pattern seeds. "
        "The cost model was not tuned to these numbers: the ratio sim/paper is an out-of-sample check of "
        "ipu_model. The simulated dense matmul (ipu_model.ops.matmul) steps through k and n serially where one "
        "exchange does not fit, so it runs at every n of the sweep; a sparse cell that does not fit at some n is "
        "left out of its best. The 'dense's n' columns compare at the n where dense is fastest (the first "
        "pattern seed). 'FLOP/s sim/paper' splits a speed-up's error into its two sides: each kind's best "
        "dense-equivalent FLOP/s, at the paper's Bow clock, over the paper's (its speed-up times its best dense "
        f"rate, {published.paper_dense_best('float16').estimate:.1f} FP16 / "
        f"{published.paper_dense_best('float32').estimate:.1f} FP32 "
        "TFLOP/s as read off its figures), so sim/paper of a speed-up is the sparse column over the dense one.",
    )


def _table_dense_vs_paper(cfg, results: Results, decided: Decided) -> Table | None:
    """The simulated dense matmul's TFLOP/s beside the paper's dense figure (None off the figures' m = k)."""
    dense = dense_cells(results.ipu)
    if not (_at_figure_scale(cfg) and dense):
        return None
    rows = []
    for (t, n), cell in sorted(dense.items()):
        paper = published.PAPER_DENSE[t].get(n)
        rows.append(
            [
                t,
                n,
                _reading(paper) if paper else "n/a (hidden under the GPU's markers)" if t == "float16" else "n/a",
                fixed(cell.tflops, 1),
                fixed(at_paper_clock(cell), 1),
                fixed(decided.estimates[dense_key(t, n)]) if paper else "n/a",
                fixed(at_paper_clock(cell, "tflops_compute"), 1),
                fixed(at_paper_clock(cell, "tflops_compute") / paper.estimate) if paper else "n/a",
                cell.plan if cell.fits else "does not fit",
            ]
        )
    for t in sorted({t for t, _ in dense}):
        best = rows_at(results.ipu, t)[0].dense
        paper = published.paper_dense_best(t)
        rows.append(
            [
                t,
                f"best ({best.n})",
                _reading(paper),
                fixed(best.tflops, 1),
                fixed(at_paper_clock(best), 1),
                fixed(decided.estimates[dense_key(t, "best")]),
                fixed(at_paper_clock(best, "tflops_compute"), 1),
                fixed(at_paper_clock(best, "tflops_compute") / paper.estimate),
                best.plan if best.fits else "does not fit",
            ]
        )
    return Table(
        "dense_vs_paper",
        f"Dense matmul at m = k = {published.FIGURE_M}: simulated {results.device} TFLOP/s at its own clock, and at "
        "the paper's Bow clock (whole program, and its compute cycles alone), beside the paper's dense "
        "figure",
        [
            "dtype",
            "n",
            "paper (Bow) [reading's range]",
            f"sim ({results.device})",
            "sim at 1.85 GHz",
            "sim/paper",
            "compute only, at 1.85 GHz",
            "compute only / paper",
            "plan",
        ],
        rows,
        caption="Paper: its `dense_ipu_gpu` figure, measured on a Bow IPU (the Mk2 tile at 1.85 GHz; read by "
        "papers.popsparse.digitise, REFERENCES.md); its FP16 markers from n = 1024 up lie under the GPU's and are "
        "not read, and the FP16 best over n comes from the density figures' dense line. The simulated cycles are "
        "taken to that clock. The paper's benchmark script prints both 'Compute TFLOPS' (compute cycles) and "
        "'Compute and exchange TFLOPS'; which one its figures plot is not stated, and the two columns tell them "
        "apart. The speed-ups everywhere else use the whole program, the same for dense and sparse.",
    )


def _figure_estimates(decided: Decided) -> dict[tuple[str, int, float], str]:
    """The paper's figure cells outside its table that the decision has our speed-up for: cell -> its estimate's
    name."""
    keys = {cell: figure_key(*cell) for cell in published.PAPER_FIGURE_SPEEDUPS}
    return {cell: key for cell, key in keys.items() if key in decided.estimates}


def _table_paper_figures(cfg, results: Results, decided: Decided) -> Table | None:
    """The paper's figure cells outside its table beside the simulated ones (None off the figures' m = k, or where
    no cell matches)."""
    figure = _figure_estimates(decided) if _at_figure_scale(cfg) else {}
    if not figure:
        return None
    rows = []
    for (kind, b, d), key in sorted(figure.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])):
        paper = published.PAPER_FIGURE_SPEEDUPS[(kind, b, d)]
        mean = _mean(decided, key)
        rows.append([kind, b, frac(d), _reading(paper), fixed(mean), _spread(decided, key)])
        rows[-1].append(fixed(mean / paper.estimate))
    return Table(
        "paper_figures",
        f"FP16 speed-up over dense at m = k = {published.FIGURE_M}: the paper's figures (`ipu_density`, "
        f"`ipu_block_size`, read at pixel precision) beside the simulated {results.device}, for the cells outside "
        "its table",
        ["kind", "block", "density", "paper [reading's range]", "sim (seed mean)", "sim over seeds", "sim/paper"],
        rows,
        caption="Static cells the IPU grid lacks come from the crossover sweep (n = "
        f"{list(cfg.popsparse.ipu.crossover_ns)}). Best FLOP/s over n in both.",
    )


def _table_ipu_grid(cfg, results: Results, decided: Decided) -> Table:
    """Every cell of the simulated IPU sweep: static and dynamic speed-ups and the rates behind them."""
    c = cfg.popsparse.ipu

    def key(r: Row, kind: str) -> str:
        return speedup_key(r.dtype, r.block, r.density, kind)

    return Table(
        "ipu_grid",
        f"Simulated {results.device}: speed-up over dense (best over n = {list(c.ns)}; static: "
        f"{list(c.static_ns) or list(c.ns)}), m = k = {c.m}, mean over {c.pattern_seeds} pattern seed(s)",
        [
            "dtype",
            "block",
            "density",
            "static",
            "dynamic",
            "static over seeds",
            "dynamic over seeds",
            "static best n",
            "static TFLOP/s (actual)",
            "dense TFLOP/s",
        ],
        [
            [
                r.dtype,
                r.block,
                frac(r.density),
                fixed(_mean(decided, key(r, "static"))),
                fixed(_mean(decided, key(r, "dynamic"))),
                _spread(decided, key(r, "static")),
                _spread(decided, key(r, "dynamic")),
                "/".join(str(n) for n in r.static.best_n),
                fixed(r.static.best.tflops_actual),
                fixed(r.dense.tflops),
            ]
            for r in results.ipu
        ],
    )


def _estimate_keys(name, cells) -> list[str]:
    """The estimates' names of the CPU cells under `name` (sweep.cpu_key, cpu_dynamic_key), as claims.estimates gives
    them (a repeated cell's name takes its index)."""
    keys = [name(cell.block, cell.density) for cell in cells]
    return [k if k not in keys[:i] else f"{k}-{i}" for i, k in enumerate(keys)]


def _table_cpu(cfg, results: Results, decided: Decided) -> Table:
    """The CPU sweep: milliseconds per product of each method and its speed-up over dense jnp.matmul; with our
    dynamic matmul, the static one's speed-up over it. A benchmark of our two JAX kernels (issue 62: the paper
    measured neither), so its intervals decide no claim."""
    cells = results.cpu
    kinds = cells[0].methods
    keys = _estimate_keys(cpu_key, cells)
    dynamic = "dynamic" in kinds
    over_dynamic = _estimate_keys(cpu_dynamic_key, cells) if dynamic else []
    slope = decided.estimates.get(CPU_SLOPE_KEY)
    return Table(
        "cpu",
        f"CPU, float32, m = k = {cfg.popsparse.cpu.m}, n = {cfg.popsparse.cpu.n}: milliseconds per product and "
        "speed-up over dense jnp.matmul",
        [
            "block",
            "density",
            "dense ms",
            *(f"{k} ms" for k in kinds),
            *(f"{k} speed-up" for k in kinds),
            "static speed-up: median of per-round ratios [95% interval]",
            *(["static over dynamic: median of per-round ratios [95% interval]"] if dynamic else []),
        ],
        [
            [cell.block, frac(cell.density), f"{cell.seconds('dense') * 1e3:.3g}"]
            + [f"{cell.seconds(k) * 1e3:.3g}" for k in kinds]
            + [fixed(cell.seconds("dense") / cell.seconds(k)) for k in kinds]
            + [decided.estimates[key]]
            + ([decided.estimates[over_dynamic[i]]] if dynamic else [])
            for i, (cell, key) in enumerate(zip(cells, keys, strict=True))
        ],
        caption="A benchmark of our JAX kernels on this CPU, not a claim of the paper (which measured an IPU and a "
        "GPU). Milliseconds: the median of the timing rounds, the same statistic for every method; every "
        "method of a cell is timed in the same interleaved rounds (dense included), and the interval is a "
        "bootstrap over those paired rounds. scipy: scipy.sparse.bsr_array @ X (numpy, one thread); bcsr: "
        "jax.experimental.sparse.BCSR (element-wise CSR). Every product was checked against the dense one "
        "before it was timed."
        + (
            f" The static speed-up over dense at density 1/{round(1 / published.PAPER_DENSITY)} grows with the "
            f"block size: slope of log2(speed-up) on log2(block) over every round {slope} (the paper's table, FP16 "
            "b=1 -> 16 on its IPU: log2(4.9 / 0.7) / 4 = 0.70)."
            if slope is not None
            else ""
        ),
    )


def _table_cpu_crossover(results: Results) -> Table:
    """Per block size, the density below which each CPU method beats dense."""
    kinds = results.cpu[0].methods
    crossovers = _cpu_crossovers(results)
    rows = [[b, *(_crossover_text(crossovers[(b, k)]) for k in kinds)] for b in sorted({b for b, _ in crossovers})]
    return Table("cpu_crossover", "CPU: density below which each method beats dense", ["block", *kinds], rows)


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    """The report's tables in order: the crossover sweep, then (with an IPU sweep) the paper's table, the dense
    rate and the figures' cells beside the paper's and the IPU grid, then (with a CPU sweep) the CPU timings and
    their crossovers. A table without data is left out."""
    out = [_table_ipu_crossover(cfg, results, decided)]
    if results.ipu:
        out += [
            _table_paper(cfg, results, decided),
            _table_dense_vs_paper(cfg, results, decided),
            _table_paper_figures(cfg, results, decided),
            _table_ipu_grid(cfg, results, decided),
        ]
    if results.cpu:
        out += [_table_cpu(cfg, results, decided), _table_cpu_crossover(results)]
    return [t for t in out if t is not None]


def render(cfg, results: Results, decided: Decided) -> Report:
    metrics: dict = {}
    if results.ipu:
        for (block, dtype), (s, d, _, _) in _paper_cells(results.ipu, decided).items():
            metrics[f"ipu/static_speedup_b{block}_{dtype}"] = s
            metrics[f"ipu/dynamic_speedup_b{block}_{dtype}"] = d
        for (block, dtype, kind), r in table_factors(decided).items():
            metrics[f"ipu/{kind}_sim_over_paper_b{block}_{dtype}"] = r
        if _at_figure_scale(cfg):
            shown = [(t, n) for t, n in sorted(dense_cells(results.ipu)) if n in published.PAPER_DENSE.get(t, {})]
            for t, n in shown + [(t, "best") for t in sorted({r.dtype for r in results.ipu})]:
                metrics[f"ipu/dense_sim_over_paper_{t}_n{n}"] = decided.estimates[dense_key(t, n)]
            for (kind, block, density), key in _figure_estimates(decided).items():
                metrics[f"ipu/{kind}_figure_sim_over_paper_b{block}_d{round(1 / density)}"] = (
                    _mean(decided, key) / published.PAPER_FIGURE_SPEEDUPS[(kind, block, density)].estimate
                )
    for b in _crossover_sweep(results):
        metrics[f"ipu/static_fp16_b{b}_crossover_sparsity"] = decided.estimates[crossover_key(b)]
    if results.cpu:
        for (b, k), cross in _cpu_crossovers(results).items():
            metrics[f"cpu/crossover_density_{k}_b{b}"] = float("nan") if cross is None else cross
    notes = [
        "The paper measured a Bow IPU (and an A100 for the GPU comparison); here the IPU is ipu_model's simulation "
        f"({results.device}, constants from product briefs, see ipu_model/README.md) and the CPU is this machine."
    ]
    return Report(
        "popsparse",
        "PopSparse: block-sparse matmul on the IPU",
        tables=tables(cfg, results, decided),
        figures=figures(results, table_factors(decided) if results.ipu else {}),
        metrics=metrics,
        notes=notes,
    )


__all__ = ["render", "table_factors", "tables"]

"""The PopSparse report: the tables (the paper's speed-up table beside the simulated IPU's, the dense rate and the
figures' cells beside the paper's, the IPU grid, the crossover sparsity per block size, the CPU sweep against its
peers and its crossovers) and the figures (papers/popsparse/figures.py: the sim/paper ratio of every cell of the
paper's table, speed-up over dense against density on the simulated IPU and on the CPU), around the claims of
papers/popsparse/claims.py."""

from __future__ import annotations

from core.report import Report, Table, fixed
from papers.popsparse import paper as published
from papers.popsparse.claims import (
    _at_figure_scale,
    _at_paper_clock,
    _crossovers,
    _dense_cells,
    _dense_factors,
    _figure_cells,
    _frac,
    _ipu_rows,
    _table_factors,
    crossover_sparsity,
    facts,
    measure,
)
from papers.popsparse.cpu import crossover_density, speedup_interval
from papers.popsparse.figures import _cpu_kinds, figures


def _reading(v) -> str:
    """A paper value read off its figure: estimate [low, high]."""
    return f"{fixed(v.estimate)} [{fixed(v.low)}, {fixed(v.high)}]"


def _spread(row: dict, kind: str) -> str:
    """A row's speed-ups of `kind` over the pattern seeds: lowest-highest."""
    values = row.get(f"{kind}_speedups", [row[f"{kind}_speedup"]])
    return f"{fixed(min(values))}-{fixed(max(values))}"


def _same_n_speedup(row: dict, kind: str) -> float:
    """The sparse speed-up at the batch n where the simulated dense matmul did best (same m, k, n)."""
    n = row["dense"].get("n")
    same = [c for c in row[kind].get("cells", []) if c.get("n") == n and c.get("fits")]
    return same[0]["tflops"] / row["dense"]["tflops"] if same and row["dense"].get("fits") else float("nan")


def _absolute_factors(ipu_rows) -> dict[tuple[int, str, str], float]:
    """(block, dtype, kind) -> the simulated best FLOP/s over the paper's, for the table's cells and dense (block 1,
    kind "dense"): the paper's sparse FLOP/s = its speed-up x the best of its dense figure. Each kind runs on its own
    clock (the simulated cells taken to the paper's 1.85 GHz)."""
    out = {}
    for (block, dtype), (p_static, p_dynamic) in published.PUBLISHED.items():
        found = _ipu_rows(ipu_rows, dtype, block, published.PAPER_DENSITY)
        if not found:
            continue
        best = published.paper_dense_best(dtype).estimate
        r = found[0]
        out[(1, dtype, "dense")] = _at_paper_clock(r["dense"]) / best
        for kind, paper in (("static", p_static), ("dynamic", p_dynamic)):
            out[(block, dtype, kind)] = _at_paper_clock(r[kind]) / (paper * best)
    return out


# ---------------------------------------------------------------------------------------------- tables


def _paper_cells(ipu_rows) -> dict[tuple[int, str], tuple[float, float, float, float]]:
    """Per published (block, dtype): the simulated static and dynamic speed-ups, best over n and at dense's n."""
    out = {}
    for block, dtype in published.PUBLISHED:
        found = _ipu_rows(ipu_rows, dtype, block, published.PAPER_DENSITY)
        if found:
            r = found[0]
            out[(block, dtype)] = (
                r["static_speedup"],
                r["dynamic_speedup"],
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
    return f"{'below' if at > 1 else 'above'} {1 - d:.1%} ({at:.2f}x at {_frac(d)})"


def _crossover_text(density: float | None) -> str:
    return "never on the grid" if density is None else f"{density:.3g} (sparsity {1 - density:.1%})"


def _cpu_crossovers(cpu_cells) -> dict[tuple[int, str], float | None]:
    """(block, method) -> the density below which the method beats dense (None: never on the grid)."""
    out = {}
    for b in sorted({cell["block"] for cell in cpu_cells}):
        cells = [cell for cell in cpu_cells if cell["block"] == b]
        for k in _cpu_kinds(cpu_cells):
            out[(b, k)] = crossover_density([x["density"] for x in cells], [x["dense"] / x[k] for x in cells])
    return out


def _static_best_n_text(cfg, ipu_rows: list[dict]) -> str:
    """How often static did best at the crossover sweep's largest n in the grid's static cells (every seed)."""
    top = max(cfg.popsparse.ipu.crossover_ns)
    ns = [n for r in ipu_rows for n in r.get("static_best_n", [])]
    if not ns:
        return ""
    return f"In the grid, static did best at n = {top} in {sum(n == top for n in ns)} of {len(ns)} (cell, seed)s."


def _table_ipu_crossover(cfg, crossover_rows: list[dict], ipu_rows: list[dict], device_name: str) -> Table | None:
    """Static FP16 speed-up by block size and density, and the sparsity from which static beats dense, beside the
    paper's figures (None without a crossover sweep)."""
    crossings = _crossovers(crossover_rows)
    if not crossings:
        return None
    dens = sorted({d for v in crossings.values() for d in v[0]}, reverse=True)
    return Table(
        "ipu_crossover",
        f"Simulated {device_name}, FP16: static speed-up over dense by block size and density (best over n = "
        f"{list(cfg.popsparse.ipu.crossover_ns)}), and the sparsity from which static beats dense",
        ["block", *(_frac(d) for d in dens), "crossover sparsity", "paper (its figures)"],
        [
            [
                b,
                *(fixed(dict(zip(v[0], v[1], strict=True)).get(d, float("nan"))) for d in dens),
                v[3],
                _paper_crossover_text(b),
            ]
            for b, v in crossings.items()
        ],
        caption="The paper: static FP16 beats dense 'at lower sparsity (around 90%)' than GPUs' 99%, without "
        "naming a block size; its table has b=1 at 0.7x and b=16 at 4.9x at 93.75% sparsity, and its "
        "figures (read by papers.popsparse.digitise) put b=1 at 0.74x at 1/16 and 1.22x at 1/32, b=4 at 1.52x "
        "and b=8 at 3.46x at 1/16. Speed-ups and crossovers are seed means; the crossover is interpolated in log "
        f"density between the grid points that bracket it. {_static_best_n_text(cfg, ipu_rows)}",
    )


def _table_paper(cfg, ipu_rows: list[dict], device_name: str) -> Table:
    """The paper's speed-up table (density 1/16) beside the simulated IPU's, with sim/paper per cell and, at the
    figures' m = k, each side's FP/s against the paper's."""
    factors = _table_factors(ipu_rows)
    absolute = _absolute_factors(ipu_rows) if _at_figure_scale(cfg) else {}
    rows = []
    for (block, dtype), (s, d, s_same, d_same) in _paper_cells(ipu_rows).items():
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
        f"simulated {device_name}",
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


def _table_dense_vs_paper(cfg, ipu_rows: list[dict], device_name: str) -> Table | None:
    """The simulated dense matmul's TFLOP/s beside the paper's dense figure (None off the figures' m = k)."""
    dense = _dense_cells(ipu_rows)
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
                fixed(cell.get("tflops", float("nan")), 1),
                fixed(_at_paper_clock(cell), 1),
                fixed(_at_paper_clock(cell) / paper.estimate) if paper else "n/a",
                fixed(_at_paper_clock(cell, "tflops_compute"), 1),
                fixed(_at_paper_clock(cell, "tflops_compute") / paper.estimate) if paper else "n/a",
                cell.get("plan", "does not fit"),
            ]
        )
    for t in sorted({t for t, _ in dense}):
        best = _ipu_rows(ipu_rows, t)[0]["dense"]
        paper = published.paper_dense_best(t)
        rows.append(
            [
                t,
                f"best ({best.get('n')})",
                _reading(paper),
                fixed(best.get("tflops", float("nan")), 1),
                fixed(_at_paper_clock(best), 1),
                fixed(_at_paper_clock(best) / paper.estimate),
                fixed(_at_paper_clock(best, "tflops_compute"), 1),
                fixed(_at_paper_clock(best, "tflops_compute") / paper.estimate),
                best.get("plan", "does not fit"),
            ]
        )
    return Table(
        "dense_vs_paper",
        f"Dense matmul at m = k = {published.FIGURE_M}: simulated {device_name} TFLOP/s at its own clock, and at "
        "the paper's Bow clock (whole program, and its compute cycles alone), beside the paper's dense "
        "figure",
        [
            "dtype",
            "n",
            "paper (Bow) [reading's range]",
            f"sim ({device_name})",
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


def _table_paper_figures(cfg, ipu_rows: list[dict], crossover_rows: list[dict], device_name: str) -> Table | None:
    """The paper's figure cells outside its table beside the simulated ones (None off the figures' m = k, or where
    no cell matches)."""
    figure = _figure_cells(ipu_rows, crossover_rows) if _at_figure_scale(cfg) else {}
    if not figure:
        return None
    rows = []
    for (kind, b, d), v in sorted(figure.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])):
        paper = published.PAPER_FIGURE_SPEEDUPS[(kind, b, d)]
        mean = sum(v) / len(v)
        rows.append([kind, b, _frac(d), _reading(paper), fixed(mean), f"{fixed(min(v))}-{fixed(max(v))}"])
        rows[-1].append(fixed(mean / paper.estimate))
    return Table(
        "paper_figures",
        f"FP16 speed-up over dense at m = k = {published.FIGURE_M}: the paper's figures (`ipu_density`, "
        f"`ipu_block_size`, read at pixel precision) beside the simulated {device_name}, for the cells outside its "
        "table",
        ["kind", "block", "density", "paper [reading's range]", "sim (seed mean)", "sim over seeds", "sim/paper"],
        rows,
        caption="Static cells the IPU grid lacks come from the crossover sweep (n = "
        f"{list(cfg.popsparse.ipu.crossover_ns)}). Best FLOP/s over n in both.",
    )


def _table_ipu_grid(cfg, ipu_rows: list[dict], device_name: str) -> Table:
    """Every cell of the simulated IPU sweep: static and dynamic speed-ups and the rates behind them."""
    c = cfg.popsparse.ipu
    return Table(
        "ipu_grid",
        f"Simulated {device_name}: speed-up over dense (best over n = {list(c.ns)}; static: "
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
                r["dtype"],
                r["block"],
                _frac(r["density"]),
                fixed(r["static_speedup"]),
                fixed(r["dynamic_speedup"]),
                _spread(r, "static"),
                _spread(r, "dynamic"),
                "/".join(str(n) for n in r.get("static_best_n", [r["static"].get("n", "n/a")])),
                fixed(r["static"].get("tflops_actual", float("nan"))),
                fixed(r["dense"].get("tflops", float("nan"))),
            ]
            for r in ipu_rows
        ],
    )


def _table_cpu(cfg, cpu_cells: list[dict]) -> Table:
    """The CPU sweep: milliseconds per product of each method and its speed-up over dense jnp.matmul."""
    kinds = _cpu_kinds(cpu_cells)
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
        ],
        [
            [cell["block"], _frac(cell["density"]), f"{cell['dense'] * 1e3:.3g}"]
            + [f"{cell[k] * 1e3:.3g}" for k in kinds]
            + [fixed(cell["dense"] / cell[k]) for k in kinds]
            + [speedup_interval(cell, "static", seed=i)]
            for i, cell in enumerate(cpu_cells)
        ],
        caption="Milliseconds: the median of the timing rounds, the same statistic for every method; every "
        "method of a cell is timed in the same interleaved rounds (dense included), and the interval is a "
        "bootstrap over those paired rounds. scipy: scipy.sparse.bsr_array @ X (numpy, one thread); bcsr: "
        "jax.experimental.sparse.BCSR (element-wise CSR). Every product was checked against the dense one "
        "before it was timed.",
    )


def _table_cpu_crossover(cpu_cells: list[dict]) -> Table:
    """Per block size, the density below which each CPU method beats dense."""
    kinds = _cpu_kinds(cpu_cells)
    crossovers = _cpu_crossovers(cpu_cells)
    rows = [[b, *(_crossover_text(crossovers[(b, k)]) for k in kinds)] for b in sorted({b for b, _ in crossovers})]
    return Table("cpu_crossover", "CPU: density below which each method beats dense", ["block", *kinds], rows)


def tables(
    cfg, ipu_rows: list[dict], cpu_cells: list[dict], device_name: str, crossover_rows: list[dict] | None = None
) -> list[Table]:
    """The report's tables in order: the crossover sweep, then (with an IPU sweep) the paper's table, the dense
    rate and the figures' cells beside the paper's and the IPU grid, then (with a CPU sweep) the CPU timings and
    their crossovers. A table without data is left out."""
    crossover_rows = crossover_rows or []
    out = [_table_ipu_crossover(cfg, crossover_rows, ipu_rows, device_name)]
    if ipu_rows:
        out += [
            _table_paper(cfg, ipu_rows, device_name),
            _table_dense_vs_paper(cfg, ipu_rows, device_name),
            _table_paper_figures(cfg, ipu_rows, crossover_rows, device_name),
            _table_ipu_grid(cfg, ipu_rows, device_name),
        ]
    if cpu_cells:
        out += [_table_cpu(cfg, cpu_cells), _table_cpu_crossover(cpu_cells)]
    return [t for t in out if t is not None]


def build_report(
    cfg, ipu_rows: list[dict], cpu_cells: list[dict], device_name: str, crossover_rows: list[dict] | None = None
) -> Report:
    metrics: dict = {}
    if ipu_rows:
        for (block, dtype), (s, d, _, _) in _paper_cells(ipu_rows).items():
            metrics[f"ipu/static_speedup_b{block}_{dtype}"] = s
            metrics[f"ipu/dynamic_speedup_b{block}_{dtype}"] = d
        for (block, dtype, kind), r in _table_factors(ipu_rows).items():
            metrics[f"ipu/{kind}_sim_over_paper_b{block}_{dtype}"] = r
        at_figure_m = _at_figure_scale(cfg)
        for (dtype, n), r in (_dense_factors(ipu_rows) if at_figure_m else {}).items():
            metrics[f"ipu/dense_sim_over_paper_{dtype}_n{n}"] = r
        for (kind, block, density), v in (_figure_cells(ipu_rows, crossover_rows or []) if at_figure_m else {}).items():
            metrics[f"ipu/{kind}_figure_sim_over_paper_b{block}_d{round(1 / density)}"] = (
                sum(v) / len(v) / published.PAPER_FIGURE_SPEEDUPS[(kind, block, density)].estimate
            )
    for b, v in _crossovers(crossover_rows or []).items():
        metrics[f"ipu/static_fp16_b{b}_crossover_sparsity"] = v[2]
    if cpu_cells:
        for (b, k), cross in _cpu_crossovers(cpu_cells).items():
            metrics[f"cpu/crossover_density_{k}_b{b}"] = float("nan") if cross is None else cross
    notes = [
        "The paper measured a Bow IPU (and an A100 for the GPU comparison); here the IPU is ipu_model's simulation "
        f"({device_name}, constants from product briefs, see ipu_model/README.md) and the CPU is this machine."
    ]
    return Report(
        "popsparse",
        "PopSparse: block-sparse matmul on the IPU",
        measure(cfg, ipu_rows, cpu_cells, crossover_rows),
        tables(cfg, ipu_rows, cpu_cells, device_name, crossover_rows),
        figures(ipu_rows, cpu_cells),
        metrics,
        notes,
        facts(cfg, ipu_rows),
    )


__all__ = ["build_report", "figures", "tables"]

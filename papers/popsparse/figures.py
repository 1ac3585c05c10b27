"""The PopSparse report's figures: the sim/paper ratio of every cell of the paper's table, and speed-up over dense
against density on the simulated IPU and on the CPU (papers/popsparse/report.py puts them in the report, with the
ratios the decision's estimates give)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from core import plots
from core.report import Figure, fixed
from papers.popsparse.paper import PAPER_DENSITY, PUBLISHED, TABLE_CELL_FACTOR
from papers.popsparse.results import CpuCell, Results, Row
from papers.popsparse.sweep import rows_at


def figures(results: Results, factors: dict[tuple[int, str, str], float]) -> list[Figure]:
    """`factors`: (block, dtype, kind) -> sim / paper of the paper's table cells (report.table_factors)."""
    out = []
    if any(r == r for r in factors.values()):
        out.append(
            Figure(
                "paper_ratio",
                _plot_ratio(factors),
                "Simulated / paper speed-up for every cell of the paper's table (density 1/16)",
            )
        )
    if results.ipu:
        out.append(Figure("ipu_speedup", _plot_ipu(results.ipu), "Simulated IPU: speed-up over dense vs density"))
    if results.cpu:
        out.append(Figure("cpu_speedup", _plot_cpu(results.cpu), "CPU: speed-up over dense vs density"))
    return out


def _log2_axes(ax) -> None:
    ax.axhline(1, color="k", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)


def _plot_ipu(rows: list[Row]):
    """Seed-mean speed-ups of every grid cell against density, per dtype; the paper's table as stars."""
    dtypes = sorted({r.dtype for r in rows})
    fig, axes = plots.figure(len(dtypes), panel=(5.5, 4), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes, strict=True):
        series, styles, stars = {}, {}, []
        blocks = [b for b in sorted({r.block for r in rows}) if rows_at(rows, dtype, b)]
        for i, block in enumerate(blocks):
            cells = sorted(rows_at(rows, dtype, block), key=lambda r: r.density)
            d = [r.density for r in cells]
            colour = f"C{i}"  # static and dynamic of a block share a colour; the paper's stars too
            series[f"static b={block}"] = (d, [r.static.speedup for r in cells])
            series[f"dynamic b={block}"] = (d, [r.dynamic.speedup for r in cells])
            styles[f"static b={block}"] = {"color": colour}
            styles[f"dynamic b={block}"] = {"color": colour, "marker": "s", "ls": "--"}
            if (block, dtype) in PUBLISHED:
                stars.append((PUBLISHED[(block, dtype)], colour))
        plots.curves(ax, series, xlabel="density", ylabel="speed-up over dense", styles=styles, legend=False)
        for (s, dy), colour in stars:
            ax.scatter([PAPER_DENSITY] * 2, [s, dy], marker="*", s=120, color=colour, zorder=5)
        _log2_axes(ax)
        ax.set_title(f"simulated IPU, {dtype} (stars: paper)")
        ax.legend(fontsize=7)
    return fig


def _plot_ratio(factors: dict[tuple[int, str, str], float]):
    """Heat map of sim/paper: rows (block, dtype), columns static and dynamic; colour log2 of the ratio."""
    rows = sorted({(b, t) for b, t, _ in factors})
    kinds = ["static", "dynamic"]
    grid = np.array([[factors.get((b, t, k), float("nan")) for k in kinds] for b, t in rows])
    fig, axes = plots.figure(1, panel=(4.6, 0.55 * len(rows) + 1.6), squeeze=False)
    ax = axes[0][0]
    limit = math.log2(2.0)
    image = ax.imshow(np.log2(grid), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    for i, j in itertools.product(range(len(rows)), range(len(kinds))):
        ax.text(j, i, fixed(grid[i, j]), ha="center", va="center", fontsize=10)
    ax.set_xticks(range(len(kinds)), kinds)
    ax.set_yticks(range(len(rows)), [f"b={b} {t}" for b, t in rows])
    ax.set_title(f"sim / paper (within {TABLE_CELL_FACTOR}x: target)")
    fig.colorbar(image, ax=ax, label="log2(sim / paper)")
    return fig


def _plot_cpu(cells: list[CpuCell]):
    """Speed-up over dense (medians of the rounds) of every CPU method against density, per block size."""
    kinds = cells[0].methods
    blocks = sorted({c.block for c in cells})
    fig, axes = plots.figure(len(blocks), panel=(4, 3.6), squeeze=False, sharey=True)
    for ax, b in zip(axes[0], blocks, strict=True):
        mine = sorted((c for c in cells if c.block == b), key=lambda c: c.density)
        d = [c.density for c in mine]
        plots.curves(
            ax,
            {k: (d, [c.seconds("dense") / c.seconds(k) for c in mine]) for k in kinds},
            xlabel="density",
            styles={k: {"ls": "-" if k in ("static", "dynamic") else ":"} for k in kinds},
            legend=False,
        )
        _log2_axes(ax)
        ax.set_title(f"CPU, block {b}")
    axes[0][0].set_ylabel("speed-up over dense jnp.matmul")
    axes[0][-1].legend(fontsize=7)
    return fig

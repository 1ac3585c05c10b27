"""What the decision (claims.py) and the report (report.py) both need of the sweeps, without either importing the
other: selecting rows, a density as the fraction it is printed as, a simulated cell's FLOP/s at the paper's clock,
the log-density interpolation that finds where a speed-up crosses 1, and the names of the estimates `decide` gives
`render`. numpy and math only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from papers.popsparse.paper import PAPER_CLOCK_HZ


def near(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def frac(d: float) -> str:
    """A density as printed: 1/16."""
    return f"1/{round(1 / d)}" if d < 1 else "1"


def rows_at(rows, dtype=None, block=None, density=None) -> list:
    """The rows (anything with .dtype, .block and .density: results.Row, claims.Planned) at `dtype`, `block` and
    `density` (None: any)."""
    return [
        r
        for r in rows
        if (dtype is None or r.dtype == dtype)
        and (block is None or r.block == block)
        and (density is None or near(r.density, density))
    ]


def at_paper_clock(cell, key: str = "tflops") -> float:
    """A simulated cell's FLOP/s (`key`) had it run at the paper's clock (the Bow is the Mk2 tile at 1.85 GHz: the
    same cycles); nan when it did not fit."""
    if not cell.fits:
        return float("nan")
    clock = cell.cycles / cell.seconds
    return getattr(cell, key) * PAPER_CLOCK_HZ / clock


def dense_cells(rows) -> dict[tuple[str, Any], Any]:
    """(dtype, n) -> the simulated dense cell, for every n simulated."""
    out = {}
    for r in rows:
        for cell in r.dense.cells:
            out[(r.dtype, cell.n)] = cell
    return out


def crossover_density(densities: Sequence[float], speedups: Sequence[float]) -> float | None:
    """The density below which a sparse matmul beats dense (speed-up 1), interpolated in log density between the
    grid points that bracket it. None when it never beats dense on the grid; the largest density when it always
    does."""
    order = np.argsort(densities)
    d = np.asarray(densities, float)[order]
    s = np.asarray(speedups, float)[order]
    wins = s >= 1
    if not wins.any():
        return None
    last = int(np.flatnonzero(wins)[-1])
    if last == len(d) - 1:
        return float(d[-1])
    # speed-up falls through 1 between d[last] and d[last + 1]
    ld0, ld1 = math.log(d[last]), math.log(d[last + 1])
    ls0, ls1 = math.log(s[last]), math.log(s[last + 1])
    t = ls0 / (ls0 - ls1) if ls0 != ls1 else 0.0
    return float(math.exp(ld0 + t * (ld1 - ld0)))


def crossover_sparsity(densities, speedups) -> tuple[float, str]:
    """(sparsity where the speed-up crosses 1, interpolated in log density; how it was found). Beyond the grid,
    the grid's edge, a bound on the crossover: 1 - the largest density when sparse beats dense everywhere (the true
    crossover is lower), 1 - the smallest when it never does (higher)."""
    cross = crossover_density(densities, speedups)
    if cross is None:
        return 1 - min(densities), f"above {1 - min(densities):.1%} (never faster on the grid)"
    if near(cross, max(densities)) and min(speedups) >= 1:
        return 1 - max(densities), f"below {1 - max(densities):.1%} (faster everywhere on the grid)"
    return 1 - cross, f"{1 - cross:.1%}"


# ---------------------------------------------------------------------------------------------- estimates' names


def _d(density: float) -> str:
    return f"d{round(1 / density)}"


def speedup_key(dtype: str, block: int, density: float, kind: str) -> str:
    """A grid cell's speed-up over dense (an interval over the pattern seeds)."""
    return f"ipu/speedup/{dtype}/b{block}/{_d(density)}/{kind}"


def crossover_speedup_key(block: int, density: float) -> str:
    """A crossover sweep cell's static FP16 speed-up over dense (an interval over the pattern seeds)."""
    return f"ipu/crossover_speedup/b{block}/{_d(density)}"


def crossover_key(block: int) -> str:
    """A block's static FP16 crossover sparsity at the seed-mean speed-ups (a point: simulated)."""
    return f"ipu/crossover_sparsity/b{block}"


def figure_key(kind: str, block: int, density: float) -> str:
    """Our FP16 speed-up at a cell of the paper's figures outside its table (an interval over the seeds)."""
    return f"ipu/figure_speedup/{kind}/b{block}/{_d(density)}"


def dense_key(dtype: str, n) -> str:
    """Simulated dense FLOP/s at the paper's clock over the paper's dense figure at n ('best': best over n)."""
    return f"ipu/dense_over_paper/{dtype}/" + (n if isinstance(n, str) else f"n{n}")


def cpu_key(block: int, density: float) -> str:
    """A CPU cell's static speed-up over dense (median of per-round ratios, bootstrap interval)."""
    return f"cpu/static_speedup/b{block}/{_d(density)}"


def cpu_dynamic_key(block: int, density: float) -> str:
    """A CPU cell's static speed-up over our dynamic matmul (median of per-round ratios, bootstrap interval)."""
    return f"cpu/static_over_dynamic/b{block}/{_d(density)}"


# the slope of log2(static speed-up over dense) on log2(block) at the paper's density over the CPU's rounds (t interval)
CPU_SLOPE_KEY = "cpu/static_speedup_slope"

"""What a PopSparse run computes (the Results `run` returns, and `decide` and `render` read): the simulated IPU's
grid and its static FP16 crossover sweep, as rows of speed-ups over dense per pattern seed with the simulated cells
behind them, and the CPU's timing rounds per (block, density) cell. No JAX: the decision reads these without it.

    row.static.speedups       one speed-up over dense per pattern seed (best FLOP/s over n of that seed's pattern
                              over dense's best); row.static.speedup their mean
    row.dense.cells           the simulated dense matmul at every n (cycles, seconds, FLOP/s, plan)
    cell.rounds["static"]     a CPU method's seconds per product in each interleaved timing round
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SPARSE_KINDS = ("static", "dynamic")
CPU_METHODS = ("static", "dynamic", "scipy", "bcsr")  # every method a CPU cell may time beside dense


@dataclass
class Cell:
    """One simulated matmul at one batch n (papers.popsparse.ipu.simulate_cell, less the simulator's own wall
    time): its cycles (the whole program, and its compute alone), the seconds at the simulated clock, FLOP/s
    (`tflops` dense-equivalent 2 m k n / time, `tflops_actual` over the non-zero elements, `tflops_compute` over
    the compute cycles alone) and its plan. A matmul with no plan fitting in tile memory has `fits` False, nan
    figures and the reason in `error`."""

    n: int | None
    fits: bool
    cycles: float = math.nan
    compute_cycles: float = math.nan
    seconds: float = math.nan
    tflops: float = math.nan
    tflops_actual: float = math.nan
    tflops_compute: float = math.nan
    plan: str = ""
    error: str = ""


@dataclass
class Best(Cell):
    """A kind's best over n: the fastest cell's figures (dense-equivalent FLOP/s), with every cell over n in `cells`.
    For a sparse kind, the pattern seeds' best cells as one: the first seed's n, plan and cells, each rate and
    cycle count the mean over the seeds (not fitting where any seed's best does not); `n` is None where none fits."""

    cells: list[Cell] = field(default_factory=list)


@dataclass
class Sparse:
    """One sparse kind (static or dynamic) of a row, over the pattern seeds."""

    speedups: list[float]  # per pattern seed: its best FLOP/s over n / dense's best (nan where either did not fit)
    best_n: list[int | None]  # per pattern seed: the n of its best
    best: Best  # the seeds' best cells as one

    @property
    def speedup(self) -> float:
        """The mean speed-up over the pattern seeds."""
        return float(np.mean(self.speedups))


@dataclass
class Row:
    """One (dtype, block, density) cell of a sweep: dense's best over n (no pattern: the same in every row of the
    dtype) and each sparse kind the sweep ran (the crossover sweep runs static only)."""

    dtype: str
    block: int
    density: float
    dense: Best
    static: Sparse | None = None
    dynamic: Sparse | None = None

    def kind(self, name: str) -> Sparse | None:
        """The sparse kind `name` ('static' or 'dynamic'), None where the sweep did not run it."""
        if name not in SPARSE_KINDS:
            raise ValueError(f"kind {name!r} is not one of {SPARSE_KINDS}")
        return getattr(self, name)


@dataclass
class CpuCell:
    """One (block, density) cell of the CPU sweep (papers.popsparse.cpu.time_cell): every method timed in the same
    interleaved rounds, dense included (round i of two methods pairs up)."""

    block: int
    density: float  # the density of the pattern drawn (a whole number of blocks), not the one asked for
    nnz_blocks: int
    error: float  # the static product's relative max error against the dense product
    rounds: dict[str, list[float]]  # method ("dense", "static", ...) -> seconds per product in each round

    def seconds(self, method: str) -> float:
        """A method's seconds per product: the median over the rounds (the same statistic for every method)."""
        return float(np.median(self.rounds[method]))

    @property
    def methods(self) -> list[str]:
        """The methods timed beside dense, in the report's order."""
        return [k for k in CPU_METHODS if k in self.rounds]


@dataclass
class Results:
    device: str = ""  # the simulated IPU (ipu_model.DeviceSpec.name)
    pattern_seeds: list[int] = field(default_factory=list)  # the seeds of the sparse cells' random block patterns
    ipu: list[Row] = field(default_factory=list)  # the grid: dtypes x blocks x densities, static and dynamic
    crossover: list[Row] = field(default_factory=list)  # the FP16 static sweep over blocks x densities
    cpu: list[CpuCell] = field(default_factory=list)  # blocks x densities

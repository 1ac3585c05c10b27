"""The paper's numbers the claims compare with (papers/popsparse/REFERENCES.md): its printed speed-up table, and its
figures as `python -m papers.popsparse.digitise` read them off the authors' notebook (data/figure_readings.json,
each value an interval at the figure's pixel precision)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from core.claims import Interval, printed

# Li et al. 2023, speed-up over the IPU's dense matmul at m = k = 4096, density 1/16 (REFERENCES.md, "speed-up
# table"), printed to one decimal: (block, dtype) -> (static, dynamic)
PUBLISHED = {
    (1, "float16"): (0.7, 0.4),
    (1, "float32"): (1.4, 0.9),
    (16, "float16"): (4.9, 1.9),
    (16, "float32"): (5.6, 3.8),
}
PAPER_DENSITY = 1 / 16
TABLE_DIGITS = 1
FIGURE_M = 4096  # every figure read is at m = k = 4096, on the paper's Bow IPU
PAPER_CLOCK_HZ = 1.85e9  # the paper's IPU, a Bow (REFERENCES.md, "IPU"): its FLOP/s are at this clock
# issue 26's targets for the simulated table and figure cells: every cell within 1.5x of the paper's, the median
# within 1.2x (the claims' rule; the report's ratio figure shows the first)
TABLE_CELL_FACTOR = 1.5
TABLE_MEDIAN_FACTOR = 1.2
READ = "read off the authors' figure at its pixel precision (papers.popsparse.digitise)"

READINGS_PATH = Path(__file__).parent / "data" / "figure_readings.json"


def load_readings(path: Path = READINGS_PATH) -> dict:
    """The committed readings of the paper's figures (written by `python -m papers.popsparse.digitise`)."""
    return json.loads(Path(path).read_text())


READINGS = load_readings()
_KEY = re.compile(r"^(static|dynamic) b=(\d+) d=1/(\d+) \((\w+)\)$")


def table_printed(block: int, dtype: str, kind: str) -> Interval:
    """A cell of the paper's table as it prints it (one decimal: 0.7 is [0.65, 0.75])."""
    return printed(f"{PUBLISHED[(block, dtype)][kind == 'dynamic']:.{TABLE_DIGITS}f}")


def _interval(low: float, estimate: float, high: float) -> Interval:
    return Interval(estimate, low, high, 1.0, READ)


def _figure_speedups() -> dict[tuple[str, int, float], Interval]:
    """(kind, block, density) -> the FP16 speed-up over dense the figures show; a cell both figures show (density
    1/16, b = 1 and 16) is the intersection of the two readings."""
    reads: dict[tuple[str, int, float], list[list[float]]] = {}
    for key, value in READINGS["speedups"].items():
        kind, block, denominator, _ = _KEY.match(key).groups()
        reads.setdefault((kind, int(block), 1 / int(denominator)), []).append(value)
    out = {}
    for cell, values in reads.items():
        low, high = max(v[0] for v in values), min(v[2] for v in values)
        estimate = math.exp(sum(math.log(v[1]) for v in values) / len(values))
        out[cell] = _interval(low, min(max(estimate, low), high), high)
    return out


# FP16 speed-ups over dense, best over n, from `ipu_density` (b = 1, 16 at 1/4 .. 1/32) and `ipu_block_size` (b = 1,
# 4, 8, 16 at 1/16)
FIGURE_SPEEDUPS = _figure_speedups()
# the figure cells outside the table: the `ipu-paper-figures` claim's
PAPER_FIGURE_SPEEDUPS = {
    cell: v for cell, v in FIGURE_SPEEDUPS.items() if not (cell[1] in (1, 16) and cell[2] == PAPER_DENSITY)
}
# dense FLOP/s (TFLOP/s) at m = k = 4096 by n, from `dense_ipu_gpu` (IPU markers not covered by the GPU's), and the
# FP16 best over n from the density figures' dense line (its n is not shown)
PAPER_DENSE = {
    dtype: {int(n): _interval(*(v / 1e12 for v in flops)) for n, flops in by_n.items()}
    for dtype, by_n in READINGS["dense_by_n"].items()
}
PAPER_DENSE_FP16_BEST = _interval(*(v / 1e12 for v in READINGS["dense_fp16_best"]["flops"]))


def paper_dense_best(dtype: str) -> Interval:
    """The paper's best dense TFLOP/s over n at m = k = 4096: FP16 from the density figures, FP32 the dense figure's
    highest marker."""
    if dtype == "float16":
        return PAPER_DENSE_FP16_BEST
    return max(PAPER_DENSE[dtype].values(), key=lambda v: v.estimate)


__all__ = [
    "FIGURE_M",
    "FIGURE_SPEEDUPS",
    "PAPER_CLOCK_HZ",
    "PAPER_DENSE",
    "PAPER_DENSITY",
    "PAPER_FIGURE_SPEEDUPS",
    "PUBLISHED",
    "READINGS_PATH",
    "TABLE_CELL_FACTOR",
    "TABLE_MEDIAN_FACTOR",
    "load_readings",
    "paper_dense_best",
    "table_printed",
]

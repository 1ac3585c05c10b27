"""What the static and dynamic block-sparse matmuls on the simulated IPU share: the block-product codelets' cost,
near-equal and balanced splits, the cost of the cross-tile reduction, and cycles of a sub-program.

Cost of a vertex multiplying blocks: Graphcore's published cycle estimates for PopSparse's codelets, with the
arguments its planners pass (papers/popsparse/REFERENCES.md, "Not from the paper"):
- static, every b: `static_cycles` (poplibs StaticMatMulPartitioner.cpp, static_::matmulComputeCycles);
- dynamic b = 1: `elementwise_cycles` (PerformanceEstimation.hpp, sparseDenseElementwiseMultiply);
- dynamic b = 4, 8, 16: `dynamic_block_cycles` (PerformanceEstimation.hpp, sparseDenseBlockMultiply).
The estimates are tile cycles: a worker's cycles times the six barrel-threaded contexts, plus the supervisor's.
Nothing is fitted to the paper.
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model import Program
from ipu_model.cost import CONV_COEFF_LOAD_BYTES_PER_CYCLE
from ipu_model.device import DeviceSpec
from ipu_model.programs import walk

META_BYTES = 4  # meta-information per block on a tile: its output row and input column, two uint16s
PARTIAL_DTYPE = "float32"  # partial sums of a band or a bucket (float16 products accumulate in float32)


def vertex_cycles(device: DeviceSpec, flops, nbytes, dtype: str):
    """`cost.default_vertex_cycles` (rounded up as the engine rounds it), vectorised so that the planners can cost
    many candidate plans at once: launch overhead + the larger of arithmetic and memory time on one worker."""
    per_worker_flops = device.tile_flops_per_cycle(dtype) / device.workers
    per_worker_bytes = device.memory_bytes_per_cycle / device.workers
    return np.ceil(device.vertex_overhead_cycles + np.maximum(flops / per_worker_flops, nbytes / per_worker_bytes))


ELEMENTWISE_SUPERVISOR_CYCLES = 30 + 44 + 46  # one bucket holding the worker's work (see elementwise_cycles)


def elementwise_cycles(device: DeviceSpec, nonzeros, rows, cols, dtype: str):
    """Cycles of one worker multiplying `nonzeros` single elements of W (b = 1), spread over `rows` output rows, by
    `cols` columns of X: Graphcore's estimate for its element-wise sparse x dense codelet, poplibs
    `lib/popsparse/PerformanceEstimation.hpp`, `sparseDenseElementwiseMultiply` (the forward pass), called as its
    comment asks (numX = rows, numY = the average non-zeros per row, numZ = cols) with one bucket holding the
    worker's information (numBuckets = numBucketsWithInfoForPN = averageSubgroupsPerBucket = 1, so the supervisor
    takes 30 + 44 + 46 = 120 cycles). The worker's cycles are thread cycles; the barrel-threaded tile runs each
    worker every `workers`-th cycle, so they are multiplied by `workers`, as the estimator does. Its inner loop
    takes 3 cycles per non-zero for 8 half (4 float) columns: about 5.3 (2.7) FLOP per tile cycle, against the
    AMP's 128 (32) for dense. Vectorised over array arguments."""
    z = np.asarray(cols, np.int64)
    x = np.asarray(rows, np.float64)
    y = np.asarray(nonzeros, np.float64) / np.maximum(x, 1)
    if np.dtype(dtype) == np.float16:
        overhead = np.where(z == 8, 25, np.where(z == 4, 27, 30))
        x_overhead = np.where(z == 8, 15, 11)
        general = (
            np.where(z // 8 > 0, 16 + (z // 8) * 3 * y, 0)
            + np.where(z & 4, 13 + 2 * y, 0)
            + np.where(z & 3, 11 + 2 * y * (z & 3), 0)
        )
        inner = np.where(z == 8, 3 * y, np.where(z == 4, 2 * y, general))
    else:
        overhead = np.where(z == 4, 22, np.where(z == 2, 24, 27))
        x_overhead = np.where(z == 4, 13, np.where(z == 2, 11, 12))
        general = (
            np.where(z // 4 > 0, 12 + (z // 4) * 3 * y, 0)
            + np.where(z & 2, 8 + (z // 2) * 2 * y, 0)  # as published: numZ / 2 * 2 * y
            + np.where(z & 1, 8 + 2 * y, 0)
            + np.where(z & 3, 3, 1)
        )
        inner = np.where(z == 4, 3 * y, np.where(z == 2, 2 * y, general))
    worker = overhead + (x_overhead + inner) * x
    return np.ceil(worker * device.workers + ELEMENTWISE_SUPERVISOR_CYCLES)


# poplibs lib/popsparse/StaticMatMulPartitioner.cpp, static_::matmulComputeCycles, block > 1 (per block size, per
# dtype): header cycles, per-row "x retained" cycles, and the per-block worker cycles y(n) for n columns a worker
_STATIC_BLOCK = {
    (4, "float16"): (17, 1, lambda n: np.where(n <= 2, 7 + n, 13 + n)),
    (4, "float32"): (13, 1, lambda n: 12 + (n - 1) * 4),
    (8, "float16"): (13, 1, lambda n: 14 + (n - 1) * 2),
    (8, "float32"): (13, 4, lambda n: 19 + (n - 1) * 8),
    (16, "float16"): (13, 1, lambda n: 19 + (n - 1) * 4),
    (16, "float32"): (16, 4, lambda n: np.where(n == 1, 29 * 2, (37 + (n - 1) * 8) * 2)),
}


def static_cycles(device: DeviceSpec, blocks, block: int, rows, cols, dtype: str):
    """Cycles of a static sparse x dense vertex (PopSparse's `StaticSparseDenseElementWise` for b = 1,
    `StaticBlockSparseDenseMatMul` for b = 4, 8, 16): Graphcore's estimate for these codelets, poplibs
    `lib/popsparse/StaticMatMulPartitioner.cpp`, `static_::matmulComputeCycles`, with the arguments its planner
    passes. `rows`: output block-rows holding at least one of the `blocks` (the codelet's work list has an entry per
    such row); `cols`: the vertex's columns of X.
    - b = 1: a worker vertex over its own rows (k = ceil(blocks / rows) non-zeros per row) and all `cols`; the
      estimate is the worker's cycles x `workers` (barrel-threaded contexts).
    - b > 1: a supervisor vertex: the supervisor loads each block into the AMP, the six workers split `cols`
      (n = ceil(cols / workers) each) and run it over their columns; cycles = 30 + header x workers + rows x
      (x_retained x workers + 17 + k x (16 + coefficient load + y(n) x workers)). For float32 at b = 8 and 16 the
      planner adds the zeroing of the float partials, (12 + ceil(bytes / 8 / workers)) x workers.
    Vectorised over array arguments."""
    w = device.workers
    m = np.maximum(np.asarray(rows, np.int64), 1)
    blocks = np.asarray(blocks, np.int64)
    k = -(-blocks // m)
    km1 = np.maximum(k - 1, 0)
    n = np.asarray(cols, np.int64)
    half = np.dtype(dtype) == np.float16
    if block == 1:
        if half:
            general = 33 + m * (11 + (n // 8) * (14 + km1 * 3) + (n % 8 != 0) * (9 + km1 * 2))
            cyc = np.where(n == 4, 31 + m * (7 + km1 * 2), np.where(n == 8, 31 + m * (8 + km1 * 3), general))
        else:
            general = 31 + m * (12 + (n // 4) * (10 + km1 * 3) + (n % 4 != 0) * (10 + km1 * 2))
            cyc = np.where(n == 2, 29 + m * (5 + km1 * 2), np.where(n == 4, 30 + m * (6 + km1 * 3), general))
        return np.where(blocks > 0, cyc * w, 33 * w).astype(np.float64)
    header, x_retained, y_cycles = _STATIC_BLOCK[(block, np.dtype(dtype).name)]
    nw = np.maximum(-(-n // w), 1)
    coeff = block * block * np.dtype(dtype).itemsize // CONV_COEFF_LOAD_BYTES_PER_CYCLE
    cyc = 30 + header * w + m * (x_retained * w + 17 + k * (16 + coeff + y_cycles(nw) * w))
    if not half and block in (8, 16):  # the float32 partials are zeroed first
        cyc = cyc + (12 + -(-(m * block * n * 4 * 8 // 64) // w)) * w  # 64-bit stores
    return cyc.astype(np.float64)


def dynamic_block_cycles(device: DeviceSpec, blocks, block: int, xblocks, cols, dtype: str):
    """Cycles of a dynamic block-sparse x dense vertex for b = 4, 8, 16 with float32 partials (PopSparse's
    `SparseDenseMatMulBlock`): Graphcore's estimate, poplibs `lib/popsparse/PerformanceEstimation.hpp`,
    `sparseDenseBlockMultiply`, called as its planner calls it for the forward pass (FullyConnectedPlan.cpp,
    OnTileMethod::ForwardAMPBlock: one bucket holding the tile's information, retainX, the workers splitting the
    columns): `blocks` of the bucket over `xblocks` block-rows, `cols` the columns of one worker. The supervisor
    loads every block's coefficients into the AMP, b^2 / 4 (half) or b^2 / 2 (float) cycles + 3 + 12 per load;
    the workers take, per block and load, the inner overhead + cols x cycles per column. At b = 16 a float16 block
    takes two loads when the tile has 8 conv units for float16 inputs with float32 partials (the device's
    `conv_units`, an assumption on Mk2). Total: worker cycles x `workers` + supervisor cycles.

    float32 at b = 16: the estimate's b = 16 branch is written for half inputs (poplibs has no float 16 x 16
    dynamic assembler codelet, and the branch applied to float runs at twice the FP32 peak). The only published
    float 16 x 16 block estimate is the static codelet's (two 16 x 8 passes, 2 (37 + 8 (n - 1)) worker cycles per
    block for n columns, `static_cycles`), so its per-block worker cycles stand in: two loads of 29 + 8 n cycles
    (the estimate subtracts 3 per load for retainX, so the inner overhead is 32), inside the dynamic estimate's
    supervisor and overheads (worker overhead 23, as the float-partials b = 16 branch)."""
    w = device.workers
    blocks = np.asarray(blocks, np.int64)
    xb = np.maximum(np.asarray(xblocks, np.int64), 1)
    z = np.asarray(cols, np.int64)
    half = np.dtype(dtype) == np.float16
    loads = 1
    if block == 4:
        per_z, overhead = (2, 26) if half else (4, 26)
        inner = np.where(z == 1, 17, np.where(z == 2, 18, 19)) if half else np.full(z.shape, 14)
    elif block == 8:
        per_z, overhead = (4, 20) if half else (8, 23)
        inner = np.where(z == 1, 22, np.where(z == 2, 23 if half else 22, 23))
    elif block == 16 and half:
        loads = 2 if device.conv_units_per_tile(dtype, PARTIAL_DTYPE) == 8 else 1
        per_z, overhead = 4, 23
        inner = np.where(z == 1, 24, np.where(z == 2, 25, 24))
    elif block == 16:  # float: the static float 16 x 16 codelet's worker cycles (docstring)
        loads, per_z, overhead = 2, 8, 23
        inner = np.full(z.shape, 32)
    else:
        raise ValueError(f"no dynamic block estimate for block size {block}: poplibs publishes 4, 8 and 16")
    coeff = block * block // (4 if half else 2)
    supervisor = 40 + 46 + 56 + blocks * (coeff + 3 + 12 * loads) + xb + 2  # one bucket, retainX
    worker = overhead + blocks * loads * (inner + z * per_z - 3)
    return (worker * w + supervisor).astype(np.float64)


def splits(n: int, parts: int) -> np.ndarray:
    """Boundaries of `parts` near-equal pieces of range(n)."""
    return np.array([round(i * n / parts) for i in range(parts + 1)], np.int64)


def busiest_piece(cost, n, parts):
    """The costlier of the two piece sizes a near-equal cut of `n` into `parts` gives (ceil and floor, at least 1):
    `cost(size)` for the busiest worker when the cost estimate is not monotonic in the size. Vectorised."""
    return np.maximum(cost(-(-n // parts)), cost(np.maximum(n // parts, 1)))


def balanced_cuts(counts: np.ndarray, parts: int) -> np.ndarray:
    """Boundaries (len parts + 1) cutting range(len(counts)) into `parts` contiguous pieces with near-equal sums of
    `counts` (work), each piece non-empty when len(counts) >= parts."""
    size = len(counts)
    parts = max(1, min(parts, size))
    cum = np.concatenate([[0], np.cumsum(counts)])
    inner = np.arange(1, parts)
    cuts = np.searchsorted(cum, cum[-1] * inner / parts, side="left")
    cuts = np.clip(cuts, inner, size - parts + inner)  # room for the pieces on either side
    cuts = np.maximum.accumulate(cuts - inner) + inner  # strictly increasing: no empty piece
    return np.concatenate([[0], cuts, [size]]).astype(np.int64)


def worker_grid(rows: int, workers: int) -> tuple[int, int]:
    """(row parts, column parts) of a tile's work over its workers: rows first, columns when rows run out."""
    wr = max(1, min(workers, rows))
    return wr, max(1, workers // wr)


def reduce_cycles(device: DeviceSpec, parts: int, elements: int, out_dtype: str, sent: float = 0.0) -> float:
    """Estimate of `ipu_model.ops.reduce` summing `parts` float32 partials of `elements` results mapped linearly:
    one exchange bringing each result's partials to its tile (`sent`: the most partial bytes one tile sends),
    then the workers add them."""
    per_tile = -(-elements // device.tiles)
    chunk = -(-per_tile // device.workers)
    osz = np.dtype(out_dtype).itemsize
    traffic = max(parts * per_tile * 4, sent)
    exchange = device.sync_cycles + math.ceil(traffic / device.exchange_bytes_per_cycle)
    return exchange + float(vertex_cycles(device, parts * chunk, parts * chunk * 4 + chunk * osz, PARTIAL_DTYPE))


def reduce_memory(device: DeviceSpec, parts: int, elements: int, out_dtype: str) -> float:
    """Bytes per tile of `ops.reduce`'s staged partials and its result."""
    per_tile = -(-elements // device.tiles)
    return per_tile * (parts * 4 + np.dtype(out_dtype).itemsize)


def program_cycles(engine, program: Program, part: str = "cycles") -> float:
    """Cycles the engine's profile charged to `program` and everything under it (all runs so far): all of them, or
    one `part` of them ("sync", "exchange", "compute" or "host")."""
    if part not in ("cycles", "sync", "exchange", "compute", "host"):
        raise ValueError(f"part {part!r} is not known: choose cycles, sync, exchange, compute or host")
    steps = engine.profile.steps
    return float(sum(getattr(steps[p.id], part) for p in walk(program) if p.id in steps))

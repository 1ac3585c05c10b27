"""The BSP cost model: vertex cycles, worker scheduling, exchange and sync.

A superstep costs  sync + exchange + compute  where
    exchange = max over tiles of max(bytes received, bytes sent) / exchange_bytes_per_cycle
               (a tile sends and receives at once; one transmission can be received by many tiles, so a tile that
               broadcasts an element pays for it once);
    compute  = max over tiles of the tile's worker makespan: the tile's vertices go, in the order they were added,
               each to the worker that is free first, and a worker runs its vertices one after another.
A vertex's cycles are wall-clock tile cycles on one worker. The tile is barrel-threaded: each of the `workers`
contexts issues every `workers`-th cycle, so one worker alone gets 1/workers of the tile's FLOP and memory rates and
a tile reaches its peak only with `workers` busy workers:
    cycles = vertex_overhead + max(flops / (tile FLOP/cycle / workers), bytes / (tile memory bytes/cycle / workers)).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ipu_model.device import DeviceSpec


def default_vertex_cycles(device: DeviceSpec, flops: float, nbytes: float, dtype: str) -> float:
    """Cycles of one vertex on one worker: launch overhead plus the larger of its arithmetic and memory time."""
    per_worker_flops = device.tile_flops_per_cycle(dtype) / device.workers
    per_worker_bytes = device.memory_bytes_per_cycle / device.workers
    return device.vertex_overhead_cycles + max(flops / per_worker_flops, nbytes / per_worker_bytes)


def schedule_workers(
    tiles: np.ndarray, cycles: np.ndarray, num_tiles: int, workers: int
) -> tuple[np.ndarray, np.ndarray]:
    """Assign vertices to workers: each, in order, to its tile's worker that is free first (lowest id on ties).

    Returns (worker of each vertex, per-tile makespan in cycles). Tiles with at most `workers` vertices, the common
    case, are handled without a Python loop.
    """
    tiles = np.asarray(tiles, np.int64)
    cycles = np.asarray(cycles, np.float64)
    worker = np.zeros(tiles.size, np.int64)
    makespan = np.zeros(num_tiles, np.float64)
    if tiles.size == 0:
        return worker, makespan
    order = np.argsort(tiles, kind="stable")
    sorted_tiles = tiles[order]
    starts = np.searchsorted(sorted_tiles, sorted_tiles, side="left")
    rank = np.arange(tiles.size) - starts  # position of the vertex among its tile's vertices, in order added
    counts = np.bincount(tiles, minlength=num_tiles)
    simple = counts[sorted_tiles] <= workers
    worker[order[simple]] = rank[simple]
    np.maximum.at(makespan, sorted_tiles[simple], cycles[order][simple])
    first = np.searchsorted(sorted_tiles, np.arange(num_tiles))
    for t in np.flatnonzero(counts > workers):
        members = order[first[t] : first[t] + counts[t]]
        heap = [(0.0, w) for w in range(workers)]
        for v in members:
            free_at, w = heapq.heappop(heap)
            worker[v] = w
            heapq.heappush(heap, (free_at + cycles[v], w))
        makespan[t] = max(f for f, _ in heap)
    return worker, makespan


def exchange_cycles(bytes_in: np.ndarray, bytes_out: np.ndarray, device: DeviceSpec) -> float:
    """Cycles of one exchange phase (without its sync): the busiest tile's traffic at the exchange rate."""
    busiest = max(float(np.max(bytes_in, initial=0)), float(np.max(bytes_out, initial=0)))
    return math.ceil(busiest / device.exchange_bytes_per_cycle)


def host_transfer_cycles(nbytes: int, tile_bytes: np.ndarray, device: DeviceSpec) -> float:
    """Cycles of a host stream copy (without its sync): the host link or the busiest receiving tile, whichever is
    slower."""
    link = nbytes / device.host_bytes_per_cycle
    tile = float(np.max(tile_bytes, initial=0)) / device.exchange_bytes_per_cycle
    return math.ceil(max(link, tile))


def streaming_transfer_cycles(nbytes: int, tile_bytes: np.ndarray, device: DeviceSpec) -> float:
    """Cycles of a copy from streaming memory (without its sync): the streaming link or the busiest receiving tile,
    whichever is slower."""
    link = nbytes / device.streaming_bytes_per_cycle
    tile = float(np.max(tile_bytes, initial=0)) / device.exchange_bytes_per_cycle
    return math.ceil(max(link, tile))


# The AMP unit (Graphcore's "accumulating matrix product"), as poplibs' cost estimators describe it:
WEIGHTS_PER_CONV_UNIT = 16  # inputs a conv unit takes per output: a chain of 4 x 4 half (8 x 2 float) loads
# Bytes per cycle the supervisor loads coefficients into the conv units. Poplar's target value is closed source;
# poplin halves it unless the option use128BitConvUnitLoad is set (off by default, lib/poplin/ConvOptions.hpp), so
# with 128-bit loads in hardware the default is 64 bits a cycle. An assumption (ipu_model/README.md, [POPLIBS]).
CONV_COEFF_LOAD_BYTES_PER_CYCLE = 8


def amp_matmul_cycles(device: DeviceSpec, rows, inner, cols, in_dtype: str, partials_dtype: str = "float32"):
    """Cycles of one tile multiplying [rows, inner] x [inner, cols] on the AMP unit: Graphcore's estimate for
    poplin's 1x1 convolution vertex (`ConvPartial1x1Out`), which poplin's matmul uses (a matmul is a 1-D
    convolution with batch = rows, input channels = inner, output channels = cols: lib/poplin/MatMul.cpp,
    getConvParams). Published in poplibs lib/poplin/PerformanceEstimation.hpp:
    getConvPartial1x1SupervisorCycleEstimate = ...OuterLoopCycleEstimateHalfFloat over
    ...InnerLoopCycleEstimateHalfFloat, with the arguments poplin's
    planner passes (lib/poplin/ConvModel.cpp, Plan::Amp): input channels in groups of WEIGHTS_PER_CONV_UNIT (16),
    output channels in groups of the conv units (`device.conv_units_per_tile(in_dtype, partials_dtype)`: 16 for
    float16 with float16 partials, 8 otherwise on Mk2), one conv group, the rows split near-equally over the
    workers; numLoads = conv units x 16 x bytes per input / CONV_COEFF_LOAD_BYTES_PER_CYCLE.

    The worker loop takes 4 (half) or 8 (float) thread cycles per row and group pair, so with six workers a tile
    does 16 x 16 half (16 x 8 float) MACs every 4 (8) tile cycles: Mk2's 128 (32) FLOP/cycle. On top: the per-pass
    supervisor work (19 + 6 or 7 cycles, the coefficient loads) and each worker's fixed ~40 cycles per pass.
    Vectorised over array arguments; rows, inner, cols >= 1."""
    w = device.workers
    units = device.conv_units_per_tile(in_dtype, partials_dtype)
    float_acts = np.dtype(in_dtype) == np.float32
    float_partials = np.dtype(partials_dtype) == np.float32
    rows = np.asarray(rows, np.int64)
    n_in = -(-np.asarray(inner, np.int64) // WEIGHTS_PER_CONV_UNIT)
    n_out = -(-np.asarray(cols, np.int64) // units)
    retention = (7, 3) if not float_acts and (float_partials or units == 16) else (0, 0)
    common = (not float_acts and units == 16) or float_partials  # the half/16-unit and float-partials code path
    core = 8 if float_acts else 4
    zero_per_group = 8 if float_acts and units == 16 else 4 if float_partials else 2

    def worker(e, zeroing: bool):  # one worker's thread cycles for e >= 1 rows (InnerLoopCycleEstimateHalfFloat)
        z = int(zeroing)
        if float_acts:
            cyc = np.where(
                e == 1, 47 + (2 + zero_per_group) * z, 46 + (2 + zero_per_group * e) * z + np.maximum(e - 3, 0) * core
            )
        elif common:
            z2 = 1 if zeroing else 2
            cyc = np.where(e == 1, 31 + z2, np.where(e == 2, 40 + z2, 36 + z2 + np.maximum(e - 3, 0) * core))
        else:
            cyc = np.where(
                e == 1,
                39 + (2 + zero_per_group) * z,
                np.where(
                    e == 2,
                    40 + (2 + zero_per_group * 2) * z,
                    41 + (2 + zero_per_group * e) * z + np.maximum(e - 3, 0) * core,
                ),
            )
        return cyc - retention[0]

    def inner_loop(zeroing: bool):  # the slowest worker x contexts, at least the fastest's + 14 (tagging it)
        more, fewer = -(-rows // w), rows // w  # a near-equal split gives workers one of two counts
        a = w * worker(more, zeroing)
        b = np.where(fewer > 0, w * worker(np.maximum(fewer, 1), zeroing), 0)  # no rows: no work list entry
        return np.maximum(np.maximum(a, b), np.minimum(a, b) + 14)  # not monotonic: 2 rows cost more than 3

    loads = units * WEIGHTS_PER_CONV_UNIT * np.dtype(in_dtype).itemsize // CONV_COEFF_LOAD_BYTES_PER_CYCLE
    with_zeroing, without = inner_loop(True), inner_loop(False)
    cycles = (
        50
        + w * (retention[0] + retention[1] * (n_in - 1))
        + 12
        + common
        + (n_in - 1) * (15 - common + 1 + n_out * (19 + 6 + loads + without))
        + (10 + 1 + n_out * (19 - common + 7 + loads + with_zeroing))
    )
    return cycles.astype(np.float64)

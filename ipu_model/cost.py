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

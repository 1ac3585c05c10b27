"""Dynamic block-sparse x dense matmul on the simulated IPU: Y[m, n] = W[m, k] X[k, n] with W's pattern supplied at
run time (PopSparse's `dynamic::` fully-connected matmul). The program is built for a capacity (a maximum density),
not for a pattern, so one compiled Engine runs any pattern that fits.

Plan (`plan_dynamic`). An X x Y x Z grid of tiles: X splits m, Y splits k, Z splits n. Partition p = (x, y) of W
(its rows x, columns y) owns the Z tiles (x, y, z). Each tile holds one bucket of C = Cm + Cs blocks: Cm, the
partition's expected blocks per tile at the maximum density, plus a spill area of Cs = ceil(slack Cm) ("meta-info
slack"). The planner costs every grid with the formulas the engine charges and keeps the quickest that fits.

Host side (`DynamicSparseMatmul.inputs`). A partition's blocks fill its own Z buckets, main areas first, then its
spill areas. Blocks beyond that overflow into the free spill areas of the next partitions in ring order
p + 1, p + 2, ... (p = x Y + y); the largest such distance D is the number of extra propagation rounds. A pattern
with more blocks than the total capacity, or whose overflow does not fit the free spill areas, is refused with an
error naming both. Buckets travel padded (partition id -1), with their meta-information (partition, block-row
and block-column within the partition) and the round count D.

Device side (`DynamicSparseMatmul.program`).
1. Distribution: tile (x, y, z) receives X[rows of y, columns of z] (one exchange).
2. Propagation, Z steps: each tile multiplies the blocks of its current bucket that belong to its partition into
   its float32 partial [rows of x, columns of z] (its six workers split the columns), then the buckets shift one
   tile along z (a Copy between two bucket buffers). After Z steps every tile has seen all its partition's buckets.
3. While the overflow flags say so (a `RepeatWhileTrue` on a flag the host set, shifted by an on-tile Copy): the
   spill areas shift one partition along the ring (and one tile along z), and Z more steps process spill areas
   only. Zero rounds when nothing overflowed, which costs one branch.
4. The partials of the Y partitions of k are summed onto Y's tiles (`ops.reduce`), or cast when Y = 1.
Every step costs what its capacity costs (a vertex runs through its whole bucket slot list), whatever the pattern.

One module over 400 lines: the plan, the codelets and the program are the steps above, sharing the capacity's
bucket arithmetic; apart, none of them reads without the others.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from core.sparsity.formats import BLOCK_SIZES, BlockPattern, BlockSparseMatrix, check_density
from ipu_model import Codelet, Copy, Execute, Graph, GraphError, HostToDevice, Program, RepeatWhileTrue, Sequence, ops
from ipu_model.device import DeviceSpec
from ipu_model.graph import Tensor
from papers.popsparse.ipu_common import (
    PARTIAL_DTYPE,
    busiest_piece,
    dynamic_block_cycles,
    elementwise_cycles,
    reduce_cycles,
    reduce_memory,
    splits,
    vertex_cycles,
)

META_FIELDS = 3  # per bucket slot: partition id, block-row and block-column within the partition (int16 each)
META_BYTES = 2 * META_FIELDS
MEMORY_FRACTION = 0.85


@dataclass(frozen=True)
class DynamicPlan:
    """The X x Y x Z tile grid and the bucket capacity (main + spill blocks per tile)."""

    m: int
    k: int
    n: int
    block: int
    dtype: str
    max_density: float
    gx: int  # X: partitions of m
    gy: int  # Y: partitions of k
    gz: int  # Z: splits of n
    main: int  # Cm, blocks per bucket for the partition's expected share at max_density
    spill: int  # Cs, the bucket's spill area
    estimate: float = 0.0  # cycles the planner expects (with `expected_rounds` overflow rounds)
    memory: float = 0.0  # bytes it expects on the fullest tile
    round_cycles: float = 0.0  # cycles of one overflow round
    expected_rounds: int = 0  # 1 when a uniformly random pattern at max_density is expected to overflow somewhere

    @property
    def capacity(self) -> int:
        """Blocks per bucket."""
        return self.main + self.spill

    @property
    def partitions(self) -> int:
        return self.gx * self.gy

    @property
    def tiles(self) -> int:
        return self.gx * self.gy * self.gz

    @property
    def total_capacity(self) -> int:
        return self.tiles * self.capacity

    def describe(self) -> str:
        return f"X{self.gx} x Y{self.gy} x Z{self.gz}, buckets of {self.main}+{self.spill} blocks"


def _check(m: int, k: int, n: int, block: int, max_density: float) -> None:
    if block not in BLOCK_SIZES:
        raise ValueError(f"block size {block} is not supported: choose one of {BLOCK_SIZES}")
    if min(m, k, n) <= 0:
        raise ValueError(f"m, k and n must be positive, got {m}, {k} and {n}")
    if m % block or k % block:
        raise ValueError(f"shape {(m, k)} is not divisible by the block size {block}")
    check_density(max_density)


def _step_cycles(device, slots, block, rows, cols, dtype, init: bool):
    """A pass over `slots` bucket slots into a worker's [rows, cols] float32 partial (`cols`: the worker's columns;
    `init`: the first step, which writes the whole partial, later ones the rows the slots can touch). b = 1:
    Graphcore's element-wise estimate for a worker; b = 4, 8, 16: its block estimate, which covers the tile's six
    workers and the supervisor (`ipu_common.dynamic_block_cycles`)."""
    touched = rows if init else np.minimum(slots * block, rows)
    if block == 1:
        return elementwise_cycles(device, slots, touched, cols, dtype)
    return dynamic_block_cycles(device, slots, block, -(-touched // block), cols, dtype)


def plan_dynamic(
    device: DeviceSpec, m: int, k: int, n: int, block: int, max_density: float, dtype: str = "float16", slack=0.3
) -> DynamicPlan:
    """Choose the X x Y x Z grid minimising the engine's cost formulas (no overflow) among grids that fit."""
    _check(m, k, n, block, max_density)
    b, isz, w = block, np.dtype(dtype).itemsize, device.workers
    rb, cb = m // b, k // b

    def candidates(size: int) -> np.ndarray:
        return np.array(sorted({*range(1, min(size, 64) + 1), *(2**e for e in range(7, 16) if 2**e <= size)}))

    gx, gy, gz = (a.ravel() for a in np.meshgrid(candidates(rb), candidates(cb), candidates(n), indexing="ij"))
    ok = gx * gy * gz <= device.tiles
    gx, gy, gz = gx[ok], gy[ok], gz[ok]
    mb, kb, cols = -(-rb // gx), -(-cb // gy), -(-n // gz)
    main = np.ceil(max_density * mb * kb / gz).astype(np.int64)
    spill = np.ceil(slack * main).astype(np.int64)
    cap = main + spill
    bucket = cap * (b * b * isz + META_BYTES)
    wc = np.minimum(w, cols)
    cw = -(-cols // wc)

    def step_cycles(slots, init):  # the program cuts the columns near-equally over the workers: the busiest's
        return busiest_piece(lambda c: _step_cycles(device, slots, b, mb * b, c, dtype, init), cols, wc)

    first = step_cycles(cap, True)
    later = step_cycles(cap, False)
    xslice = kb * b * cols * isz
    sources = k * n * isz / device.tiles
    shift = device.sync_cycles + np.ceil(bucket / device.exchange_bytes_per_cycle)
    partitions = gx * gy
    cycles = (
        device.sync_cycles
        + np.ceil(np.maximum(xslice, sources) / device.exchange_bytes_per_cycle)
        + first
        + (gz - 1) * (later + shift)
    )
    # the overflow loop: a branch after an on-tile flag shift, then one round per overflow distance. Buckets are
    # sized for the mean of a uniformly random pattern at max_density; a round is expected when at least one
    # partition is expected to exceed its Z buckets (binomial tail), as the paper's benchmark patterns are
    branch = device.sync_cycles + np.ceil(2 * 4 * partitions / device.memory_bytes_per_cycle)
    spill_shift = device.sync_cycles + np.ceil(spill * (b * b * isz + META_BYTES) / device.exchange_bytes_per_cycle)
    spill_step = step_cycles(spill, False)
    overflowing = partitions * binom.sf(gz * cap, mb * kb, max_density)
    expected_rounds = (overflowing >= 0.5).astype(np.int64)
    round_cycles = branch + gz * (spill_shift + spill_step)
    cycles = cycles + branch + expected_rounds * round_cycles
    partial = mb * b * cols * 4
    memory = 2 * bucket + xslice + partial + sources + 8 * kb * b  # two bucket buffers; X rows as regions
    if dtype == "float32":
        finish, finish_memory = np.zeros(len(gy)), np.zeros(len(gy))
    else:  # Y = 1: a cast of the partial, where it lives
        cast = mb * b * cw
        finish = vertex_cycles(device, cast, cast * (4 + isz), PARTIAL_DTYPE)  # no sync: the loop's branch synced
        finish_memory = mb * b * cols * isz
    reduce = [reduce_cycles(device, int(y), m * n, dtype, sent=float(p)) for y, p in zip(gy, partial, strict=True)]
    cycles = cycles + np.where(gy > 1, reduce, finish)
    memory = memory + np.where(gy > 1, reduce_memory(device, gy, m * n, dtype), finish_memory)
    fits = memory <= MEMORY_FRACTION * device.memory_per_tile
    if not fits.any():
        raise GraphError(f"dynamic sparse matmul {m}x{k}x{n} (block {b}, {dtype}) does not fit on {device.name}")
    i = np.flatnonzero(fits)[np.argmin(cycles[fits])]
    return DynamicPlan(
        m, k, n, b, dtype, float(max_density), int(gx[i]), int(gy[i]), int(gz[i]), int(main[i]), int(spill[i]),
        float(cycles[i]), float(memory[i]), float(round_cycles[i]), int(expected_rounds[i]),
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------------- codelet
_CODELETS: dict[tuple, Codelet] = {}


def _bucket_codelet(block: int, dtype: str, init: bool) -> Codelet:
    """Vertex processing bucket slots: vals [slots * b * b], meta [slots * 3] (partition, block-row, block-column),
    part [1] (the tile's partition), x [k / Y, cols], acc [m / X, cols] float32 (overwritten when `init`)."""
    key = (block, dtype, init)
    if key in _CODELETS:
        return _CODELETS[key]
    b = block

    def fn(vals, meta, part, x, acc):
        v, slots = meta.shape[0], meta.shape[1] // META_FIELDS
        meta = meta.reshape(v, slots, META_FIELDS).astype(np.int64)
        mine = meta[..., 0] == part[:, :1]  # padding (-1) and other partitions' blocks are skipped
        vals = vals.reshape(v, slots, b, b).astype(np.float32) * mine[..., None, None]
        cols = acc.shape[2]
        xg = x.reshape(v, -1, b, cols)[np.arange(v)[:, None], np.where(mine, meta[..., 2], 0)].astype(np.float32)
        out = np.zeros_like(acc, np.float32) if init else acc.astype(np.float32)
        out = out.reshape(v, -1, b, cols)
        np.add.at(out, (np.arange(v)[:, None], np.where(mine, meta[..., 1], 0)), np.einsum("vsij,vsjc->vsic", vals, xg))
        return {"acc": out.reshape(acc.shape)}

    def cycles(device, vals, meta, part, x, acc):
        return float(_step_cycles(device, meta[0] // META_FIELDS, b, acc[0], acc[1], dtype, init))

    _CODELETS[key] = Codelet(
        f"dynamic_block{b}{'_init' if init else ''}",
        fn,
        inputs=("vals", "meta", "part", "x"),
        inouts=("acc",),
        flops=lambda vals, meta, part, x, acc: 2 * vals[0] * acc[1],
        cycles=cycles,
        compute_dtype=dtype,
    )
    return _CODELETS[key]


# ------------------------------------------------------------------------------------------------------ program
@dataclass
class DynamicSparseMatmul:
    """A dynamic sparse matmul built for `plan`: `upload` streams a pattern's buckets in (host inputs from
    `inputs()`), `program` multiplies them with `x` into `y`. Run `Sequence(upload, program)` for each pattern."""

    plan: DynamicPlan
    x: Tensor
    y: Tensor
    upload: Program
    program: Program
    streams: tuple[str, str, str]  # host streams: values, meta-information, overflow flags

    def inputs(self, matrix: BlockSparseMatrix) -> dict[str, np.ndarray]:
        """Host arrays for the upload streams: `matrix`'s blocks placed in buckets (see the module docstring)."""
        values, meta, flags = assign_buckets(self.plan, matrix.pattern, np.asarray(matrix.values))
        return dict(zip(self.streams, (values, meta, flags), strict=True))

    @property
    def sequence(self) -> Program:
        return Sequence(self.upload, self.program)


def assign_buckets(plan: DynamicPlan, pattern: BlockPattern, values: np.ndarray | None = None):
    """(values [P, Z, C b b], meta [P, Z, C 3] int16, flags [P + 1] int32) for `pattern` under `plan`: each block
    in a bucket slot of its own partition, or overflowed into a later partition's spill area (flags[1..D] = 1 for
    D rounds of propagation). Raises ValueError naming the blocks and the capacity when they do not fit."""
    b, (rb, cb) = plan.block, (plan.m // plan.block, plan.k // plan.block)
    if pattern.shape != (plan.m, plan.k) or pattern.block != b:
        raise ValueError(
            f"pattern {pattern.shape} with block {pattern.block} does not match the matmul built for "
            f"{(plan.m, plan.k)} with block {b}"
        )
    nnz, P, Z, C, Cm = pattern.nnz_blocks, plan.partitions, plan.gz, plan.capacity, plan.main
    if nnz > plan.total_capacity:
        raise ValueError(
            f"the pattern has {nnz} non-zero blocks (density {pattern.density:.4g}); the matmul was built for at most "
            f"{plan.total_capacity} ({plan.tiles} buckets of {C} blocks, max density {plan.max_density:.4g})"
        )
    xs, ys = splits(rb, plan.gx), splits(cb, plan.gy)
    px = np.searchsorted(xs, pattern.rows, side="right") - 1
    py = np.searchsorted(ys, pattern.cols, side="right") - 1
    part = px * plan.gy + py
    order = np.argsort(part, kind="stable")
    counts = np.bincount(part, minlength=P)
    start = np.concatenate([[0], np.cumsum(counts)])
    rank = np.arange(nnz) - start[part[order]]  # position of the block within its partition
    home = part[order].copy()
    # overflow: ranks past the partition's own Z*C slots go, in ring order, to later partitions' free spill slots
    slot_rank = rank.copy()
    own = np.minimum(counts, Z * C)
    next_free = np.maximum(own, Z * Cm)  # spill slots (ranks >= Z*Cm) not used by the partition's own blocks
    rounds = 0
    for p in np.flatnonzero(counts > Z * C).tolist():
        todo = np.flatnonzero((part[order] == p) & (rank >= Z * C))
        for d in range(1, P):
            if not todo.size:
                break
            q = (p + d) % P
            take = min(todo.size, Z * C - int(next_free[q]))
            if take > 0:
                home[todo[:take]] = q
                slot_rank[todo[:take]] = next_free[q] + np.arange(take)
                next_free[q] += take
                todo = todo[take:]
                rounds = max(rounds, d)
        if todo.size:
            free = int(np.sum(Z * C - next_free))
            raise ValueError(
                f"the pattern's {nnz} blocks fit the capacity of {plan.total_capacity} blocks, but partition {p} "
                f"overflows by {int(counts[p] - Z * C)} blocks and only {free} spill slots are free"
            )
    z, slot = slot_rank % Z, slot_rank // Z  # round-robin over the partition's buckets: main areas fill first
    vals = np.zeros((P, Z, C, b * b), plan.dtype)
    meta = np.full((P, Z, C, META_FIELDS), -1, np.int16)
    if values is not None:
        vals[home, z, slot] = np.asarray(values)[order].reshape(nnz, b * b)
    rows, cols = pattern.rows[order], pattern.cols[order]
    meta[home, z, slot] = np.stack([part[order], rows - xs[px[order]], cols - ys[py[order]]], axis=1)
    flags = np.zeros(P + 1, np.int32)
    flags[1 : rounds + 1] = 1
    return vals.reshape(P, Z, -1), meta.reshape(P, Z, -1), flags


def _roll_pairs(src: Tensor, dst: Tensor, dp: int, dz: int) -> list[tuple[Tensor, Tensor]]:
    """Pairs for dst[p, z] = src[(p + dp) % P, (z - dz) % Z] over the first two axes (rectangular pieces)."""
    P, Z = src.shape[:2]

    def pieces(size: int, src_shift: int):  # (dst slice, src slice) covering range(size)
        s = src_shift % size
        out = [(slice(0, size - s), slice(s, size)), (slice(size - s, size), slice(0, s))]
        return [(d, q) for d, q in out if d.stop > d.start]

    return [(src[sp, sz], dst[dp_, dz_]) for (dp_, sp), (dz_, sz) in itertools.product(pieces(P, dp), pieces(Z, -dz))]


def dynamic_sparse_matmul(
    graph: Graph,
    m: int,
    k: int,
    n: int,
    block: int,
    max_density: float,
    dtype: str = "float16",
    x: Tensor | None = None,
    plan: DynamicPlan | None = None,
    slack: float = 0.3,
    name: str = "dynamic",
) -> DynamicSparseMatmul:
    """Build the dynamic matmul for any pattern of density <= max_density (see the module docstring). `x` [k, n]
    (default: a new variable mapped linearly) is the dense operand; the result `y` [m, n] has x's dtype."""
    _check(m, k, n, block, max_density)
    dev, b = graph.device, block
    if x is None:
        x = graph.add_variable((k, n), dtype, f"{name}/x")
        graph.map_linearly(x)
    if tuple(x.shape) != (k, n) or x.dtype.name != dtype or dtype not in ("float16", "float32"):
        raise GraphError(f"{name}: x must be [k, n] = {(k, n)} of float16 or float32 {dtype}, got {x.shape} {x.dtype}")
    plan = plan or plan_dynamic(dev, m, k, n, block, max_density, dtype, slack)
    if plan.tiles > graph.num_tiles:
        raise GraphError(f"{name}: plan {plan.describe()} needs {plan.tiles} tiles, the graph has {graph.num_tiles}")
    P, Z, C, Cm = plan.partitions, plan.gz, plan.capacity, plan.main
    xs, ys, zs = splits(m // b, plan.gx) * b, splits(k // b, plan.gy) * b, splits(n, Z)
    tile = lambda xi, yi, zi: (xi * plan.gy + yi) * Z + zi
    bucket_tiles = np.arange(P * Z).reshape(P, Z, 1)

    def buffer(width: int, dt: str, label: str) -> Tensor:
        t = graph.add_variable((P, Z, C * width), dt, f"{name}/{label}")
        t.var.tile[:] = np.broadcast_to(bucket_tiles, t.shape).reshape(-1)
        return t

    vals = [buffer(b * b, dtype, f"values{i}") for i in (0, 1)]  # two buffers: buckets shift from one to the other
    meta = [buffer(META_FIELDS, "int16", f"meta{i}") for i in (0, 1)]
    part = graph.add_constant(np.broadcast_to(np.arange(P).reshape(P, 1, 1), (P, Z, 1)), "int16", f"{name}/part")
    part.var.tile[:] = bucket_tiles.reshape(-1)
    xbuf = graph.add_variable((plan.gx, k, n), dtype, f"{name}/x_tiles")
    graph.map_blocks(xbuf, [range(plan.gx + 1), ys, zs], lambda xi, yi, zi: tile(xi, yi, zi))
    partial = graph.add_variable((plan.gy, m, n), PARTIAL_DTYPE, f"{name}/partials")
    graph.map_blocks(partial, [range(plan.gy + 1), xs, zs], lambda yi, xi, zi: tile(xi, yi, zi))

    steps: dict[tuple, Execute] = {}

    def step(buf: int, lo: int, init: bool = False) -> Execute:
        """Every tile's workers run through slots [lo, C) of its bucket in buffer `buf`, each on its columns."""
        if (buf, lo, init) in steps:
            return steps[buf, lo, init]
        cs = graph.add_compute_set(f"{name}/{'spill' if lo else 'bucket'}{buf}{'_init' if init else ''}")
        code = _bucket_codelet(b, dtype, init)
        for xi, yi, zi in itertools.product(range(plan.gx), range(plan.gy), range(Z)):
            p, (r0, r1), (k0, k1) = xi * plan.gy + yi, xs[xi : xi + 2], ys[yi : yi + 2]
            c0, c1 = int(zs[zi]), int(zs[zi + 1])
            cuts = (splits(c1 - c0, min(dev.workers, c1 - c0)) + c0).tolist()
            for a0, a1 in itertools.pairwise(cuts):
                graph.add_vertex(
                    cs,
                    code,
                    tile(xi, yi, zi),
                    vals=vals[buf][p, zi, lo * b * b :],
                    meta=meta[buf][p, zi, lo * META_FIELDS :],
                    part=part[p, zi],
                    x=xbuf[xi, k0:k1, a0:a1],
                    acc=partial[yi, r0:r1, a0:a1],
                )
        steps[buf, lo, init] = Execute(cs)
        return steps[buf, lo, init]

    def slots(t: Tensor, lo: int) -> Tensor:  # bucket slots [lo, C) of every tile's bucket
        return t[:, :, lo * (t.shape[2] // C) :]

    def shift(src: int, dp: int, lo: int, label: str) -> Copy:
        """Slots [lo, C) of every bucket from buffer `src` to the other: one tile along z, `dp` partitions along
        the ring."""
        pairs = [pr for a in (vals, meta) for pr in _roll_pairs(slots(a[src], lo), slots(a[1 - src], lo), dp, 1)]
        return Copy([s for s, _ in pairs], [d for _, d in pairs], name=f"{name}/{label}")

    # 2. Z steps over whole buckets, shifting along z between steps
    zshift = [shift(0, 0, 0, "shift_z0"), shift(1, 0, 0, "shift_z1")]
    cycle: list[Program] = [step(0, 0, init=True)]
    cur = 0
    for _ in range(Z - 1):
        cycle += [zshift[cur], step(1 - cur, 0)]
        cur = 1 - cur
    # 3. overflow rounds over spill areas: one partition along the ring (and z), then Z - 1 shifts along z
    spill_z = [shift(0, 0, Cm, "spill_shift_z0"), shift(1, 0, Cm, "spill_shift_z1")]
    body: list[Program] = [shift(cur, 1, Cm, "spill_shift_ring"), step(1 - cur, Cm)]
    at = 1 - cur
    for _ in range(Z - 1):
        body += [spill_z[at], step(1 - at, Cm)]
        at = 1 - at
    if at != cur:  # back to the buffer the round started from (an on-tile copy)
        back = [slots(a[at], Cm) for a in (vals, meta)], [slots(a[cur], Cm) for a in (vals, meta)]
        body.append(Copy(*back, name=f"{name}/spill_back"))
    flags = graph.add_variable(P + 1, "int32", f"{name}/overflow")
    graph.set_tile_mapping(flags, 0)
    rounds = RepeatWhileTrue(
        Copy(flags[1:], flags[:-1], name=f"{name}/next_round"), flags[0:1], Sequence(*body), name=f"{name}/overflow"
    )
    # 4. partials of the k partitions onto Y
    if plan.gy > 1:
        finish, y = ops.reduce(graph, partial, axis=0, op="add", out_dtype=dtype, name=f"{name}/reduce")
    elif dtype == PARTIAL_DTYPE:
        finish, y = Sequence(), partial[0]
    else:
        y = graph.add_variable((m, n), dtype, f"{name}/y")
        y.var.tile[:] = partial.var.tile
        finish = ops.cast(graph, partial[0], y, f"{name}/cast")
    distribute = Copy(x.expand_dims(0).broadcast_to(xbuf.shape), xbuf, name=f"{name}/distribute")
    streams = (f"{name}/values", f"{name}/meta", f"{name}/overflow")
    upload = Sequence(*(HostToDevice(s, t) for s, t in zip(streams, (vals[0], meta[0], flags), strict=True)))
    program = Sequence(distribute, *cycle, rounds, finish, name=name)
    return DynamicSparseMatmul(plan, x, y, upload, program, streams)

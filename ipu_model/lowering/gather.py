"""Gathers and scatter-adds of whole windows (`jnp.take`, `take_along_axis`, `x[i, j]`, their gradients): each
index vector picks one element along each indexed axis and takes the whole of every other axis. Any such XLA gather
becomes a row gather: the operand permuted to [B..., N..., R...] (its batching axes, the indexed axes in the index
vector's order, the window axes) and seen as a table [B, N, R] of B batches of N rows, each index vector one flat row
offset (sum of index x stride, computed on chip by an integer vertex when the vector has more than one index), the
rows taken permuted back to JAX's result order (views: no copy). Any other gather (a window narrower than its axis
along a non-indexed axis, a slice of several elements along an indexed one) is refused by name before anything is
built.

- A table in tile memory goes the way poplibs' `popops::multiSlice` goes without a plan (`lib/popops/DynamicSlice.cpp`,
  `multiSliceInternal`, more than six offsets): the table is laid out so that each tile holds every row of a range
  of columns (an exchange, unless it already is), every such tile receives all of its batch's offsets, and one
  MultiSlice vertex per tile copies the selected rows of its columns into the result, which stays there. Batches
  run side by side, each on its own share of the tiles. The vertex costs poplibs' estimate
  (`PerformanceEstimation.cpp`, `getMultiSliceCycleEstimate`): per worker 30 + m (19 + ceil(E / 2) x 2) cycles for
  m offsets of E elements each (half and 32-bit rows copy 2 elements every 2 cycles), the offsets split over the six
  workers, every offset in range (the tile holds every row), times the six workers.
- A table in streaming memory (`lower(..., remote=...)`) whose rows are the table's rows (one index along the axis
  before the last) is read by one `RemoteRead` with the rows' flat offsets (batch x N + index, computed on chip by an
  integer-add vertex: poplibs' 5 + 7 n thread cycles), as the SparQ authors' `gatherGrouped` reads its rows; any other
  gather of it streams the whole argument in first.
An index outside its axis: JAX fills (FILL_OR_DROP) or clips (CLIP, and PROMISE_IN_BOUNDS, which XLA clamps); on chip
the rule does the same (a flat offset with any index outside is outside the table), from streaming memory it is an
error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ipu_model.graph import Codelet, Tensor
from ipu_model.lowering.builder import Builder, Remote, UnsupportedError, rule
from ipu_model.lowering.costs import thread_cycles, vertex_cycles
from ipu_model.programs import Copy, Execute, RemoteRead


@dataclass(frozen=True)
class _Plan:
    """How a gather (or scatter) of whole windows is a row gather of L lookups in a table [B, N, R]: the operand's
    axes permuted to (batching, indexed, window), the indices' to (batching, other, index vector), and the rows
    taken, shaped `mid` = (batching, other, window) sizes, permuted by `out_perm` to JAX's result."""

    operand_perm: tuple[int, ...]
    batches: int
    n: int
    row: int
    lookups: int
    sizes: tuple[int, ...]  # the indexed axes' sizes, in the index vector's order
    index_perm: tuple[int, ...]
    mid: tuple[int, ...]
    out_perm: tuple[int, ...]

    @property
    def rows(self) -> bool:
        """One index along the axis just before the window, batching axes leading, result in that order: the
        operand's own rows (what a streaming-memory table holds)."""
        return (
            len(self.sizes) == 1
            and self.operand_perm == tuple(range(len(self.operand_perm)))
            and (self.out_perm == tuple(range(len(self.out_perm))))
        )


def _plan(
    shape, ishape, batching, index_batching, collapsed, to_operand, window_at, result, slices=None
) -> _Plan | None:
    """The plan of an operand `shape` and indices `ishape` (the index vector last) under XLA's dimension numbers
    (a gather's collapsed_slice_dims / start_index_map / offset_dims and slice sizes, a scatter's
    inserted_window_dims / scatter_dims_to_operand_dims / update_window_dims), with `result` the gather's result
    (or the scatter's updates) shape; None when it is not a gather of whole windows."""
    shape, ishape, result = tuple(shape), tuple(ishape), tuple(result)
    batching, index_batching, to_operand = tuple(batching), tuple(index_batching), tuple(to_operand)
    if not ishape or ishape[-1] != len(to_operand) or not to_operand or len(batching) != len(index_batching):
        return None
    if sorted(collapsed) != sorted(to_operand) or set(batching) & set(to_operand):
        return None
    window = tuple(d for d in range(len(shape)) if d not in batching and d not in to_operand)
    whole = (1,) * len(batching + to_operand) + tuple(shape[d] for d in window)
    if slices is not None and tuple(slices[d] for d in batching + to_operand + window) != whole:
        return None
    if tuple(ishape[d] for d in index_batching) != tuple(shape[d] for d in batching):
        return None
    other = tuple(d for d in range(len(ishape) - 1) if d not in index_batching)
    mid = tuple(ishape[d] for d in index_batching + other) + tuple(shape[d] for d in window)
    rank = len(ishape) - 1 + len(window)
    window_at = tuple(window_at)
    if len(window_at) != len(window) or any(not 0 <= p < rank for p in window_at):
        return None
    out_perm = [0] * rank
    for j, p in enumerate(window_at):
        out_perm[p] = len(index_batching) + len(other) + j
    for q, p in enumerate(p for p in range(rank) if p not in window_at):
        out_perm[p] = index_batching.index(q) if q in index_batching else len(index_batching) + other.index(q)
    if tuple(mid[a] for a in out_perm) != result:
        return None
    return _Plan(
        operand_perm=batching + to_operand + window,
        batches=math.prod(shape[d] for d in batching),
        n=math.prod(shape[d] for d in to_operand),
        row=math.prod(shape[d] for d in window),
        lookups=math.prod(ishape[d] for d in other),
        sizes=tuple(shape[d] for d in to_operand),
        index_perm=index_batching + other + (len(ishape) - 1,),
        mid=mid,
        out_perm=tuple(out_perm),
    )


def _pattern(eqn) -> _Plan | str:
    """The plan of a gather of whole windows, or why it is not one."""
    dn = eqn.params["dimension_numbers"]
    shape, ishape = (tuple(v.aval.shape) for v in eqn.invars[:2])
    got = _plan(shape, ishape, dn.operand_batching_dims, dn.start_indices_batching_dims, dn.collapsed_slice_dims,
                dn.start_index_map, dn.offset_dims, eqn.outvars[0].aval.shape, eqn.params["slice_sizes"])  # fmt: skip
    if got is None:
        return (f"gather {dn} with slice sizes {eqn.params['slice_sizes']} (only whole windows: one element along each "
                "indexed axis, the whole of every other)")  # fmt: skip
    return got


def _mode(eqn, out_of_range: str) -> str:
    """'clip' (CLIP; PROMISE_IN_BOUNDS, which XLA clamps) or `out_of_range` ('fill' or 'drop')."""
    mode = str(eqn.params.get("mode", "")).upper()
    return "clip" if "CLIP" in mode or "PROMISE" in mode else out_of_range


def _flat_offsets(b: Builder, plan: _Plan, indices: Tensor, mode: str, name: str = "gather") -> Tensor:
    """[B, L] row offsets into the table [B, N, R] from the indices: the index itself for one indexed axis, else
    sum of index x stride over the index vector (each index clipped into its axis, or the offset -1 when any is
    outside: fill / drop), by one integer vertex a worker (poplibs' integer estimates: a compare pair and a select
    per index, a multiply-add per index but the last)."""
    idx = indices.transpose(*plan.index_perm).reshape(plan.batches, plan.lookups, len(plan.sizes))
    if len(plan.sizes) == 1:
        return idx[..., 0]
    k, sizes = len(plan.sizes), plan.sizes
    strides = [math.prod(sizes[j + 1 :]) for j in range(k)]

    def fn(**f):
        comps = [f[f"i{j}"].astype(np.int64) for j in range(k)]
        inside = np.ones(comps[0].shape, bool)
        flat = np.zeros(comps[0].shape, np.int64)
        for j, c in enumerate(comps):
            inside &= (c >= 0) & (c < sizes[j])
            flat += (np.clip(c, 0, sizes[j] - 1) if mode == "clip" else c) * strides[j]
        return {"out": (flat if mode == "clip" else np.where(inside, flat, -1)).astype(np.int32)}

    def cycles(device, **shapes):
        n = math.prod(shapes["out"])
        one = lambda name: thread_cycles(name, {}, "int32", "int32", n, 2)
        return device.workers * (k * (2 * one("lt") + one("select_n")) + (k - 1) * (one("mul") + one("add")))

    key = ("flat_offsets", sizes, mode)
    if key not in b.codelets:
        b.codelets[key] = Codelet("flat_offsets", fn, tuple(f"i{j}" for j in range(k)), ("out",), cycles=cycles)
    first = idx[..., 0].flatten()
    # each lookup's indices brought onto the tile of its first (a vector can straddle two tiles' ranges)
    comps = b.graph.add_variable((k, first.size), idx.dtype.name, f"{name}/indices")
    comps.var.tile[:] = np.tile(first.tiles().reshape(-1), k)
    b.steps.append(Copy([idx[..., j].flatten() for j in range(k)], [comps[j] for j in range(k)],
                        name=f"{name}/indices"))  # fmt: skip
    flat = b.new(first.shape, np.int32, f"{name}/flat_offsets", like_t=first)
    b.per_worker(f"{name}/flat_offsets", b.codelets[key], comps[0], out=flat, **{f"i{j}": comps[j] for j in range(k)})
    return flat.reshape(plan.batches, plan.lookups)


def _integer_indices(eqn) -> str | None:
    dtype = np.dtype(eqn.invars[1].aval.dtype)
    return None if dtype.kind in "iu" else f"{eqn.primitive.name} with {dtype.name} indices"


def _check(eqn) -> str | None:
    got = _pattern(eqn)
    return got if isinstance(got, str) else _integer_indices(eqn)


def _multislice_cycles(device, rows: int, elements: int) -> float:
    """One MultiSlice vertex over `rows` in-range offsets of `elements` each, its offsets split over the workers."""
    per_worker = math.ceil(rows / device.workers)
    return device.workers * (30 + per_worker * (19 + math.ceil(elements / 2) * 2))


def _slice_fn(mode: str, fill):
    def fn(table, offsets):  # table [V, N, c], offsets [V, L] -> [V, L, c]
        n = table.shape[1]
        idx = offsets.astype(np.int64)
        inside = (idx >= 0) & (idx < n)
        got = np.take_along_axis(table, np.clip(idx, 0, n - 1)[:, :, None], axis=1)
        if mode != "clip":
            got = np.where(inside[:, :, None], got, np.asarray(fill, table.dtype))
        return {"out": got}

    return fn


def _fill(eqn):
    fill = eqn.params.get("fill_value")
    if fill is not None:
        return fill
    dtype = np.dtype(eqn.outvars[0].aval.dtype)
    return np.nan if dtype.kind == "f" else (True if dtype == np.bool_ else np.iinfo(dtype).min)


def column_layout(num_tiles: int, batches: int, row: int) -> tuple[int, list[tuple[int, int, int, int, int]]]:
    """poplibs' no-plan layout of a batched table: each batch on its own share of the tiles, each of those tiles
    holding every row of a range of the row's columns. Returns (tiles a batch uses, [(batch, part, tile, first
    column, end column)])."""
    per = max(num_tiles // batches, 1)
    parts = min(per, row)
    cols = [round(i * row / parts) for i in range(parts + 1)]
    return parts, [
        (bi, j, (bi * per) % num_tiles + j, cols[j], cols[j + 1]) for bi in range(batches) for j in range(parts)
    ]


@rule("gather", check=_check)
def gather(b: Builder, eqn, ins) -> list[Tensor]:
    table, indices = ins
    plan = _pattern(eqn)
    shape = tuple(eqn.outvars[0].aval.shape)
    if isinstance(table, Remote):
        if plan.rows:
            idx = indices.reshape(plan.batches, plan.lookups)
            return [_from_streaming_memory(b, table, idx, plan.n, plan.row).reshape(shape)]
        table = b.stream_in(table)
    mode = _mode(eqn, "fill")
    g = b.graph
    batches, n, row, lookups = plan.batches, plan.n, plan.row, plan.lookups
    tab = table.transpose(*plan.operand_perm).reshape(batches, n, row)
    idx = _flat_offsets(b, plan, indices, mode)
    out = g.add_variable((batches, lookups, row), tab.dtype.name, "gather")
    parts, layout = column_layout(g.num_tiles, batches, row)  # each tile: every row of a range of columns
    staged = g.add_variable((batches, n, row), tab.dtype.name, "gather/table")
    offsets = g.add_variable((batches, parts, lookups), idx.dtype.name, "gather/offsets")
    cycles = lambda device, table, offsets, out: _multislice_cycles(device, offsets[0], out[1])
    code = Codelet("multi_slice", _slice_fn(mode, _fill(eqn)), ("table", "offsets"), ("out",), cycles=cycles)
    cs = g.add_compute_set("gather")
    for bi, j, tile, c0, c1 in layout:
        for t in (staged[bi, :, c0:c1], offsets[bi, j], out[bi, :, c0:c1]):
            g.set_tile_mapping(t, tile)
        g.add_vertex(cs, code, tile, table=staged[bi, :, c0:c1], offsets=offsets[bi, j], out=out[bi, :, c0:c1])
    b.steps.append(
        Copy(
            [tab, idx.reshape(batches, 1, lookups).broadcast_to(offsets.shape)],
            [staged, offsets],
            name="gather/regroup",
        )
    )
    b.steps.append(Execute(cs))
    return [out.reshape(plan.mid).transpose(*plan.out_perm)]


def _from_streaming_memory(b: Builder, table: Remote, idx: Tensor, n: int, row: int) -> Tensor:
    if table.buffer.row != row or table.buffer.rows != idx.shape[0] * n:
        raise UnsupportedError(
            f"gather from streaming memory {table.buffer.name!r} ({table.buffer.rows} rows of {table.buffer.row}): "
            f"rows of {row} elements, {n} a batch, are not its rows"
        )
    batches, lookups = idx.shape
    flat = b.new((batches, lookups), np.int32, "gather/row_offsets", like_t=idx)
    base = b.graph.add_constant(np.repeat(np.arange(batches, dtype=np.int32) * n, lookups).reshape(batches, lookups),
                                name="gather/batch_rows")  # fmt: skip
    base.var.tile[:] = flat.tiles().reshape(-1)
    cycles = lambda device, i, base, out: vertex_cycles(device, "add", {}, "int32", "int32", math.prod(i), 2)
    add = Codelet("row_offsets", lambda i, base: {"out": (i.astype(np.int64) + base).astype(np.int32)}, ("i", "base"),
                  ("out",), cycles=cycles)  # fmt: skip
    # the offsets are mapped like the indices, so each tile adds its own
    b.per_worker("gather/row_offsets", add, flat.flatten(), out=flat.flatten(), i=idx.flatten(), base=base.flatten())
    dst = b.new((batches * lookups, row), table.buffer.dtype, f"{table.buffer.name}/rows")
    b.steps.append(RemoteRead(table.buffer, dst, flat.flatten(), name=f"{table.buffer.name}/gather"))
    return dst


# ----------------------------------------------------------------------------------------------------- scatter-add
def _scatter_pattern(eqn) -> _Plan | str:
    """The plan of a scatter-add of whole windows (the transpose of such a gather: an embedding's gradient), or why it
    is not one."""
    dn = eqn.params["dimension_numbers"]
    shape, ishape, ushape = (tuple(v.aval.shape) for v in eqn.invars[:3])
    got = _plan(shape, ishape, dn.operand_batching_dims, dn.scatter_indices_batching_dims, dn.inserted_window_dims,
                dn.scatter_dims_to_operand_dims, dn.update_window_dims, ushape)  # fmt: skip
    if got is None:
        return f"scatter-add {dn} (only whole windows: one element along each indexed axis, the whole of every other)"
    return got


def _scatter_check(eqn) -> str | None:
    got = _scatter_pattern(eqn)
    return got if isinstance(got, str) else _integer_indices(eqn)


def _update_add_cycles(device, offsets: int, elements: int, itemsize: int) -> float:
    """poplibs' MultiUpdateOp (add) estimate, every offset in range, the offsets split over the workers: per worker
    3 + (29 for 4-byte elements, else 30) + m x ((11 or 12) + (E / elements per 4-byte atom - 1) x 3)."""
    m = math.ceil(offsets / device.workers)
    atoms = max(elements * itemsize // 4, 1)
    per = (11 if itemsize == 4 else 12) + (atoms - 1) * 3
    return device.workers * (3 + (29 if itemsize == 4 else 30) + m * per)


def _update_fn(mode: str):
    def fn(table, offsets, updates):  # table [V, N, c] (in-out), offsets [V, L], updates [V, L, c]
        out = table.copy()
        n = table.shape[1]
        idx = offsets.astype(np.int64)
        if mode == "clip":
            idx = np.clip(idx, 0, n - 1)
        for v in range(out.shape[0]):  # in order of the updates, as a worker adds them
            keep = (idx[v] >= 0) & (idx[v] < n)
            np.add.at(out[v], idx[v][keep], updates[v][keep])
        return {"table": out}

    return fn


@rule("scatter-add", check=_scatter_check)
def scatter_add(b: Builder, eqn, ins) -> list[Tensor]:
    """operand with the updates' rows added at the indices: poplibs' multiUpdateAdd without a plan, laid out as the
    row gather is (each tile every row of a range of columns, all the batch's offsets and those columns of every
    update), one MultiUpdateOp vertex a tile adding in place."""
    operand, indices, updates = ins
    plan = _scatter_pattern(eqn)
    batches, n, row, lookups = plan.batches, plan.n, plan.row, plan.lookups
    g = b.graph
    mode = _mode(eqn, "drop")
    tab = operand.transpose(*plan.operand_perm).reshape(batches, n, row)
    upd = updates.transpose(*_inverse(plan.out_perm)).reshape(batches, lookups, row)
    idx = _flat_offsets(b, plan, indices, mode, "scatter_add")
    parts, layout = column_layout(g.num_tiles, batches, row)
    out = g.add_variable((batches, n, row), tab.dtype.name, "scatter_add")
    staged_upd = g.add_variable((batches, lookups, row), upd.dtype.name, "scatter_add/updates")
    offsets = g.add_variable((batches, parts, lookups), idx.dtype.name, "scatter_add/offsets")
    itemsize = tab.dtype.itemsize
    cycles = lambda device, table, offsets, updates: _update_add_cycles(device, offsets[0], table[1], itemsize)
    code = Codelet("multi_update_add", _update_fn(mode), ("offsets", "updates"), (), ("table",), cycles=cycles)
    cs = g.add_compute_set("scatter_add")
    for bi, j, tile, c0, c1 in layout:
        for t in (out[bi, :, c0:c1], staged_upd[bi, :, c0:c1], offsets[bi, j]):
            g.set_tile_mapping(t, tile)
        g.add_vertex(cs, code, tile, table=out[bi, :, c0:c1], offsets=offsets[bi, j], updates=staged_upd[bi, :, c0:c1])
    b.steps.append(
        Copy(
            [tab, upd, idx.reshape(batches, 1, lookups).broadcast_to(offsets.shape)],
            [out, staged_upd, offsets],
            name="scatter_add/regroup",
        )
    )
    b.steps.append(Execute(cs))
    permuted = tuple(operand.shape[d] for d in plan.operand_perm)
    return [out.reshape(permuted).transpose(*_inverse(plan.operand_perm))]


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(a) for a in np.argsort(perm))

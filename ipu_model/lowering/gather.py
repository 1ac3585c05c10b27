"""Row gathers (`jnp.take`, `take_along_axis` along a row axis): rows of a table picked by runtime indices, in
batches. The pattern lowered: operand [B..., N, R...], indices [B..., L..., 1] selecting along N, the whole trailing
row R... taken (what `take_along_axis(x, i[..., None], axis=-2)` and `x[i]` give); any other gather is refused by
name before anything is built.

- A table in tile memory goes the way poplibs' `popops::multiSlice` goes without a plan (`lib/popops/DynamicSlice.cpp`,
  `multiSliceInternal`, more than six offsets): the table is laid out so that each tile holds every row of a range
  of columns (an exchange, unless it already is), every such tile receives all of its batch's offsets, and one
  MultiSlice vertex per tile copies the selected rows of its columns into the result, which stays there. Batches
  run side by side, each on its own share of the tiles. The vertex costs poplibs' estimate
  (`PerformanceEstimation.cpp`, `getMultiSliceCycleEstimate`): per worker 30 + m (19 + ceil(E / 2) x 2) cycles for
  m offsets of E elements each (half and 32-bit rows copy 2 elements every 2 cycles), the offsets split over the six
  workers, every offset in range (the tile holds every row), times the six workers.
- A table in streaming memory (`lower(..., remote=...)`) is read by one `RemoteRead` with the rows' flat offsets
  (batch x N + index, computed on chip by an integer-add vertex: poplibs' 5 + 7 n thread cycles), as the SparQ
  authors' `gatherGrouped` reads its rows.
An index outside the table: JAX fills (FILL_OR_DROP) or clips; on chip the rule does the same, from streaming memory
it is an error.
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model.graph import Codelet, Tensor
from ipu_model.lowering.builder import Builder, Remote, UnsupportedError, rule
from ipu_model.lowering.costs import vertex_cycles
from ipu_model.programs import Copy, Execute, RemoteRead


def _rows(shape, ishape, batching, index_batching, collapsed, to_operand, window) -> tuple[int, int, int, int] | None:
    """(batch elements, rows N, row elements R, indices L per batch) where an operand [B..., N, R...] and indices
    [B..., L..., 1] address whole rows along N: the batching dims leading on both, N the one collapsed dim the
    indices map to, the window dims (a gather's offset dims, a scatter's update window dims) the rows' elements
    after the indices' dims; None otherwise."""
    nb = len(batching)
    trailing = shape[nb + 1 :]
    rows = (
        len(shape) > nb
        and tuple(batching) == tuple(range(nb))
        and tuple(index_batching) == tuple(range(nb))
        and tuple(collapsed) == (nb,)
        and tuple(to_operand) == (nb,)
        and len(ishape) >= nb + 1
        and ishape[-1] == 1
        and ishape[:nb] == shape[:nb]
        and tuple(window) == tuple(range(len(ishape) - 1, len(ishape) - 1 + len(trailing)))
    )
    return (math.prod(shape[:nb]), shape[nb], math.prod(trailing), math.prod(ishape[nb:-1])) if rows else None


def _pattern(eqn) -> tuple[int, int, int, int] | str:
    """(batch elements, rows N, row elements R, lookups L per batch) of a row gather, or why it is not one."""
    dn = eqn.params["dimension_numbers"]
    shape, ishape = (tuple(v.aval.shape) for v in eqn.invars[:2])
    got = _rows(shape, ishape, dn.operand_batching_dims, dn.start_indices_batching_dims, dn.collapsed_slice_dims,
                dn.start_index_map, dn.offset_dims)  # fmt: skip
    nb = len(dn.operand_batching_dims)
    if got is None or tuple(eqn.params["slice_sizes"]) != (1,) * (nb + 1) + shape[nb + 1 :]:  # whole rows
        return f"gather {dn} with slice sizes {eqn.params['slice_sizes']} (only whole rows along one axis)"
    return got


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


def _column_layout(num_tiles: int, batches: int, row: int) -> tuple[int, list[tuple[int, int, int, int, int]]]:
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
    batches, n, row, lookups = _pattern(eqn)
    shape = tuple(eqn.outvars[0].aval.shape)
    idx = indices.reshape(batches, lookups)
    if isinstance(table, Remote):
        return [_from_streaming_memory(b, table, idx, n, row).reshape(shape)]
    mode = "clip" if "CLIP" in str(eqn.params.get("mode", "")).upper() else "fill"
    g = b.graph
    tab = table.reshape(batches, n, row)
    out = g.add_variable((batches, lookups, row), tab.dtype.name, "gather")
    parts, layout = _column_layout(g.num_tiles, batches, row)  # each tile: every row of a range of columns
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
    return [out.reshape(shape)]


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
def _scatter_pattern(eqn) -> tuple[int, int, int, int] | str:
    """(batch elements, rows N, row elements R, updates L per batch) of a row scatter-add (the transpose of a row
    gather: an embedding's gradient), or why it is not one."""
    dn = eqn.params["dimension_numbers"]
    shape, ishape, ushape = (tuple(v.aval.shape) for v in eqn.invars[:3])
    got = _rows(shape, ishape, dn.operand_batching_dims, dn.scatter_indices_batching_dims, dn.inserted_window_dims,
                dn.scatter_dims_to_operand_dims, dn.update_window_dims)  # fmt: skip
    if got is None or ushape != ishape[:-1] + shape[len(dn.operand_batching_dims) + 1 :]:
        return f"scatter-add {dn} (only whole rows along one axis)"
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
    batches, n, row, lookups = _scatter_pattern(eqn)
    g = b.graph
    mode = "clip" if "CLIP" in str(eqn.params.get("mode", "")).upper() else "drop"
    tab = operand.reshape(batches, n, row)
    upd = updates.reshape(batches, lookups, row)
    idx = indices.reshape(batches, lookups)
    parts, layout = _column_layout(g.num_tiles, batches, row)
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
    return [out.reshape(tuple(eqn.outvars[0].aval.shape))]

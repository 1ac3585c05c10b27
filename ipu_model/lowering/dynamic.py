"""Dynamic slices and updates (`lax.dynamic_slice`, `lax.dynamic_update_slice`: a KV cache written at the decode
position, a window read at a runtime offset): a block of the operand at start indices known only at run time.

A start given as a literal is a static slice (a view); an axis the block spans whole needs no start. At most one
axis may have a runtime start: the operand seen as a 2-D base [N, R] (that axis first, the rest flattened), the
block as u rows of it at offset s, clamped into [0, N - u] as JAX clamps. This is poplibs' `popops::dynamicSlice` /
`dynamicUpdate` (`lib/popops/DynamicSlice.cpp`, `generateVertices`):
- the vertices follow the mapping of the base's first row: each tile holds the same columns of every row. A base
  that is not laid out so is first copied into that layout (each tile every row of a range of columns, as poplibs
  rearranges a badly mapped base); one that is, is used as it is;
- the scalar offset is copied to every tile that takes part (poplibs' small-graph replication), clamped first by
  one vertex on the tile that holds it (poplibs' integer clamp estimate);
- each tile's columns are split over its workers, one `DynamicSlice2D` / `DynamicUpdateSlice2D` vertex each, costed
  by poplibs' estimators (`popopsCycleEstimators.cpp`): 27 + sum over the vertex's contiguous regions of
  ((29 + ceil(region / vector width)) x u + 13) thread cycles for 32-bit data, (31 + 2 x ceil(region / 4)) x u for
  half, (50 + 2 (slice) or 23 (update) x ceil(region / 4)) x u for 8-bit, a vector 64 bits wide.
An update writes over its operand when the operand dies there (`Builder.consumable`: XLA's in-place reuse, poplibs'
in-place `dynamicUpdate`); otherwise the operand is copied first, tile by tile.
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model.graph import Codelet, Tensor
from ipu_model.lowering.builder import Builder, rule
from ipu_model.lowering.costs import thread_cycles
from ipu_model.lowering.gather import column_layout
from ipu_model.ops import tile_ranges, worker_chunks
from ipu_model.programs import Copy, Execute


def _is_literal(a) -> bool:
    return type(a).__name__ == "Literal"


def _block(eqn) -> tuple[tuple[int, ...], tuple[int, ...], list]:
    """(operand shape, block shape, the start operands) of a dynamic slice or update."""
    shape = tuple(eqn.invars[0].aval.shape)
    if eqn.primitive.name == "dynamic_update_slice":
        return shape, tuple(eqn.invars[1].aval.shape), list(eqn.invars[2:])
    return shape, tuple(int(s) for s in eqn.params["slice_sizes"]), list(eqn.invars[1:])


def _runtime_axes(eqn) -> list[int]:
    """The axes whose start is known only at run time and whose block is narrower than the axis."""
    shape, block, starts = _block(eqn)
    return [d for d, a in enumerate(starts) if block[d] < shape[d] and not _is_literal(a)]


def _check(eqn) -> str | None:
    axes = _runtime_axes(eqn)
    if len(axes) > 1:
        return f"{eqn.primitive.name} with runtime starts along {len(axes)} axes {tuple(axes)} (at most one)"
    dtype = np.dtype(eqn.invars[-1].aval.dtype) if _block(eqn)[2] else np.dtype("int32")
    return None if dtype.kind in "iu" else f"{eqn.primitive.name} with {dtype.name} starts"


def _static_view(t: Tensor, eqn, runtime: list[int]) -> Tensor:
    """`t` sliced along every axis with a literal start (clamped as JAX clamps), whole along the runtime one."""
    shape, block, starts = _block(eqn)
    key = []
    for d, a in enumerate(starts):
        if d in runtime:
            key.append(slice(None))
            continue
        s = min(max(int(a.val), 0), shape[d] - block[d]) if _is_literal(a) else 0
        key.append(slice(s, s + block[d]))
    return t[tuple(key)]


def _base(t: Tensor, axis: int) -> tuple[Tensor, tuple[int, ...]]:
    """`t` as a 2-D base [N, R] with `axis` first, and the axis order that makes it (to undo it)."""
    order = (axis, *(d for d in range(len(t.shape)) if d != axis))
    n = t.shape[axis]
    return t.transpose(*order).reshape(n, math.prod(t.shape) // max(n, 1)), order


def _sliceable(base: Tensor) -> bool:
    """Every row of the base mapped as its first: each tile holds the same columns of every row."""
    tiles = base.tiles()
    return bool(np.all(tiles == tiles[:1]))


def _column_mapped(b: Builder, shape: tuple[int, ...], dtype, axis: int, name: str) -> Tensor:
    """A new variable of `shape` whose base along `axis` ([N, R]) has each tile holding every row of a range of
    columns (R spread over the tiles)."""
    g = b.graph
    t = g.add_variable(tuple(shape), np.dtype(dtype).name, name)
    base, _ = _base(t, axis)
    for _, _, tile, c0, c1 in column_layout(g.num_tiles, 1, base.shape[1])[1]:  # the row gather's layout, one batch
        g.set_tile_mapping(base[:, c0:c1], tile)
    return t


def _like_columns(b: Builder, columns: dict[int, np.ndarray], rows: int, dtype, name: str) -> Tensor:
    """A new [rows, R] variable whose columns sit on the tiles that hold them in the base (`columns`: the base's first
    row's tile_ranges)."""
    t = b.graph.add_variable((rows, sum(p.size for p in columns.values())), np.dtype(dtype).name, name)
    for tile, positions in columns.items():
        b.graph.set_tile_mapping(t[:, positions], tile)
    return t


def _runs(positions: np.ndarray | slice) -> list[int]:
    """The lengths of the contiguous runs of a worker's columns (a slice is one run)."""
    if isinstance(positions, slice):
        return [positions.stop - positions.start]
    cuts = np.flatnonzero(np.diff(positions) != 1) + 1
    return [len(r) for r in np.split(positions, cuts)]


def _vertex_thread_cycles(runs: list[int], u: int, itemsize: int, update: bool) -> int:
    """poplibs' DynamicSlice2D / DynamicUpdateSlice2D estimate for one vertex over `runs` regions of u rows."""
    cycles = 27
    for region in runs:
        if itemsize == 1:
            cycles += (50 + (23 if update else 2) * math.ceil(region / 4)) * u + 13
        elif itemsize == 2:
            cycles += (31 + 2 * math.ceil(region / 4)) * u + 13
        else:  # 32-bit (64-bit types count twice the elements, and a cycle more per row on update)
            wide = itemsize == 8
            cycles += (29 + (wide and update) + math.ceil(region * (1 + wide) / 2)) * u + 13
    return cycles


def _offsets(b: Builder, start: Tensor, n: int, u: int, tiles: list[int], name: str) -> Tensor:
    """The runtime start clamped into [0, n - u] (one vertex where it lives) and copied to each of `tiles`."""
    g = b.graph
    clamped = b.new((1,), np.int32, f"{name}/offset", like_t=start.reshape(1))
    key = ("dynamic_offset", n, u)
    if key not in b.codelets:
        fn = lambda s: {"out": np.clip(s.astype(np.int64), 0, n - u).astype(np.int32)}
        cycles = lambda device, s, out: device.workers * thread_cycles("clamp", {}, "int32", "int32", 1, 3)
        b.codelets[key] = Codelet("dynamic_offset", fn, ("s",), ("out",), cycles=cycles)
    cs = g.add_compute_set(f"{name}/offset")
    g.add_vertex(cs, b.codelets[key], int(clamped.tiles()[0]), s=start.reshape(1), out=clamped)
    b.steps.append(Execute(cs))
    per_tile = g.add_variable((len(tiles),), "int32", f"{name}/offsets")
    for i, tile in enumerate(tiles):
        g.set_tile_mapping(per_tile[i : i + 1], tile)
    b.steps.append(Copy(clamped.broadcast_to((len(tiles),)), per_tile, name=f"{name}/offsets"))
    return per_tile


def _vertices(b: Builder, base: Tensor, block: Tensor, start: Tensor, update: bool, name: str, columns: dict) -> None:
    """One compute set of 2-D dynamic slice (block <- base rows) or update (base rows <- block) vertices, each tile
    over the columns it holds (`columns`, the base's first row's tile_ranges), split over its workers."""
    g = b.graph
    n, u = base.shape[0], block.shape[0]
    offsets = _offsets(b, start, n, u, list(columns), name)
    itemsize = base.dtype.itemsize
    cs = g.add_compute_set(name)
    for i, (tile, positions) in enumerate(columns.items()):
        for chunk in worker_chunks(positions, g.device.workers):
            runs = tuple(_runs(chunk))
            key = ("dynamic_update" if update else "dynamic_slice", u, runs, itemsize)
            if key not in b.codelets:
                cyc = _vertex_thread_cycles(list(runs), u, itemsize, update)
                b.codelets[key] = _codelet(update, u, lambda device, cyc=cyc, **_: device.workers * cyc)
            g.add_vertex(cs, b.codelets[key], tile, base=base[:, chunk], block=block[:, chunk],
                         offset=offsets[i : i + 1])  # fmt: skip
    b.steps.append(Execute(cs))


def _codelet(update: bool, u: int, cycles) -> Codelet:
    """The 2-D vertex over a batch of vertices: offset [V, 1], base [V, N, c], block [V, u, c]."""

    def rows(offset):
        return (offset.astype(np.int64) + np.arange(u))[:, :, None]  # [V, u, 1]: each vertex's rows

    if update:

        def write(offset, block, base):
            out = base.copy()
            np.put_along_axis(out, np.broadcast_to(rows(offset), block.shape), block, axis=1)
            return {"base": out}

        return Codelet("dynamic_update_slice_2d", write, ("offset", "block"), (), ("base",), cycles=cycles)

    def read(offset, base):
        idx = np.broadcast_to(rows(offset), (base.shape[0], u, base.shape[2]))
        return {"block": np.take_along_axis(base, idx, axis=1)}

    return Codelet("dynamic_slice_2d", read, ("offset", "base"), ("block",), cycles=cycles)


@rule("dynamic_slice", check=_check)
def dynamic_slice(b: Builder, eqn, ins) -> list[Tensor]:
    operand, *starts = ins
    runtime = _runtime_axes(eqn)
    view = _static_view(operand, eqn, runtime)
    if not runtime:
        return [view]
    (axis,) = runtime
    base, order = _base(view, axis)
    if not _sliceable(base):
        staged = _column_mapped(b, base.shape, base.dtype, 0, "dynamic_slice/base")
        b.steps.append(Copy(base, staged, name="dynamic_slice/rearrange"))
        base = staged
    u = int(eqn.params["slice_sizes"][axis])
    columns = tile_ranges(base[0])
    out = _like_columns(b, columns, u, base.dtype, "dynamic_slice")
    _vertices(b, base, out, starts[axis], update=False, name="dynamic_slice", columns=columns)
    shape = tuple(view.shape[d] if d != axis else u for d in order)
    return [out.reshape(shape).transpose(*np.argsort(order))]


@rule("dynamic_update_slice", check=_check)
def dynamic_update_slice(b: Builder, eqn, ins) -> list[Tensor]:
    operand, update, *starts = ins
    runtime = _runtime_axes(eqn)
    if runtime:
        probe, _ = _base(_static_view(operand, eqn, runtime), runtime[0])
        sliceable = _sliceable(probe)
    else:
        sliceable = True
    if sliceable and b.consumable(operand, 0):
        out = operand  # written in place
    elif sliceable:
        out = b.new(operand.shape, operand.dtype, "dynamic_update_slice", like_t=operand)
        b.steps.append(Copy(operand, out, name="dynamic_update_slice/copy"))
    else:  # laid out for the update first, as poplibs rearranges a base mapped otherwise
        out = _column_mapped(b, operand.shape, operand.dtype, runtime[0], "dynamic_update_slice")
        b.steps.append(Copy(operand, out, name="dynamic_update_slice/rearrange"))
    view = _static_view(out, eqn, runtime)
    if not runtime:
        b.steps.append(Copy(update, view, name="dynamic_update_slice/write"))
        return [out]
    (axis,) = runtime
    base, _ = _base(view, axis)
    block, _ = _base(update, axis)
    columns = tile_ranges(base[0])
    staged = _like_columns(b, columns, block.shape[0], block.dtype, "dynamic_update_slice/block")
    b.steps.append(Copy(block, staged, name="dynamic_update_slice/block"))
    _vertices(b, base, staged, starts[axis], update=True, name="dynamic_update_slice", columns=columns)
    return [out]

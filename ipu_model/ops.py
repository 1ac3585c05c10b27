"""Library ops on the simulated IPU (a small poplibs): elementwise maps, reductions and a planned dense matmul.

Each op adds variables and compute sets to a graph and returns (program, result tensor); the caller puts the
program into its own Sequence. Arithmetic follows the IPU: float16 products accumulate in float32 (the AMP unit),
partial sums travel as float32 and the result is cast once at the end.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.random.ipu import uniform_float32
from ipu_model.graph import Codelet, Graph, GraphError, Tensor
from ipu_model.programs import Copy, Execute, Program, Sequence

# --------------------------------------------------------------------------------------------------- elementwise
UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "square": np.square,
    "exp": np.exp,
    "sqrt": np.sqrt,
}
BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}
_CODELETS: dict[tuple, Codelet] = {}


def _elementwise_codelet(op: str, arity: int) -> Codelet:
    key = ("map", op)
    if key not in _CODELETS:
        fn = UNARY[op] if arity == 1 else BINARY[op]
        names = ("a",) if arity == 1 else ("a", "b")
        _CODELETS[key] = Codelet(
            f"{op}", lambda **f: {"out": fn(*(f[n] for n in names)).astype(f[names[0]].dtype)}, names, ("out",)
        )
    return _CODELETS[key]


def tile_ranges(t: Tensor) -> dict[int, np.ndarray]:
    """For each tile, the positions (in the view's flat order) of the view's elements it holds."""
    tiles = t.tiles().reshape(-1)
    order = np.argsort(tiles, kind="stable")
    bounds = np.searchsorted(tiles[order], np.arange(t.var.graph.num_tiles + 1))
    return {int(tile): order[bounds[tile] : bounds[tile + 1]] for tile in np.flatnonzero(np.diff(bounds))}


def _worker_chunks(positions: np.ndarray, workers: int, grain: int = 1) -> list[np.ndarray | slice]:
    """Split a tile's positions into up to `workers` chunks of whole grains; contiguous chunks become slices."""
    n = positions.size
    per = -(-n // workers)
    per = -(-per // grain) * grain
    out: list[np.ndarray | slice] = []
    for a in range(0, n, per):
        chunk = positions[a : a + per]
        contiguous = chunk[-1] - chunk[0] == chunk.size - 1 and np.all(np.diff(chunk) == 1)
        out.append(slice(int(chunk[0]), int(chunk[-1]) + 1) if contiguous else chunk)
    return out


def like(graph: Graph, t: Tensor, dtype: str | None = None, name: str = "like") -> Tensor:
    """A new variable shaped and mapped like view `t`."""
    out = graph.add_variable(t.shape, dtype or t.dtype.name, name)
    out.var.tile[:] = t.tiles().reshape(-1)
    return out


def elementwise(graph: Graph, op: str, *inputs: Tensor, name: str = "") -> tuple[Program, Tensor]:
    """out = op(inputs...) elementwise (`op` in UNARY or BINARY), computed where the first input lives.

    Inputs mapped differently from the first are first copied to its tiles (one exchange). Returns (program, out).
    """
    arity = len(inputs)
    table = UNARY if arity == 1 else BINARY if arity == 2 else None
    if table is None or op not in table:
        allowed = ", ".join(UNARY) if arity == 1 else ", ".join(BINARY)
        raise GraphError(f"elementwise op {op!r} with {arity} input(s) is not known: choose one of {allowed}")
    first = inputs[0]
    for t in inputs[1:]:
        if t.shape != first.shape or t.dtype != first.dtype:
            raise GraphError(
                f"elementwise {op}: {t.name!r} {t.shape}/{t.dtype} differs from {first.name!r} "
                f"{first.shape}/{first.dtype}"
            )
    name = name or op
    out = like(graph, first, name=f"{name}/out")
    local, copies = [first], []
    for t in inputs[1:]:
        if np.array_equal(t.tiles(), first.tiles()):
            local.append(t)
        else:
            tmp = like(graph, first, name=f"{name}/in")
            copies.append((t, tmp))
            local.append(tmp)
    cs = graph.add_compute_set(name)
    code = _elementwise_codelet(op, arity)
    flat = [t.flatten() for t in local]
    out_flat = out.flatten()
    for tile, positions in tile_ranges(out_flat).items():
        for chunk in _worker_chunks(positions, graph.device.workers):
            fields = dict(zip(("a", "b"), (t[chunk] for t in flat), strict=False))
            graph.add_vertex(cs, code, tile, out=out_flat[chunk], **fields)
    steps = [Copy([s for s, _ in copies], [d for _, d in copies], name=f"{name}/exchange")] if copies else []
    return Sequence(*steps, Execute(cs), name=name), out


# --------------------------------------------------------------------------------------------------------- random
def _uniform(rng, shapes):
    n = int(np.prod(shapes["out"]))
    return {"out": uniform_float32(rng(n)).reshape(-1, *shapes["out"])}


UNIFORM = Codelet("uniform", _uniform, outputs=("out",), random=True, flops=lambda out: 4 * math.prod(out))


def fill_uniform(graph: Graph, t: Tensor, name: str = "uniform") -> Program:
    """Fill float32 `t` with uniforms in [0, 1) where it lives: each worker of each tile draws from its own
    xoroshiro128aox stream (one 64-bit output per element, top 24 bits; core.random.ipu), as poprand does."""
    if t.dtype != np.float32:
        raise GraphError(f"fill_uniform fills float32 tensors, {t.name!r} is {t.dtype}")
    cs = graph.add_compute_set(name)
    flat = t.flatten()
    for tile, positions in tile_ranges(flat).items():
        for chunk in _worker_chunks(positions, graph.device.workers):
            graph.add_vertex(cs, UNIFORM, tile, out=flat[chunk])
    return Execute(cs)


# ------------------------------------------------------------------------------------------------------ reduction
def _reduce_codelet(op: str, out_dtype: str) -> Codelet:
    key = ("reduce", op, out_dtype)
    if key not in _CODELETS:
        ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}[op]

        def fn(a):
            acc = a.astype(np.float32) if a.dtype == np.float16 else a  # half partials accumulate in float32
            return {"out": ufunc.reduce(acc, axis=1).astype(out_dtype)}  # a: [vertices, inputs, results]

        _CODELETS[key] = Codelet(f"reduce_{op}", fn, ("a",), ("out",), flops=lambda a, out: math.prod(a))
    return _CODELETS[key]


def reduce(
    graph: Graph,
    t: Tensor,
    axis: int = 0,
    op: str = "add",
    out_dtype: str | None = None,
    name: str = "",
    out: Tensor | None = None,
) -> tuple[Program, Tensor]:
    """Reduce `t` along `axis` with `op` (add, max, min, mul). Returns (program, result).

    The result is mapped linearly over the tiles (or given as `out`, already mapped). Each result element's inputs
    are copied to the result's tile in one exchange, then reduced there by the workers. A long reduction of few
    elements (a full sum) first reduces contiguous pieces where they are, then reduces the partials.
    """
    if op not in ("add", "max", "min", "mul"):
        raise GraphError(f"reduce op {op!r} is not known: choose one of add, max, min, mul")
    axis = axis % len(t.shape)
    name = name or f"reduce_{op}"
    out_dtype = out_dtype or t.dtype.name
    perm = [d for d in range(len(t.shape)) if d != axis] + [axis]
    rows_shape = [t.shape[d] for d in perm[:-1]]
    length = t.shape[axis]
    rows = int(np.prod(rows_shape, dtype=np.int64))
    view = t.transpose(*perm).reshape(rows, length)
    tiles = graph.num_tiles
    steps: list[Program] = []
    # Two stages when there are far fewer results than tiles: partials of contiguous pieces, then the partials.
    if rows < tiles:
        local = _local_partials(graph, view, op, name)
        if local is not None:  # reduce the partials in turn (per tile first again, if tiles hold several)
            p1, partial = local
            if out is not None:
                out = out.reshape(rows)
            p2, result = reduce(graph, partial, axis=1, op=op, out_dtype=out_dtype, name=name, out=out)
            return Sequence(p1, p2, name=name), result.reshape(tuple(rows_shape))
    if out is None:
        out = graph.add_variable(rows_shape, out_dtype, f"{name}/out")
        graph.map_linearly(out)
    out_rows = out.reshape(rows)
    # staged[j, r] holds input j of result r on r's tile: for each j the results' inputs form long runs, so the
    # exchange moves few large regions (row-major [r, j] would make every element its own region)
    staged = graph.add_variable((length, rows), view.dtype.name, f"{name}/staged")
    staged.var.tile[:] = np.tile(out_rows.tiles(), length)
    steps.append(Copy(view.T, staged, name=f"{name}/exchange"))
    cs = graph.add_compute_set(name)
    code = _reduce_codelet(op, out_dtype)
    for tile, positions in tile_ranges(out_rows).items():
        for chunk in _worker_chunks(positions, graph.device.workers):
            graph.add_vertex(cs, code, tile, a=staged[:, chunk], out=out_rows[chunk])
    steps.append(Execute(cs))
    return Sequence(*steps, name=name), out


def _local_partials(graph: Graph, view: Tensor, op: str, name: str) -> tuple[Program, Tensor] | None:
    """First stage of a reduction of few long rows: each tile reduces, per row, the elements it already holds
    (split over its workers when it holds many), so only partials cross the exchange. None when no tile holds
    two elements of a row, or rows would get different numbers of partials."""
    rows, length = view.shape
    w = graph.device.workers
    pieces = []
    for r in range(rows):
        for tile, positions in tile_ranges(view[r]).items():
            parts = w if positions.size >= 64 * w else 1  # many elements: every worker takes a share
            pieces += [(r, tile, chunk) for chunk in _worker_chunks(positions, parts)]
    per_row_counts = np.bincount([r for r, _, _ in pieces], minlength=rows)
    per_row = int(per_row_counts[0])
    if np.any(per_row_counts != per_row) or per_row >= length:
        return None
    dtype = "float32" if view.dtype == np.float16 else view.dtype.name
    partial = graph.add_variable((rows, per_row), dtype, f"{name}/partials")
    cs = graph.add_compute_set(f"{name}/partials")
    code = _reduce_codelet(op, dtype)
    counts = np.zeros(rows, int)
    for r, tile, chunk in pieces:
        target = partial[r, counts[r] : counts[r] + 1]
        graph.set_tile_mapping(target, tile)
        src = view[r][chunk]
        graph.add_vertex(cs, code, tile, a=src.reshape(src.size, 1), out=target)
        counts[r] += 1
    return Execute(cs), partial


# ---------------------------------------------------------------------------------------------------------- matmul
@dataclass(frozen=True)
class MatmulPlan:
    """Tiles form a pm x pk x pn grid; tile (i, j, q) computes A[rows i, k-slice j] @ B[k-slice j, cols q]."""

    pm: int
    pk: int
    pn: int
    estimate: float = 0.0  # estimated cycles (the planner's model, before running)
    memory: float = 0.0  # estimated bytes on the busiest tile

    @property
    def tiles(self) -> int:
        return self.pm * self.pk * self.pn


def _splits(n: int, parts: int) -> list[int]:
    """Boundaries of `parts` near-equal pieces of range(n)."""
    return [round(i * n / parts) for i in range(parts + 1)]


def plan_matmul(device, m: int, k: int, n: int, in_dtype: str = "float16", out_dtype: str | None = None) -> MatmulPlan:
    """Choose the tile grid minimising the cost model's cycles among grids that fit in tile memory."""
    out_dtype = out_dtype or in_dtype
    isz, osz = np.dtype(in_dtype).itemsize, np.dtype(out_dtype).itemsize
    w, sync, xrate = device.workers, device.sync_cycles, device.exchange_bytes_per_cycle

    def candidates(size: int) -> np.ndarray:
        return np.array(sorted({*range(1, min(size, 64) + 1), *(2**e for e in range(7, 16) if 2**e <= size)}))

    pm, pk, pn = (g.ravel() for g in np.meshgrid(candidates(m), candidates(k), candidates(n), indexing="ij"))
    ok = pm * pk * pn <= device.tiles
    pm, pk, pn = pm[ok], pk[ok], pn[ok]
    mb, kb, nb = -(-m // pm), -(-k // pk), -(-n // pn)
    by_rows = mb >= w
    rows = np.where(by_rows, -(-mb // w), mb)
    cols = np.where(by_rows, nb, -(-nb // w))
    partial_sz = np.where(pk > 1, 4, osz)
    # the same estimate the engine will charge (cost.default_vertex_cycles), vectorised over candidate grids
    per_worker_flops = device.tile_flops_per_cycle(in_dtype) / w
    per_worker_bytes = device.memory_bytes_per_cycle / w
    nbytes = (rows * kb + kb * cols) * isz + rows * cols * partial_sz
    compute = device.vertex_overhead_cycles + np.maximum(
        2 * rows * kb * cols / per_worker_flops, nbytes / per_worker_bytes
    )
    blocks = (mb * kb + kb * nb) * isz
    cycles = 2 * sync + blocks / xrate + compute
    memory = blocks + mb * nb * partial_sz + (m * k + k * n) * isz / device.tiles
    per_tile = -(-m * n // device.tiles)
    split_k = pk > 1
    cycles = cycles + split_k * (
        2 * sync
        + per_tile * pk * 4 / xrate
        + device.vertex_overhead_cycles
        + np.maximum(per_tile * pk / w / per_worker_flops, 8 * per_tile * pk / w / per_worker_bytes)
    )
    memory = memory + split_k * per_tile * (pk * 4 + osz)
    fits = memory <= 0.85 * device.memory_per_tile
    if not fits.any():
        raise GraphError(f"matmul {m}x{k}x{n} ({in_dtype}) does not fit on {device.name} with any tile grid")
    best = np.flatnonzero(fits)[np.argmin(cycles[fits])]
    return MatmulPlan(int(pm[best]), int(pk[best]), int(pn[best]), float(cycles[best]), float(memory[best]))


def _matmul_codelet(out_dtype: str, in_dtype: str) -> Codelet:
    key = ("matmul", out_dtype, in_dtype)
    if key not in _CODELETS:

        def fn(a, b):
            return {"c": np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(out_dtype)}

        _CODELETS[key] = Codelet(
            "matmul", fn, ("a", "b"), ("c",), flops=lambda a, b, c: 2 * a[0] * a[1] * b[1], compute_dtype=in_dtype
        )
    return _CODELETS[key]


def matmul(
    graph: Graph,
    a: Tensor,
    b: Tensor,
    out_dtype: str | None = None,
    plan: MatmulPlan | None = None,
    name: str = "matmul",
) -> tuple[Program, Tensor, MatmulPlan]:
    """C = A @ B for A [m, k], B [k, n] mapped anyhow. Returns (program, C, plan).

    The plan (`plan_matmul` unless given) splits m, k and n over a tile grid. One exchange broadcasts each tile its
    A and B blocks; each tile's workers multiply their rows (float32 accumulation); with k split, the float32
    partials are then reduced onto C's tiles (`reduce`). C is mapped by blocks when k is not split, linearly else.
    """
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise GraphError(f"matmul needs A [m, k] and B [k, n], got {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise GraphError(f"matmul operands differ in dtype: {a.dtype} and {b.dtype}")
    (m, k), n = a.shape, b.shape[1]
    in_dtype = a.dtype.name
    out_dtype = out_dtype or in_dtype
    plan = plan or plan_matmul(graph.device, m, k, n, in_dtype, out_dtype)
    if plan.tiles > graph.num_tiles:
        raise GraphError(f"matmul plan {plan} needs {plan.tiles} tiles, the graph has {graph.num_tiles}")
    pm, pk, pn = plan.pm, plan.pk, plan.pn
    if not (1 <= pm <= m and 1 <= pk <= k and 1 <= pn <= n):
        raise GraphError(f"matmul plan {pm}x{pk}x{pn} does not fit {m}x{k}x{n}: need 1 <= pm <= m, pk <= k, pn <= n")
    ms, ks, ns = _splits(m, pm), _splits(k, pk), _splits(n, pn)
    tile = lambda i, j, q: (i * pk + j) * pn + q
    a_rep = graph.add_variable((pn, m, k), in_dtype, f"{name}/A_tiles")
    b_rep = graph.add_variable((pm, k, n), in_dtype, f"{name}/B_tiles")
    graph.map_blocks(a_rep, [range(pn + 1), ms, ks], lambda q, i, j: tile(i, j, q))
    graph.map_blocks(b_rep, [range(pm + 1), ks, ns], lambda i, j, q: tile(i, j, q))
    exchange = Copy(
        [a.expand_dims(0).broadcast_to((pn, m, k)), b.expand_dims(0).broadcast_to((pm, k, n))],
        [a_rep, b_rep],
        name=f"{name}/broadcast",
    )
    if pk == 1:
        c = graph.add_variable((m, n), out_dtype, f"{name}/C")
        graph.map_blocks(c, [ms, ns], lambda i, q: tile(i, 0, q))
        target, target_dtype = c.expand_dims(0), out_dtype
    else:
        target = graph.add_variable((pk, m, n), "float32", f"{name}/partials")
        graph.map_blocks(target, [range(pk + 1), ms, ns], lambda j, i, q: tile(i, j, q))
        target_dtype = "float32"
    cs = graph.add_compute_set(f"{name}/multiply")
    code = _matmul_codelet(target_dtype, in_dtype)
    w = graph.device.workers
    for i, j, q in itertools.product(range(pm), range(pk), range(pn)):
        r0, r1, k0, k1, c0, c1 = ms[i], ms[i + 1], ks[j], ks[j + 1], ns[q], ns[q + 1]
        by_rows = r1 - r0 >= w
        parts = _splits(r1 - r0 if by_rows else c1 - c0, min(w, (r1 - r0) if by_rows else (c1 - c0)))
        for p0, p1 in itertools.pairwise(parts):
            rows = slice(r0 + p0, r0 + p1) if by_rows else slice(r0, r1)
            cols = slice(c0, c1) if by_rows else slice(c0 + p0, c0 + p1)
            graph.add_vertex(
                cs,
                code,
                tile(i, j, q),
                a=a_rep[q, rows, k0:k1],
                b=b_rep[i, k0:k1, cols],
                c=target[0 if pk == 1 else j, rows, cols],
            )
    steps: list[Program] = [exchange, Execute(cs)]
    if pk == 1:
        return Sequence(*steps, name=name), c, plan
    red, c = reduce(graph, target, axis=0, op="add", out_dtype=out_dtype, name=f"{name}/reduce")
    steps.append(red)
    return Sequence(*steps, name=name), c, plan

"""Library ops on the simulated IPU (a small poplibs): elementwise maps, reductions and a planned dense matmul.

Each op adds variables and compute sets to a graph and returns (program, result tensor); the caller puts the
program into its own Sequence. Arithmetic follows the IPU: float16 products accumulate in float32 (the AMP unit),
partial sums travel as float32 and the result is cast once at the end.

One module over 400 lines: a small poplibs, one op per section (elementwise, fill, reduce, cast, matmul), each op
its codelet beside it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.random.ipu import uniform_float32
from ipu_model.cost import amp_matmul_cycles
from ipu_model.graph import Codelet, Graph, GraphError, Tensor
from ipu_model.programs import Copy, DynamicCopy, Execute, Program, Repeat, Sequence

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


# the public name the JAX lowering (ipu_model.lowering) uses; the private one stays for the ops above and below
# until PopSparse's reference is next re-made (renaming them would stale it: core.provenance fingerprints units)
worker_chunks = _worker_chunks


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
def _cast_codelet(out_dtype: str) -> Codelet:
    key = ("cast", out_dtype)
    if key not in _CODELETS:
        _CODELETS[key] = Codelet(
            f"cast_{out_dtype}",
            lambda a: {"out": a.astype(out_dtype)},
            ("a",),
            ("out",),
            flops=lambda a, out: math.prod(a),
        )
    return _CODELETS[key]


def cast(graph: Graph, src: Tensor, dst: Tensor, name: str = "cast") -> Program:
    """dst = src cast to dst's dtype where src lives: one compute set. Both are 2-d views of one shape and one tile
    mapping whose rows come in blocks, every row of a block mapped alike (column ranges on tiles), as a block-mapped
    matrix is; each (row block, tile) gets one vertex per worker over a share of its columns."""
    if src.shape != dst.shape or len(src.shape) != 2 or not np.array_equal(src.tiles(), dst.tiles()):
        raise GraphError(f"cast {src.name!r} -> {dst.name!r}: need 2-d views of one shape and one tile mapping")
    code = _cast_codelet(dst.dtype.name)
    cs = graph.add_compute_set(name)
    tiles = src.tiles()
    rows_tile = tiles[:, 0]
    starts = np.flatnonzero(np.concatenate([[True], rows_tile[1:] != rows_tile[:-1]]))
    ends = np.concatenate([starts[1:], [len(rows_tile)]])
    for r0, r1 in zip(starts.tolist(), ends.tolist(), strict=True):
        col_tiles = tiles[r0]
        c_starts = np.flatnonzero(np.concatenate([[True], col_tiles[1:] != col_tiles[:-1]]))
        c_ends = np.concatenate([c_starts[1:], [len(col_tiles)]])
        for c0, c1 in zip(c_starts.tolist(), c_ends.tolist(), strict=True):
            parts = [c0 + v for v in _splits(c1 - c0, min(graph.device.workers, c1 - c0))]
            for a, b in itertools.pairwise(parts):
                graph.add_vertex(cs, code, int(col_tiles[c0]), a=src[r0:r1, a:b], out=dst[r0:r1, a:b])
    return Execute(cs)


@dataclass(frozen=True)
class MatmulPlan:
    """Tiles form a pm x pk x pn grid; the product is computed in sk x sn serial steps, each a [m, k/sk] x [k/sk, n/sn]
    product on the grid, where tile (i, j, q) computes A[rows i, k-slice j] @ B[k-slice j, cols q] of the step's
    chunks. Serial steps over k accumulate into float32 partials; steps over n fill C a column chunk at a time."""

    pm: int
    pk: int
    pn: int
    sk: int = 1
    sn: int = 1
    estimate: float = 0.0  # estimated cycles (the planner's model, before running)
    memory: float = 0.0  # estimated bytes on the busiest tile

    @property
    def tiles(self) -> int:
        return self.pm * self.pk * self.pn

    def describe(self) -> str:
        serial = f" in {self.sk}x{self.sn} serial steps" if self.sk * self.sn > 1 else ""
        return f"{self.pm}x{self.pk}x{self.pn}{serial}"


def _splits(n: int, parts: int) -> list[int]:
    """Boundaries of `parts` near-equal pieces of range(n)."""
    return [round(i * n / parts) for i in range(parts + 1)]


def _serial_candidates(size: int, limit: int = 64) -> list[int]:
    """Serial step counts that cut `size` into equal chunks: the powers of two up to `limit` that divide it."""
    return [s for s in (2**e for e in range(7)) if s <= limit and size % s == 0]


def _check_partials(in_dtype: str, partials: str) -> None:
    if np.dtype(partials).name not in ("float16", "float32") or (
        np.dtype(in_dtype) == np.float32 and np.dtype(partials) != np.float32
    ):
        raise GraphError(
            f"matmul partials {partials!r} with {in_dtype} inputs: the AMP accumulates float16 inputs in float16 or "
            "float32, float32 inputs in float32"
        )


def plan_matmul(
    device,
    m: int,
    k: int,
    n: int,
    in_dtype: str = "float16",
    out_dtype: str | None = None,
    partials: str = "float32",
) -> MatmulPlan:
    """Choose the tile grid and serial steps minimising the cost model's cycles among plans that fit in tile memory.

    Per serial step: one exchange (one sync, the busiest tile's A and B blocks at the exchange rate) and the busiest
    tile's product on the AMP unit (`cost.amp_matmul_cycles`, Graphcore's estimate for poplin's matmul vertex, with
    `partials` the accumulator type: float32 is poplin's default); per column chunk, the reduction of the k-split
    partials, or the cast of the partials, and an on-tile copy into C. Memory: A and B where they start (spread over
    the tiles), the tile's blocks and partials of one step, C and the reduction's buffers: all live during the
    steps."""
    out_dtype = out_dtype or in_dtype
    _check_partials(in_dtype, partials)
    isz, osz, psz = (np.dtype(t).itemsize for t in (in_dtype, out_dtype, partials))
    w, sync, xrate = device.workers, device.sync_cycles, device.exchange_bytes_per_cycle
    per_worker_flops = device.tile_flops_per_cycle(in_dtype) / w
    per_worker_bytes = device.memory_bytes_per_cycle / w

    def candidates(size: int) -> np.ndarray:
        return np.array(sorted({*range(1, min(size, 64) + 1), *(2**e for e in range(7, 16) if 2**e <= size)}))

    best = None
    for sk in _serial_candidates(k):
        for sn in _serial_candidates(n):
            kc, nc = k // sk, n // sn
            pm, pk, pn = (g.ravel() for g in np.meshgrid(candidates(m), candidates(kc), candidates(nc), indexing="ij"))
            ok = pm * pk * pn <= device.tiles
            pm, pk, pn = pm[ok], pk[ok], pn[ok]
            mb, kb, nb = -(-m // pm), -(-kc // pk), -(-nc // pn)
            split_k = pk > 1
            partial_sz = np.where(split_k | (sk > 1), psz, osz)
            # the same estimate the engine will charge (the codelet's cycles), vectorised over candidate grids
            compute = amp_matmul_cycles(device, mb, kb, nb, in_dtype, partials)
            blocks = (mb * kb + kb * nb) * isz
            # a tile sends its share of the step's A chunk and, B's rows being cut into chunks, of B's rows times
            # the chunk's columns (a contiguous chunk of k lives on a 1/sk share of the tiles)
            sent = (m * kc + k * nc) * isz / device.tiles
            step = sync + np.ceil(np.maximum(blocks, sent) / xrate) + np.ceil(compute)
            if sk * sn > 1:  # the dynamic slice: the source tiles copy the step's chunks out first
                step = step + np.ceil(2 * sent / device.memory_bytes_per_cycle)
            per_tile = -(-m * nc // device.tiles)  # results of one column chunk per tile (mapped linearly)
            reduce = split_k * (
                sync
                + per_tile * pk * psz / xrate
                + device.vertex_overhead_cycles
                + np.maximum(per_tile * pk / w / per_worker_flops, 2 * psz * per_tile * pk / w / per_worker_bytes)
            )
            casting = (~split_k) & (sk > 1) & (osz != psz)
            cast_cycles = casting * (
                sync + device.vertex_overhead_cycles + mb * nb * (psz + osz) / w / per_worker_bytes
            )
            separate_c = split_k | casting | (sn > 1)  # C is not the partials buffer itself
            copy_cycles = (sn > 1) * np.ceil(
                2 * np.where(split_k, per_tile, mb * nb) * osz / device.memory_bytes_per_cycle
            )
            cycles = sk * sn * step + sn * (reduce + cast_cycles + copy_cycles)
            memory = (
                blocks
                + mb * nb * partial_sz
                + (m * k + k * n) * isz / device.tiles
                + separate_c * m * n * osz / device.tiles
                + split_k * per_tile * (pk * psz + osz)
                + casting * mb * nb * osz
            )
            fits = memory <= 0.85 * device.memory_per_tile
            if not fits.any():
                continue
            i = np.flatnonzero(fits)[np.argmin(cycles[fits])]
            if best is None or cycles[i] < best.estimate:
                best = MatmulPlan(int(pm[i]), int(pk[i]), int(pn[i]), sk, sn, float(cycles[i]), float(memory[i]))
    if best is None:
        raise GraphError(f"matmul {m}x{k}x{n} ({in_dtype}) does not fit on {device.name} with any tile grid")
    return best


def _matmul_codelet(out_dtype: str, in_dtype: str, partials: str, accumulate: bool = False) -> Codelet:
    """One tile's block product on the AMP unit, accumulating in float32 and storing `out_dtype`. Cycles: Graphcore's
    estimate for poplin's 1x1 convolution vertex (`cost.amp_matmul_cycles`) with `partials` accumulators."""
    key = ("matmul", out_dtype, in_dtype, partials, accumulate)
    if key not in _CODELETS:
        if accumulate:  # c += a @ b: the partials of earlier serial steps

            def fn(a, b, c):
                return {"c": (c + np.matmul(a.astype(np.float32), b.astype(np.float32))).astype(out_dtype)}

            fields = {"inputs": ("a", "b"), "inouts": ("c",)}
        else:

            def fn(a, b):
                return {"c": np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(out_dtype)}

            fields = {"inputs": ("a", "b"), "outputs": ("c",)}
        _CODELETS[key] = Codelet(
            "matmul_accumulate" if accumulate else "matmul",
            fn,
            **fields,
            flops=lambda a, b, c: 2 * a[0] * a[1] * b[1],
            cycles=lambda device, a, b, c: float(amp_matmul_cycles(device, a[0], a[1], b[1], in_dtype, partials)),
            compute_dtype=in_dtype,
        )
    return _CODELETS[key]


def matmul(
    graph: Graph,
    a: Tensor,
    b: Tensor,
    out_dtype: str | None = None,
    plan: MatmulPlan | None = None,
    name: str = "matmul",
    partials: str = "float32",
    tiles: range | None = None,
) -> tuple[Program, Tensor, MatmulPlan]:
    """C = A @ B for A [m, k], B [k, n] mapped anyhow. Returns (program, C, plan). `tiles` (a range of the graph's
    tiles, default all) is where the product runs: the plan is made for that many tiles and C lives there.

    The plan (`plan_matmul` unless given) splits m, k and n over a tile grid, and k and n into serial steps. Each
    step is one exchange bringing each tile its A and B blocks of the step's chunks and one compute set where each
    tile multiplies its blocks on the AMP unit (one vertex per tile, costed as poplin's matmul vertex with `partials`
    accumulators, poplin's default float32; the values are accumulated in float32); steps over k add into the
    partials (the same vertices run again, the exchange refills the same buffers). With k split over tiles the
    partials are then reduced onto C's tiles (`reduce`); partials of another type than C are cast where they are.
    With one step over n, C is mapped by blocks when k is not split over tiles, linearly else; with several, each
    column chunk of C is mapped like the buffer that assembles it and filled by an on-tile copy.
    """
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise GraphError(f"matmul needs A [m, k] and B [k, n], got {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise GraphError(f"matmul operands differ in dtype: {a.dtype} and {b.dtype}")
    (m, k), n = a.shape, b.shape[1]
    in_dtype = a.dtype.name
    out_dtype = out_dtype or in_dtype
    _check_partials(in_dtype, partials)  # also when the plan is given
    tiles = range(graph.num_tiles) if tiles is None else tiles
    if tiles.step != 1 or not 0 <= tiles.start < tiles.stop <= graph.num_tiles:
        raise GraphError(f"matmul tiles {tiles}: need a contiguous range within the graph's 0..{graph.num_tiles - 1}")
    device = graph.device if len(tiles) == graph.num_tiles else graph.device.replace(tiles=len(tiles))
    plan = plan or plan_matmul(device, m, k, n, in_dtype, out_dtype, partials)
    if plan.tiles > len(tiles):
        raise GraphError(f"matmul plan {plan} needs {plan.tiles} tiles, it has {len(tiles)}")
    pm, pk, pn, sk, sn = plan.pm, plan.pk, plan.pn, plan.sk, plan.sn
    if sk < 1 or sn < 1 or k % sk or n % sn:
        raise GraphError(f"matmul plan: {sk} x {sn} serial steps must cut k={k} and n={n} into equal chunks")
    kc, nc = k // sk, n // sn
    if not (1 <= pm <= m and 1 <= pk <= kc and 1 <= pn <= nc):
        step = f" (a serial step of {m}x{k}x{n})" if sk * sn > 1 else ""
        raise GraphError(
            f"matmul plan {pm}x{pk}x{pn} does not fit {m}x{kc}x{nc}{step}: need 1 <= pm <= m, pk <= k, pn <= n"
        )
    ms, ks, ns = _splits(m, pm), _splits(kc, pk), _splits(nc, pn)
    tile = lambda i, j, q: tiles.start + (i * pk + j) * pn + q
    a_rep = graph.add_variable((pn, m, kc), in_dtype, f"{name}/A_tiles")
    b_rep = graph.add_variable((pm, kc, nc), in_dtype, f"{name}/B_tiles")
    graph.map_blocks(a_rep, [range(pn + 1), ms, ks], lambda q, i, j: tile(i, j, q))
    graph.map_blocks(b_rep, [range(pm + 1), ks, ns], lambda i, j, q: tile(i, j, q))
    direct = pk == 1 and sk == 1 and sn == 1  # the vertices write C itself
    target_dtype = out_dtype if pk == 1 and sk == 1 else partials
    if direct:
        c = graph.add_variable((m, n), out_dtype, f"{name}/C")
        graph.map_blocks(c, [ms, ns], lambda i, q: tile(i, 0, q))
        target = c.expand_dims(0)
    else:
        target = graph.add_variable((pk, m, nc), target_dtype, f"{name}/partials")
        graph.map_blocks(target, [range(pk + 1), ms, ns], lambda j, i, q: tile(i, j, q))
    executes = []
    for accumulate in (False, True) if sk > 1 else (False,):
        cs = graph.add_compute_set(f"{name}/multiply" + ("_accumulate" if accumulate else ""))
        code = _matmul_codelet(target_dtype, in_dtype, partials, accumulate)
        for i, j, q in itertools.product(range(pm), range(pk), range(pn)):
            r0, r1, k0, k1, c0, c1 = ms[i], ms[i + 1], ks[j], ks[j + 1], ns[q], ns[q + 1]
            graph.add_vertex(
                cs, code, tile(i, j, q), a=a_rep[q, r0:r1, k0:k1], b=b_rep[i, k0:k1, c0:c1], c=target[j, r0:r1, c0:c1]
            )
        executes.append(Execute(cs))
    # what turns one column chunk's partials into C's values (built once, run per chunk)
    finish: list[Program] = []
    if not direct:
        chunk_name = f"{name}/C" if sn == 1 else f"{name}/C_chunk"
        if pk > 1:
            chunk = graph.add_variable((m, nc), out_dtype, chunk_name)
            graph.map_linearly(chunk, tiles=tiles)
            red, chunk = reduce(graph, target, axis=0, op="add", out_dtype=out_dtype, name=f"{name}/reduce", out=chunk)
            finish.append(red)
        elif target_dtype != out_dtype:
            chunk = like(graph, target[0], out_dtype, name=chunk_name)
            finish.append(cast(graph, target[0], chunk, name=f"{name}/cast"))
        else:
            chunk = target[0]
        if sn == 1:
            c = chunk
        else:
            c = graph.add_variable((m, n), out_dtype, f"{name}/C")
            c.var.tile[:] = np.tile(chunk.tiles(), (1, sn)).reshape(-1)
    if sk == 1 and sn == 1:  # one step: a static exchange, the product, the reduction if k is split over tiles
        exchange = Copy(
            [a.expand_dims(0).broadcast_to((pn, m, k)), b.expand_dims(0).broadcast_to((pm, k, n))],
            [a_rep, b_rep],
            name=f"{name}/broadcast",
        )
        return Sequence(exchange, executes[0], *finish, name=name), c, plan
    # serial steps: one exchange whose source moves with the loop counters (a dynamic slice), run sk x sn times
    load = DynamicCopy(
        [
            Copy(
                [
                    a[:, t * kc : (t + 1) * kc].expand_dims(0).broadcast_to((pn, m, kc)),
                    b[t * kc : (t + 1) * kc, s * nc : (s + 1) * nc].expand_dims(0).broadcast_to((pm, kc, nc)),
                ],
                [a_rep, b_rep],
            )
            for s in range(sn)
            for t in range(sk)
        ],
        name=f"{name}/broadcast",
    )
    # the first step over k writes the partials, the others add to them
    chunk_steps: list[Program] = [load, executes[0]]
    if sk > 1:
        chunk_steps.append(Repeat(sk - 1, Sequence(load, executes[1], name=f"{name}/k_step"), name=f"{name}/k_loop"))
    chunk_steps += finish
    if sn > 1:
        chunk_steps.append(
            DynamicCopy([Copy(chunk, c[:, s * nc : (s + 1) * nc]) for s in range(sn)], name=f"{name}/assemble")
        )
    body = Sequence(*chunk_steps, name=f"{name}/n_step")
    return (Repeat(sn, body, name=name) if sn > 1 else Sequence(body, name=name)), c, plan

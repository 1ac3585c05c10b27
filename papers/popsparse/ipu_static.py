"""Static block-sparse x dense matmul on the simulated IPU: Y[m, n] = W[m, k] X[k, n], W's pattern known when the
program is built (PopSparse's `static_::sparseDenseMatMul`).

Plan (`plan_static`). The block-columns of W (k) are cut into `B` bands holding near-equal numbers of non-zero
blocks; n is cut into `S` near-equal column splits. Each of the S splits gets `tiles // S` tile groups, given to the
bands in proportion to their non-zero blocks (the remainder to the bands with most blocks per group); a band's
block-rows are then cut into that many row parts of near-equal non-zero blocks. Tile (band j, row part r, split s)
computes the band's partial  P_j[rows r, cols s] = sum over its blocks W[i, c] X[c, cols s]. Every (B, S) is costed
with the formulas the engine charges (exchange of the tile's W blocks and X band slice, the busiest worker's block
products, the reduction across bands) and the cheapest that fits in tile memory is kept.

Program (`static_sparse_matmul`).
1. One exchange: every tile receives its W blocks (in row order) and the rows of X of its band, for its columns.
2. One compute set: the tile's block-rows are cut over its six workers by non-zero blocks (columns too when a tile
   has fewer than six rows); each worker's vertex runs through its list of blocks (meta-information: output row,
   input column) accumulating b x cols products in float32 and writes its output rows once, empty rows as zeros.
   Only blocks present cost FLOPs: 2 b^2 cols per block.
3. With more than one band, the float32 partials of the bands are summed onto Y's tiles (`ipu_model.ops.reduce`);
   with one band the workers write Y directly, in its dtype.

One module over 400 lines: the plan, the codelet and the program are the three steps above, sharing the plan's
partition arithmetic; apart, none of them reads without the others.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from core.sparsity.formats import BlockPattern
from ipu_model import Codelet, Copy, DynamicCopy, Execute, Graph, GraphError, Program, Repeat, Sequence, Tensor, ops
from ipu_model.device import DeviceSpec
from papers.popsparse.ipu_common import (
    META_BYTES,
    PARTIAL_DTYPE,
    balanced_cuts,
    busiest_piece,
    reduce_cycles,
    reduce_memory,
    splits,
    static_cycles,
)

MEMORY_FRACTION = 0.85  # of a tile's memory a plan may fill (vertex state, code and exchange code need the rest)


@dataclass(frozen=True)
class StaticPlan:
    """Bands of block-columns, per band the block-row cuts of its tile groups, and the number of n splits."""

    bands: tuple[int, ...]  # block-column boundaries, len B + 1
    row_cuts: tuple[tuple[int, ...], ...]  # per band: block-row boundaries of its row parts
    n_splits: int
    estimate: float = 0.0  # cycles the planner expects
    memory: float = 0.0  # bytes it expects on the fullest tile
    serial: int = 1  # serial steps over n: each step multiplies the resident W blocks by a column chunk of X

    @property
    def num_bands(self) -> int:
        return len(self.bands) - 1

    @property
    def groups(self) -> int:
        return sum(len(c) - 1 for c in self.row_cuts)

    @property
    def tiles(self) -> int:
        return self.groups * self.n_splits

    def describe(self) -> str:
        parts = sorted({len(c) - 1 for c in self.row_cuts})
        steps = f" in {self.serial} serial steps" if self.serial > 1 else ""
        return f"{self.num_bands} bands x {'/'.join(map(str, parts))} row parts x {self.n_splits} n-splits{steps}"


def _candidates(limit: int, top: int) -> list[int]:
    values = {*range(1, 9), 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024}
    return sorted(v for v in values if v <= min(limit, top))


def _band_bounds(col_counts: np.ndarray, bands: int) -> np.ndarray:
    """Block-column boundaries of up to `bands` bands with near-equal non-zero blocks (empty bands dropped)."""
    cum = np.concatenate([[0], np.cumsum(col_counts)])
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, bands) / bands, side="left")
    return np.unique(np.concatenate([[0], cuts, [len(col_counts)]]))


def _allocate(band_nz: np.ndarray, groups: int, max_parts: int) -> np.ndarray:
    """Tile groups per band, in proportion to its non-zero blocks (at least one, at most `max_parts`)."""
    parts = np.clip(np.floor(band_nz * groups / band_nz.sum()).astype(np.int64), 1, max_parts)
    for _ in range(groups - int(parts.sum())):  # the leftover to the band with most blocks per group
        load = np.where(parts < max_parts, band_nz / parts, -1)
        j = int(np.argmax(load))
        if load[j] < 0:
            break
        parts[j] += 1
    return parts


def _worker_estimate(device, nz, present, rows, cols, b, dtype) -> np.ndarray:
    """The busiest vertex's cycles on tiles with `nz` blocks over `rows` block-rows (`present` of them holding
    blocks) and `cols` columns. b > 1: one supervisor vertex whose six workers split the columns. b = 1: worker
    vertices, for the best split (row parts x column parts): a row part is whole rows, so it may hold about one
    row's blocks more than its share; a column part re-reads every block of its rows."""
    if b > 1:
        return static_cycles(device, nz, b, present, cols, dtype)
    best = None
    for wr in range(1, device.workers + 1):
        wr_eff = np.minimum(wr, rows)
        wc = np.minimum(device.workers // wr, cols)
        blocks = -(-nz // wr_eff) + np.where(wr_eff > 1, -(-nz // rows), 0)
        per_row = -(-present // wr_eff)
        cyc = busiest_piece(lambda c, nz=blocks, r=per_row: static_cycles(device, nz, b, r, c, dtype), cols, wc)
        best = cyc if best is None else np.minimum(best, cyc)
    return best


def _worker_split(device, counts: np.ndarray, cols: int, b: int, dtype: str) -> tuple[np.ndarray, int]:
    """A tile's work over its vertices: (block-row cuts, column parts). b > 1: one supervisor vertex (its workers
    split the columns). b = 1: the split (row parts x column parts <= workers) whose busiest worker is quickest."""
    if b > 1:
        return np.array([0, len(counts)], np.int64), 1
    best = None
    for wr in range(1, min(device.workers, len(counts)) + 1):
        cuts = balanced_cuts(counts, wr)
        blocks = np.add.reduceat(counts, cuts[:-1]) if len(counts) else np.zeros(1, np.int64)
        present = np.add.reduceat(counts > 0, cuts[:-1]) if len(counts) else np.zeros(1, np.int64)
        wc = max(1, min(device.workers // wr, cols))
        cyc = busiest_piece(lambda c, nz=blocks, r=present: static_cycles(device, nz, b, r, c, dtype), cols, wc)
        cyc = cyc.max()
        if best is None or cyc < best[0]:
            best = (cyc, cuts, wc)
    return best[1], best[2]


def plan_static(device: DeviceSpec, pattern: BlockPattern, n: int, dtype: str = "float16") -> StaticPlan:
    """Choose bands, n splits and serial steps over n minimising the engine's cost formulas among plans that fit in
    tile memory. With serial steps, W's blocks are brought to their tiles once and stay; each step brings the
    tiles a column chunk of X (a dynamic slice: the source tiles copy it out first), multiplies, reduces the bands
    and copies the chunk into Y where it lives."""
    b, nnz = pattern.block, pattern.nnz_blocks
    m, k = pattern.shape
    if nnz == 0:
        raise GraphError("static sparse matmul: the pattern has no non-zero blocks")
    best: StaticPlan | None = None
    memo: dict = {}  # what the searches over serial steps share (the same bands and row parts recur)
    for serial in (v for v in (1, 2, 4, 8, 16, 32, 64) if n % v == 0):
        found = _plan_static_chunks(device, pattern, n, serial, dtype, memo)
        if found is not None and (best is None or found.estimate < best.estimate):
            best = found
    if best is None:
        raise GraphError(
            f"static sparse matmul {m}x{k}x{n} (block {b}, {nnz} blocks, {dtype}) does not fit on {device.name} "
            "with any plan"
        )
    return best


def _plan_static_chunks(
    device: DeviceSpec, pattern: BlockPattern, n: int, serial: int, dtype: str, memo: dict | None = None
) -> StaticPlan | None:
    """The best plan with `serial` steps over n (None: none fits). `memo` keeps the bands, their row parts and the
    vertex estimates, which depend on the pattern, the device and the dtype only, for the calls of one plan search."""
    memo = {} if memo is None else memo
    b, (rb, cb), nnz = pattern.block, pattern.grid, pattern.nnz_blocks
    m, k = pattern.shape
    isz = np.dtype(dtype).itemsize
    n_full, n = n, n // serial  # below, n is one step's columns
    sources = (nnz * b * b + k * n_full) * isz / device.tiles  # W and X, spread over the tiles before the exchange
    x_sent = k * n * isz / device.tiles  # what a tile sends of one step's X chunk (X's rows are spread)
    best: StaticPlan | None = None
    col_counts = np.bincount(pattern.cols, minlength=cb)
    for want_bands in _candidates(cb, device.tiles):
        if ("bands", want_bands) not in memo:
            bounds = _band_bounds(col_counts, want_bands)
            nb = len(bounds) - 1
            band_of = np.searchsorted(bounds, pattern.cols, side="right") - 1
            band_nz = np.bincount(band_of, minlength=nb)
            row_counts = np.bincount(band_of * rb + pattern.rows, minlength=nb * rb).reshape(nb, rb)
            memo["bands", want_bands] = bounds, nb, band_nz, row_counts
        bounds, nb, band_nz, row_counts = memo["bands", want_bands]
        width = np.diff(bounds) * b
        psz = 4 if nb > 1 else isz
        for s in _candidates(n, device.tiles // nb):
            cols = -(-n // s)
            groups = device.tiles // s
            if ("parts", want_bands, groups) not in memo:
                parts = _allocate(band_nz, groups, rb)
                cuts = [balanced_cuts(row_counts[j], int(parts[j])) for j in range(nb)]
                nz = np.concatenate([np.add.reduceat(row_counts[j], c[:-1]) for j, c in enumerate(cuts)])
                present = np.concatenate([np.add.reduceat(row_counts[j] > 0, c[:-1]) for j, c in enumerate(cuts)])
                rows = np.concatenate([np.diff(c) for c in cuts])
                memo["parts", want_bands, groups] = parts, cuts, nz, present, rows
            parts, cuts, nz, present, rows = memo["parts", want_bands, groups]
            if parts.sum() * s > device.tiles:
                continue
            xw = np.repeat(width, parts)
            if ("vertex", want_bands, groups, cols) not in memo:
                memo["vertex", want_bands, groups, cols] = _worker_estimate(device, nz, present, rows, cols, b, dtype)
            vertex = memo["vertex", want_bands, groups, cols]
            received = nz * b * b * isz + xw * cols * isz
            xrate, sync = device.exchange_bytes_per_cycle, device.sync_cycles
            if serial == 1:
                cycles = sync + np.ceil(np.maximum(received, sources) / xrate)
                cycles = float(np.max(cycles + vertex))
            else:  # W once; per step the X chunk (sent and sliced on its source tiles) and the product
                w_in = nz * b * b * isz
                cycles = sync + float(np.ceil(max(float(np.max(w_in)), nnz * b * b * isz / device.tiles) / xrate))
                step = sync + np.ceil(np.maximum(xw * cols * isz, x_sent) / xrate) + vertex
                step = step + np.ceil(2 * x_sent / device.memory_bytes_per_cycle)
                cycles += serial * float(np.max(step))
            memory = received + (nz + present) * META_BYTES + rows * b * cols * psz + sources + 8 * (xw + 2 * rows)
            memory = float(np.max(memory))
            if nb > 1:
                cycles += serial * reduce_cycles(device, nb, m * n, dtype, sent=float(np.max(rows)) * b * cols * 4)
                memory += reduce_memory(device, nb, m * n, dtype)
            if serial > 1:  # Y whole, and the copy of each step's chunk into it (on-tile: a load and a store)
                chunk = -(-m * n // device.tiles) if nb > 1 else float(np.max(rows)) * b * cols
                memory += m * n_full * isz / device.tiles
                cycles += serial * float(np.ceil(2 * chunk * isz / device.memory_bytes_per_cycle))
            if memory > MEMORY_FRACTION * device.memory_per_tile:
                continue
            if best is None or cycles < best.estimate:
                row_cuts = tuple(tuple(int(v) for v in c) for c in cuts)
                best = StaticPlan(tuple(int(v) for v in bounds), row_cuts, s, cycles, memory, serial)
    return best


# ----------------------------------------------------------------------------------------------------- codelet
_CODELETS: dict[tuple, Codelet] = {}


def _block_codelet(block: int, in_dtype: str, out_dtype: str) -> Codelet:
    """Vertex multiplying a list of blocks. Fields: w [blocks * b * b] values, meta [blocks] (output block-row
    relative to the vertex's first row << 16 | block-column in the tile's X slice), work [rows with blocks] (the
    work list's output entries: those rows, relative to the first), x [xrows, cols], out [rows, cols] (written
    whole: rows without blocks get zeros). Cycles: Graphcore's static estimate (`ipu_common.static_cycles`)."""
    key = (block, in_dtype, out_dtype)
    if key in _CODELETS:
        return _CODELETS[key]
    b = block

    def fn(w, meta, work, x, out):  # batched over vertices of one shape
        v, nblk = w.shape[0], w.shape[1] // (b * b)
        rows, cols = out.shape[1] // b, out.shape[2]
        vals = w.reshape(v, nblk, b, b).astype(np.float32)
        xg = x.reshape(v, -1, b, cols)[np.arange(v)[:, None], meta & 0xFFFF].astype(np.float32)
        acc = np.zeros((v, rows, b, cols), np.float32)
        np.add.at(acc, (np.arange(v)[:, None], meta >> 16), np.einsum("vnij,vnjc->vnic", vals, xg))
        return {"out": acc.reshape(out.shape).astype(out_dtype)}

    def cycles(device, w, meta, work, x, out):
        return float(static_cycles(device, w[0] // (b * b), b, work[0], out[1], in_dtype))

    _CODELETS[key] = Codelet(
        f"static_block{b}",
        fn,
        inputs=("w", "meta", "work", "x"),
        inouts=("out",),
        flops=lambda w, meta, work, x, out: 2 * w[0] * out[1],
        cycles=cycles,
        compute_dtype=in_dtype,
    )
    return _CODELETS[key]


# ------------------------------------------------------------------------------------------------------ program
def _w_pairs(w: Tensor, wbuf: Tensor, src_block: np.ndarray, copies: int) -> list[tuple[Tensor, Tensor]]:
    """Copy pairs bringing W's blocks (CSR order) into wbuf [copies, blocks, b*b] in the order `src_block` (wbuf
    block i <- W block src_block[i], in every copy). Runs of consecutive blocks move as one region. Few runs (one
    with a single band) become slices of W; many runs of equal length share one pair. Either way the engine works
    on regions rather than elements (only the many-runs case spells out every element's position)."""
    bb = wbuf.shape[2]
    flat_src, flat_dst = w.reshape(-1), wbuf.reshape(copies, -1)
    new_run = np.ones(len(src_block), bool)
    new_run[1:] = np.diff(src_block) != 1
    starts = np.flatnonzero(new_run)
    lengths = np.diff(np.concatenate([starts, [len(src_block)]]))
    if len(starts) <= 4096:
        pairs = []
        for at, length in zip(starts.tolist(), lengths.tolist(), strict=True):
            src = flat_src[src_block[at] * bb : (src_block[at] + length) * bb]
            pairs.append(
                (src.expand_dims(0).broadcast_to((copies, length * bb)), flat_dst[:, at * bb : (at + length) * bb])
            )
        return pairs
    pairs = []
    for length in np.unique(lengths).tolist():
        at = starts[lengths == length]
        span = np.arange(length * bb)
        src = flat_src.idx[src_block[at][:, None] * bb + span]
        dst = flat_dst.idx[:, at[:, None] * bb + span]
        pairs.append((Tensor(w.var, np.broadcast_to(src, (copies, *src.shape))), Tensor(wbuf.var, dst)))
    return pairs


def static_sparse_matmul(
    graph: Graph, pattern: BlockPattern, w: Tensor, x: Tensor, plan: StaticPlan | None = None, name: str = "static"
) -> tuple[Program, Tensor, StaticPlan]:
    """Y = W X for W's non-zero blocks w [nnz, b, b] (in `pattern`'s order) and X [k, n], both mapped anyhow and of
    one dtype (float16 or float32). Returns (program, Y [m, n] in that dtype, plan)."""
    b, (rb, cb), nnz = pattern.block, pattern.grid, pattern.nnz_blocks
    m, k = pattern.shape
    if tuple(w.shape) != (nnz, b, b):
        raise GraphError(f"{name}: w must be [nnz blocks, b, b] = {(nnz, b, b)} for the pattern, got {w.shape}")
    if len(x.shape) != 2 or x.shape[0] != k:
        raise GraphError(f"{name}: x must be [k, n] with k = {k}, got {x.shape}")
    if w.dtype != x.dtype or w.dtype.name not in ("float16", "float32"):
        raise GraphError(f"{name}: w and x must share a float16 or float32 dtype, got {w.dtype} and {x.dtype}")
    n, dtype, dev = x.shape[1], w.dtype.name, graph.device
    plan = plan or plan_static(dev, pattern, n, dtype)
    cuts_ok = all(c[0] == 0 and c[-1] == rb and all(np.diff(c) > 0) for c in plan.row_cuts)
    bands_ok = plan.bands[0] == 0 and plan.bands[-1] == cb and all(np.diff(plan.bands) > 0)
    if not (cuts_ok and bands_ok and len(plan.row_cuts) == plan.num_bands) or plan.tiles > graph.num_tiles:
        raise GraphError(
            f"{name}: plan {plan.describe()} does not fit a {rb} x {cb} block grid on {graph.num_tiles} tiles"
        )
    nb, s_count, serial = plan.num_bands, plan.n_splits, plan.serial
    if serial < 1 or n % serial:
        raise GraphError(f"{name}: {serial} serial steps must cut n={n} into equal chunks")
    n_full, n = n, n // serial  # below, n is one step's columns
    bounds = np.asarray(plan.bands)
    base = np.concatenate([[0], np.cumsum([len(c) - 1 for c in plan.row_cuts])])
    # host side: each block's tile group (band, row part), then blocks ordered by group, row, column
    band = np.searchsorted(bounds, pattern.cols, side="right") - 1
    group = np.empty(nnz, np.int64)
    for j, c in enumerate(plan.row_cuts):
        sel = band == j
        group[sel] = base[j] + np.searchsorted(np.asarray(c), pattern.rows[sel], side="right") - 1
    order = np.lexsort((pattern.cols, pattern.rows, group))
    g_sorted, rows_sorted = group[order], pattern.rows[order].astype(np.int64)
    cols_local = (pattern.cols[order] - bounds[band[order]]).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=plan.groups))])
    col_cuts = splits(n, s_count)
    split_of_col = np.repeat(np.arange(s_count), np.diff(col_cuts))

    # W blocks: one copy per n split, each group's blocks on its tile of that split
    wbuf = graph.add_variable((s_count, nnz, b * b), dtype, f"{name}/w_tiles")
    wbuf.var.tile[:] = np.repeat((g_sorted[None, :] * s_count + np.arange(s_count)[:, None]).reshape(-1), b * b)
    pairs = _w_pairs(w, wbuf, order, s_count)
    # X: band j's rows for every group of the band, columns by split
    xbufs = []
    for j in range(nb):
        groups_j, rows_j = len(plan.row_cuts[j]) - 1, (bounds[j + 1] - bounds[j]) * b
        xb = graph.add_variable((groups_j, rows_j, n), dtype, f"{name}/x_band{j}")
        tiles = (base[j] + np.arange(groups_j))[:, None, None] * s_count + split_of_col[None, None, :]
        xb.var.tile[:] = np.broadcast_to(tiles, xb.shape).reshape(-1)
        xbufs.append(xb)

    def x_pairs(t: int) -> list[tuple[Tensor, Tensor]]:  # step t's column chunk of X, band j's rows to band j
        return [
            (x[bounds[j] * b : bounds[j + 1] * b, t * n : (t + 1) * n].expand_dims(0).broadcast_to(xb.shape), xb)
            for j, xb in enumerate(xbufs)
        ]

    # outputs: Y itself with one band, else float32 partials per band
    target_dtype = dtype if nb == 1 else PARTIAL_DTYPE
    target = graph.add_variable(
        (nb, m, n), target_dtype, f"{name}/{'partials' if nb > 1 else 'Y' if serial == 1 else 'Y_chunk'}"
    )
    row_group = np.concatenate(
        [base[j] + np.repeat(np.arange(len(c) - 1), np.diff(c)) for j, c in enumerate(plan.row_cuts)]
    )
    tiles = np.repeat(row_group.reshape(nb, rb), b, axis=1)[:, :, None] * s_count + split_of_col[None, None, :]
    target.var.tile[:] = tiles.reshape(-1)

    # vertices: per group, the rows cut over the workers by blocks; meta packs (row in vertex, column in band)
    code = _block_codelet(b, dtype, target_dtype)
    cs = graph.add_compute_set(f"{name}/multiply")
    meta_values = np.zeros(nnz, np.int32)
    vertices = []  # (group, first and end block, first and end block-row, band, row part, column parts)
    for j, c in enumerate(plan.row_cuts):
        for r in range(len(c) - 1):
            g = base[j] + r
            lo, hi = int(offsets[g]), int(offsets[g + 1])
            counts = np.bincount(rows_sorted[lo:hi] - c[r], minlength=c[r + 1] - c[r])
            cuts, wc = _worker_split(dev, counts, int(np.diff(col_cuts).max()), b, dtype)
            cuts = cuts + c[r]
            blocks = lo + np.searchsorted(rows_sorted[lo:hi], cuts, side="left")
            for i in range(len(cuts) - 1):
                b0, b1 = int(blocks[i]), int(blocks[i + 1])
                meta_values[b0:b1] = ((rows_sorted[b0:b1] - cuts[i]) << 16) | cols_local[b0:b1]
                vertices.append((g, b0, b1, int(cuts[i]), int(cuts[i + 1]), j, r, wc))
    meta = graph.add_constant(np.broadcast_to(meta_values, (s_count, nnz)), "int32", f"{name}/meta")
    meta.var.tile[:] = wbuf.var.tile[:: b * b]
    # the work lists' output entries: per vertex, its rows holding blocks (relative to its first row)
    present = [np.unique(rows_sorted[b0:b1]) - r0 for _, b0, b1, r0, *_ in vertices]
    work_at = np.concatenate([[0], np.cumsum([len(p) for p in present])])
    work = graph.add_constant(
        np.broadcast_to(np.concatenate(present).astype(np.int32), (s_count, int(work_at[-1]))), "int32", f"{name}/work"
    )
    work_group = np.repeat([v[0] for v in vertices], np.diff(work_at))
    work.var.tile[:] = (work_group[None, :] * s_count + np.arange(s_count)[:, None]).reshape(-1)
    for i, (g, b0, b1, r0, r1, j, r, wc) in enumerate(vertices):
        for s in range(s_count):
            tile = int(g * s_count + s)
            c0, c1 = int(col_cuts[s]), int(col_cuts[s + 1])
            col_parts = (splits(c1 - c0, min(wc, c1 - c0)) + c0).tolist()
            for p0, p1 in itertools.pairwise(col_parts):
                graph.add_vertex(
                    cs,
                    code,
                    tile,
                    w=wbuf[s, b0:b1].reshape(-1),
                    meta=meta[s, b0:b1],
                    work=work[s, int(work_at[i]) : int(work_at[i + 1])],
                    x=xbufs[j][r, :, p0:p1],
                    out=target[j, r0 * b : r1 * b, p0:p1],
                )
    if serial == 1:
        pairs += x_pairs(0)
        steps: list[Program] = [
            Copy([p for p, _ in pairs], [q for _, q in pairs], name=f"{name}/exchange"),
            Execute(cs),
        ]
        if nb == 1:
            return Sequence(*steps, name=name), target[0], plan
        red, y = ops.reduce(graph, target, axis=0, op="add", out_dtype=dtype, name=f"{name}/reduce")
        return Sequence(*steps, red, name=name), y, plan
    # serial steps over n: W's blocks come once and stay; each step brings a chunk of X (a dynamic slice)
    w_copy = Copy([p for p, _ in pairs], [q for _, q in pairs], name=f"{name}/exchange_w")
    variants = []
    for t in range(serial):
        step_pairs = x_pairs(t)
        variants.append(Copy([p for p, _ in step_pairs], [q for _, q in step_pairs]))
    load = DynamicCopy(variants, name=f"{name}/exchange_x")
    finish: list[Program] = []
    if nb == 1:
        chunk = target[0]
    else:
        chunk = graph.add_variable((m, n), dtype, f"{name}/Y_chunk")
        graph.map_linearly(chunk)
        red, chunk = ops.reduce(graph, target, axis=0, op="add", out_dtype=dtype, name=f"{name}/reduce", out=chunk)
        finish.append(red)
    y = graph.add_variable((m, n_full), dtype, f"{name}/Y")
    y.var.tile[:] = np.tile(chunk.tiles(), (1, serial)).reshape(-1)  # each column chunk where its step leaves it
    assemble = DynamicCopy([Copy(chunk, y[:, t * n : (t + 1) * n]) for t in range(serial)], name=f"{name}/assemble")
    step = Sequence(load, Execute(cs), *finish, assemble, name=f"{name}/n_step")
    return Sequence(w_copy, Repeat(serial, step, name=f"{name}/n_loop"), name=name), y, plan

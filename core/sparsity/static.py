"""Block-sparse x dense matmul with the pattern fixed at trace time: Y = W X, W [m, k] block-sparse, X [k, n] dense.

The plan (host, numpy, once per pattern) cuts every block row r, with c_r blocks, into ceil(c_r / G) groups of nearly
equal size, G = 256 / b blocks. Laid side by side, the blocks of a group form a slab S_g [b, width * b], and

    Y[r] = sum over the groups g of row r of  S_g @ X[cols_g],     X[cols_g] = the X row-blocks at the group's columns,

one dense [b, <= 256] @ [<= 256, n] dot per group, in a `fori_loop` that gathers X[cols_g] first. Groups are bucketed by
width: at most 8 widths, chosen to pad the fewest slots (`bucket_widths`), so at most 8 loops are compiled; padded slots
index one past the end of the values and of X and gather zeros (`mode="fill"`), so they add exactly 0 whatever X holds.

Why this shape (CPU, 2 cores, m = k = n = 4096, b = 16, density 1/16): one dot per group in a loop runs at ~100
GFLOP/s, a single batched einsum over all blocks or groups at 15-40 (XLA's CPU batched dot is far slower than its plain
dot), and materialising X for every block at once moves a gigabyte. Chunking n made each dot smaller and the loops
slower. A contraction of ~256 columns was the fastest of 128, 256 and 512.

The gradients use the same machinery (a custom VJP, because plain autodiff of the loop would keep every gathered
X[cols_g] as a residual): dX = W^T dY is the forward loop on the plan of W^T, and the gradient of block j at (r, c) is
dV[j] = dY[r] X[c]^T, one [b, n] @ [n, width * b] dot per group.

    plan = plan_static(pattern)
    y = jax.jit(static_matmul, static_argnums=0)(plan, values, x)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from core.sparsity.formats import BlockPattern, BlockSparseMatrix

GROUP_COLUMNS = 256  # columns of X one group's dot contracts over (at most): G = GROUP_COLUMNS / b blocks
MAX_BUCKETS = 8  # at most this many group widths, i.e. compiled loops: each loop adds ~0.1 s of compile time


@dataclass(frozen=True, eq=False)
class Bucket:
    """Groups of `width` block slots: group s holds blocks `blocks[s]` of block row `rows[s]`, at block columns
    `cols[s]`. Padded slots hold block nnz and column k / b, one past the end of the values and of X."""

    rows: np.ndarray  # [S] int32
    blocks: np.ndarray  # [S, width] int32
    cols: np.ndarray  # [S, width] int32

    @property
    def width(self) -> int:
        return self.blocks.shape[1]


def _split_sizes(count: int, group: int) -> np.ndarray:
    """Sizes of ceil(count / group) nearly equal parts of `count` blocks, each at most `group`."""
    parts = -(-count // group)
    return np.full(parts, count // parts) + (np.arange(parts) < count % parts)


def bucket_widths(sizes: np.ndarray, max_buckets: int = MAX_BUCKETS) -> np.ndarray:
    """At most `max_buckets` widths, drawn from `sizes`, that minimise the padding sum(width(s) - s) when every size
    s is padded up to the smallest width >= s. Dynamic programming over the distinct sizes v_0 < ... < v_{D-1}:
    best[t, j] = least padding of the sizes <= v_j with t widths, the largest being v_j."""
    values, counts = np.unique(np.asarray(sizes, np.int64), return_counts=True)
    n_cum = np.concatenate([[0], np.cumsum(counts)])
    s_cum = np.concatenate([[0], np.cumsum(counts * values)])

    def padding(i, j: int):  # sizes v_i..v_j padded to v_j
        return values[j] * (n_cum[j + 1] - n_cum[i]) - (s_cum[j + 1] - s_cum[i])

    D, T = values.size, min(max_buckets, values.size)
    best = np.full((T + 1, D), np.inf)
    arg = np.zeros((T + 1, D), np.int64)  # the first distinct size the last width covers
    best[1] = [padding(0, j) for j in range(D)]
    for t in range(2, T + 1):
        for j in range(t - 1, D):
            i = np.arange(1, j + 1)  # the last width covers v_i..v_j, the t - 1 before cover v_0..v_{i-1}
            total = best[t - 1, i - 1] + padding(i, j)
            arg[t, j], best[t, j] = i[np.argmin(total)], total.min()
    t, j, widths = int(np.argmin(best[:, D - 1])), D - 1, []
    while t >= 1:
        widths.append(values[j])
        j, t = arg[t, j] - 1, t - 1
    return np.array(widths[::-1])


def _groups(pattern: BlockPattern) -> list[tuple[int, int, int]]:
    """(block row, first block, size) of every group; rows without blocks have none (their output stays zero)."""
    group = max(1, GROUP_COLUMNS // pattern.block)
    indptr, out = pattern.indptr, []
    for r in np.flatnonzero(np.diff(indptr)):
        start = int(indptr[r])
        for size in _split_sizes(int(indptr[r + 1]) - start, group):
            out.append((int(r), start, int(size)))
            start += int(size)
    return out


def _buckets(pattern: BlockPattern) -> tuple[Bucket, ...]:
    groups = _groups(pattern)
    if not groups:
        return ()
    nnz = pattern.nnz_blocks
    sizes = np.array([size for _, _, size in groups])
    widths = bucket_widths(sizes)
    width_of = widths[np.searchsorted(widths, sizes)]
    padded_cols = np.append(pattern.cols, pattern.grid[1]).astype(np.int32)  # block nnz -> column k / b
    out = []
    for width in widths:
        members = [g for g, w in zip(groups, width_of, strict=True) if w == width]
        blocks = np.full((len(members), width), nnz, np.int32)
        for s, (_, start, size) in enumerate(members):
            blocks[s, :size] = np.arange(start, start + size)
        out.append(Bucket(np.array([r for r, _, _ in members], np.int32), blocks, padded_cols[blocks]))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class StaticPlan:
    """How `static_matmul` multiplies by matrices of `pattern`: the groups of each bucket (see the module doc)."""

    pattern: BlockPattern
    buckets: tuple[Bucket, ...]

    @cached_property
    def slot_of_block(self) -> np.ndarray:
        """Position of block j among the concatenated slots of all buckets, [nnz]: reads the blocks back in order."""
        slots = np.concatenate([bk.blocks.ravel() for bk in self.buckets]) if self.buckets else np.zeros(0, int)
        where = np.empty(self.pattern.nnz_blocks + 1, np.int64)
        where[slots] = np.arange(slots.size)  # padded slots all write index nnz, which is dropped
        return where[:-1]

    @cached_property
    def transpose(self) -> tuple[StaticPlan, np.ndarray]:
        """The plan of W^T and `order`, with W^T's blocks = values[order].transpose(0, 2, 1)."""
        p = self.pattern
        order = np.lexsort((p.rows, p.cols))  # W^T's blocks sorted by (its row, its column) = (col, row) of W
        transposed = BlockPattern((p.shape[1], p.shape[0]), p.block, p.cols, p.rows)
        return plan_static(transposed), order

    def __repr__(self) -> str:
        widths = [bk.width for bk in self.buckets]
        groups = sum(bk.rows.size for bk in self.buckets)
        return f"StaticPlan({self.pattern!r}, groups={groups}, widths={widths})"


def plan_static(pattern: BlockPattern) -> StaticPlan:
    """The plan of `pattern` (host-side; equal patterns share one plan, so jit caches hit)."""
    if not isinstance(pattern, BlockPattern):
        raise ValueError(f"plan_static needs a BlockPattern, got {type(pattern).__name__}")
    return _cached_plan(pattern)


@lru_cache(maxsize=16)  # a plan of a large scalar (b = 1) pattern holds tens of MB of indices
def _cached_plan(pattern: BlockPattern) -> StaticPlan:
    return StaticPlan(pattern, _buckets(pattern))


def check_operands(pattern: BlockPattern, values, x) -> None:
    """ValueError, before any work, unless values [nnz, b, b] and x [k, n] fit `pattern` and are floating point."""
    b, (m, k) = pattern.block, pattern.shape
    want = (pattern.nnz_blocks, b, b)
    if tuple(values.shape) != want:
        raise ValueError(f"values of shape {tuple(values.shape)} do not match {pattern}: need {want}")
    if x.ndim != 2 or x.shape[0] != k:
        raise ValueError(f"x of shape {tuple(x.shape)} cannot multiply a {m} x {k} matrix: need shape ({k}, n)")
    for name, a in (("values", values), ("x", x)):
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise ValueError(f"{name} must be floating point (float32, float16, bfloat16, ...), got {a.dtype}")


def _slabs(bucket: Bucket, values: jax.Array) -> jax.Array:
    """The groups' blocks side by side, [S, b, width * b]; padded slots are zero blocks."""
    blocks = values.at[bucket.blocks].get(mode="fill", fill_value=0)  # [S, width, b, b]
    S, width, b, _ = blocks.shape
    return blocks.transpose(0, 2, 1, 3).reshape(S, b, width * b)


def _gather_rows(xb: jax.Array, cols: jax.Array) -> jax.Array:
    """X[cols] as [len(cols) * b, n]; the padding column (one past the end) reads zeros."""
    return xb.at[cols].get(mode="fill", fill_value=0).reshape(-1, xb.shape[-1])


def _forward(plan: StaticPlan, values: jax.Array, x: jax.Array) -> jax.Array:
    """Y = W X in float32: Y[r] += S_g @ X[cols_g] for every group g of every bucket."""
    p = plan.pattern
    (R, C), b, n = p.grid, p.block, x.shape[1]
    xb = x.astype(jnp.float32).reshape(C, b, n)
    values = values.astype(jnp.float32)
    y = jnp.zeros((R, b, n), jnp.float32)
    for bucket in plan.buckets:
        slabs, rows, cols = _slabs(bucket, values), jnp.asarray(bucket.rows), jnp.asarray(bucket.cols)

        def group(s, y, slabs=slabs, rows=rows, cols=cols):
            return y.at[rows[s]].add(slabs[s] @ _gather_rows(xb, cols[s]))

        y = jax.lax.fori_loop(0, rows.shape[0], group, y)
    return y.reshape(p.shape[0], n)


def _block_grads(plan: StaticPlan, dy: jax.Array, x: jax.Array) -> jax.Array:
    """dV[j] = dY[r_j] X[c_j]^T, [nnz, b, b] in float32: the gradient of the loss w.r.t. the block values."""
    p = plan.pattern
    (R, C), b, n = p.grid, p.block, x.shape[1]
    xb, dyb = x.astype(jnp.float32).reshape(C, b, n), dy.astype(jnp.float32).reshape(R, b, n)
    per_slot = []
    for bucket in plan.buckets:

        def group(row_cols):
            row, cols = row_cols
            return dyb[row] @ _gather_rows(xb, cols).T  # [b, width * b]: the group's blocks side by side

        slabs = jax.lax.map(group, (jnp.asarray(bucket.rows), jnp.asarray(bucket.cols)))
        S = slabs.shape[0]
        per_slot.append(slabs.reshape(S, b, bucket.width, b).transpose(0, 2, 1, 3).reshape(-1, b, b))
    if not per_slot:
        return jnp.zeros((0, b, b), jnp.float32)
    return jnp.concatenate(per_slot)[plan.slot_of_block]


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _matmul(plan: StaticPlan, values: jax.Array, x: jax.Array) -> jax.Array:
    return _forward(plan, values, x).astype(jnp.result_type(values, x))


def _matmul_fwd(plan, values, x):
    return _matmul(plan, values, x), (values, x)


def _matmul_bwd(plan, residuals, dy):
    values, x = residuals
    transposed, order = plan.transpose
    dx = _forward(transposed, values[order].transpose(0, 2, 1), dy)  # W^T dY
    return _block_grads(plan, dy, x).astype(values.dtype), dx.astype(x.dtype)


_matmul.defvjp(_matmul_fwd, _matmul_bwd)
_jitted_matmul = jax.jit(_matmul, static_argnums=0)  # eager calls compile the loops once per plan and shapes


def static_matmul(plan: StaticPlan, values: jax.Array, x: jax.Array) -> jax.Array:
    """Y = W X for W = (plan.pattern, values [nnz, b, b]) and x [k, n]; differentiable in values and x.

    Accumulates in float32 and returns the result dtype of values and x (float16 in, float16 out).
    """
    if not isinstance(plan, StaticPlan):
        raise ValueError(f"static_matmul needs a StaticPlan (plan_static(pattern)), got {type(plan).__name__}")
    values, x = jnp.asarray(values), jnp.asarray(x)
    check_operands(plan.pattern, values, x)
    return _jitted_matmul(plan, values, x)


def block_sparse_matmul(w: BlockSparseMatrix, x: jax.Array) -> jax.Array:
    """W X for a BlockSparseMatrix (its pattern planned once and cached)."""
    return static_matmul(plan_static(w.pattern), w.values, x)

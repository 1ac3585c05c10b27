"""Block-sparse x dense matmul with a pattern that may change between calls without recompiling: Y = W X.

The pattern lives in JAX arrays of a fixed length, the capacity (PopSparse's dynamic sparsity has one too): block rows
and columns [capacity], block values [capacity, b, b] and the count `nnz` of valid leading entries. Entries at
positions >= nnz are padding: they gather zeros from X and scatter to no row (out-of-range indices with
`mode="fill"` / `mode="drop"`), so they add exactly 0 whatever X and the padded values hold. A new pattern of the same
capacity is a new value of the same shapes: the compiled function is reused.

    Y[r] = sum over valid i with rows[i] = r of  V[i] @ X[cols[i]]

computed `chunk` blocks at a time in a loop (one batched [chunk, b, b] @ [chunk, b, n] product, then a scatter-add into
the block rows), so the intermediates stay a few MB. The gradients (custom VJP, to keep no per-chunk residuals) are the
same loop: dX = W^T dY swaps rows and columns and transposes the blocks; dV[i] = dY[rows[i]] X[cols[i]]^T.

Overflow is an error: `dynamic_from_pattern` raises when the pattern has more blocks than the capacity, and a
hand-built `DynamicBlockSparse` whose nnz is outside [0, capacity] gives NaN under jit (ValueError when nnz is
concrete), never a silently truncated product.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from core.sparsity.formats import BlockSparseMatrix, check_density, check_shape

CHUNK_ELEMENTS = 2**20  # elements of X gathered per loop step (4 MB in float32)


@partial(jax.tree_util.register_dataclass, data_fields=["rows", "cols", "values", "nnz"], meta_fields=["shape"])
@dataclass(frozen=True)
class DynamicBlockSparse:
    """A block-sparse m x k matrix with room for `capacity` blocks; entries i < nnz are its blocks, the rest padding."""

    rows: jax.Array  # [capacity] int32 block row
    cols: jax.Array  # [capacity] int32 block column
    values: jax.Array  # [capacity, b, b]
    nnz: jax.Array  # [] int32
    shape: tuple[int, int]  # (m, k), static: part of the compiled function's signature

    @property
    def block(self) -> int:
        return self.values.shape[-1]

    @property
    def capacity(self) -> int:
        return self.rows.shape[0]

    @property
    def grid(self) -> tuple[int, int]:
        return self.shape[0] // self.block, self.shape[1] // self.block

    def to_dense(self) -> jax.Array:
        """The m x k matrix (in JAX; duplicate blocks add up)."""
        (R, C), b = self.grid, self.block
        rows, cols = _masked_indices(self)
        dense = jnp.zeros((R, C, b, b), self.values.dtype).at[rows, cols].add(self.values, mode="drop")
        return dense.transpose(0, 2, 1, 3).reshape(self.shape)


def capacity_for(shape: tuple[int, int], block: int, max_density: float, slack: float = 0.0) -> int:
    """Blocks needed to hold any pattern of density <= max_density, with `slack` (a fraction) to spare: the capacity is
    ceil(max_density * blocks * (1 + slack)), at least 1 and at most all the blocks."""
    m, k = check_shape(shape, block)
    check_density(max_density)
    if not slack >= 0:
        raise ValueError(f"slack must be >= 0 (a fraction of spare capacity), got {slack}")
    blocks = (m // block) * (k // block)
    return int(min(blocks, max(1, math.ceil(max_density * blocks * (1 + slack) - 1e-9))))


def dynamic_from_pattern(matrix: BlockSparseMatrix, capacity: int) -> DynamicBlockSparse:
    """`matrix` padded to `capacity` blocks (host-side); ValueError if it has more blocks than that."""
    p = matrix.pattern
    if not (isinstance(capacity, int | np.integer) and capacity >= 1):
        raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
    if p.nnz_blocks > capacity:
        raise ValueError(
            f"the pattern has nnz={p.nnz_blocks} blocks but the capacity is {capacity}: raise the capacity "
            f"(capacity_for(shape, block, max_density)) or prune the pattern to at most {capacity} blocks"
        )
    pad = capacity - p.nnz_blocks
    values = np.asarray(matrix.values)
    return DynamicBlockSparse(
        rows=jnp.asarray(np.pad(p.rows, (0, pad)), jnp.int32),
        cols=jnp.asarray(np.pad(p.cols, (0, pad)), jnp.int32),
        values=jnp.asarray(np.concatenate([values, np.zeros((pad, *values.shape[1:]), values.dtype)])),
        nnz=jnp.asarray(p.nnz_blocks, jnp.int32),
        shape=p.shape,
    )


def _check(w: DynamicBlockSparse, x) -> None:
    """ValueError, at trace time, unless w and x [k, n] are consistent floating-point operands."""
    cap, b = w.capacity, w.block
    check_shape(w.shape, b)
    for name, a, want in (("rows", w.rows, (cap,)), ("cols", w.cols, (cap,)), ("values", w.values, (cap, b, b))):
        if tuple(a.shape) != want:
            raise ValueError(f"{name} of shape {tuple(a.shape)} does not match capacity {cap}, block {b}: need {want}")
    if jnp.ndim(w.nnz) != 0:
        raise ValueError(f"nnz must be a scalar count, got shape {jnp.shape(w.nnz)}")
    if not isinstance(w.nnz, jax.core.Tracer) and not 0 <= int(w.nnz) <= cap:
        raise ValueError(f"nnz={int(w.nnz)} is outside [0, capacity={cap}]")
    m, k = w.shape
    if x.ndim != 2 or x.shape[0] != k:
        raise ValueError(f"x of shape {tuple(x.shape)} cannot multiply a {m} x {k} matrix: need shape ({k}, n)")
    for name, a in (("values", w.values), ("x", x)):
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise ValueError(f"{name} must be floating point (float32, float16, bfloat16, ...), got {a.dtype}")


def _masked_indices(w: DynamicBlockSparse) -> tuple[jax.Array, jax.Array]:
    """Block rows and columns with the padding moved one past the end of the grid (so it reads 0 and writes nowhere)."""
    valid = jnp.arange(w.capacity) < w.nnz
    R, C = w.grid
    return jnp.where(valid, w.rows, R), jnp.where(valid, w.cols, C)


def _chunk_size(n_blocks: int, b: int, n: int) -> int:
    return int(np.clip(CHUNK_ELEMENTS // max(1, b * n), 1, n_blocks))


def _pad_to(a: jax.Array, length: int, fill) -> jax.Array:
    return jnp.pad(a, [(0, length - a.shape[0])] + [(0, 0)] * (a.ndim - 1), constant_values=fill)


def _scatter_products(out_rows: int, rows, cols, blocks, x) -> jax.Array:
    """out[rows[i]] += blocks[i] @ x[cols[i]] over all i, in float32; out-of-range rows/cols add nothing."""
    b, n = blocks.shape[-1], x.shape[-1]
    xb = x.astype(jnp.float32).reshape(-1, b, n)
    chunk = _chunk_size(rows.shape[0], b, n)
    steps = -(-rows.shape[0] // chunk)
    rows, cols = _pad_to(rows, steps * chunk, out_rows), _pad_to(cols, steps * chunk, xb.shape[0])
    blocks = _pad_to(blocks.astype(jnp.float32), steps * chunk, 0)

    def step(s, y):
        take = partial(jax.lax.dynamic_slice_in_dim, start_index=s * chunk, slice_size=chunk)
        xg = xb.at[take(cols)].get(mode="fill", fill_value=0)  # [chunk, b, n]
        return y.at[take(rows)].add(jnp.einsum("sij,sjn->sin", take(blocks), xg), mode="drop")

    y = jax.lax.fori_loop(0, steps, step, jnp.zeros((out_rows, b, n), jnp.float32))
    return y.reshape(out_rows * b, n)


def _sampled_products(rows, cols, dy, x, b: int) -> jax.Array:
    """dV[i] = dy[rows[i]] @ x[cols[i]]^T, [len(rows), b, b] in float32; out-of-range indices give 0."""
    n, count = x.shape[-1], rows.shape[0]
    dyb, xb = dy.astype(jnp.float32).reshape(-1, b, n), x.astype(jnp.float32).reshape(-1, b, n)
    chunk = _chunk_size(count, b, n)
    steps = -(-count // chunk)
    rows, cols = _pad_to(rows, steps * chunk, dyb.shape[0]), _pad_to(cols, steps * chunk, xb.shape[0])

    def step(rc):
        r, c = rc
        dyg, xg = (a.at[i].get(mode="fill", fill_value=0) for a, i in ((dyb, r), (xb, c)))
        return jnp.einsum("sin,sjn->sij", dyg, xg)

    dv = jax.lax.map(step, (rows.reshape(steps, chunk), cols.reshape(steps, chunk)))
    return dv.reshape(steps * chunk, b, b)[:count]


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _matmul(out_rows: int, rows, cols, values, x):
    return _scatter_products(out_rows, rows, cols, values, x)


def _matmul_fwd(out_rows, rows, cols, values, x):
    return _matmul(out_rows, rows, cols, values, x), (rows, cols, values, x)


def _matmul_bwd(out_rows, residuals, dy):
    rows, cols, values, x = residuals
    b = values.shape[-1]
    dx = _scatter_products(x.shape[0] // b, cols, rows, values.transpose(0, 2, 1), dy)  # W^T dY
    dv = _sampled_products(rows, cols, dy, x, b)
    no_grad = partial(np.zeros, dtype=jax.dtypes.float0)  # the integer indices have no gradient
    return no_grad(rows.shape), no_grad(cols.shape), dv.astype(values.dtype), dx.astype(x.dtype)


_matmul.defvjp(_matmul_fwd, _matmul_bwd)
_jitted_matmul = jax.jit(_matmul, static_argnums=0)  # eager calls compile the loop once per shapes


def dynamic_matmul(w: DynamicBlockSparse, x: jax.Array, m: int | None = None) -> jax.Array:
    """Y = W X for x [k, n]; differentiable in w.values and x; recompiles only when shapes or capacity change.

    `m`, the rows of W, is optional (W knows its shape) and checked when given. Accumulates in float32 and returns
    the result dtype of the values and x.
    """
    x = jnp.asarray(x)
    if m is not None and m != w.shape[0]:
        raise ValueError(f"m={m} does not match the matrix's shape {w.shape}")
    _check(w, x)
    rows, cols = _masked_indices(w)
    y = _jitted_matmul(w.grid[0], rows, cols, w.values, x)
    overflow = (w.nnz < 0) | (w.nnz > w.capacity)  # only a hand-built w can get here: poison, don't truncate
    return jnp.where(overflow, jnp.nan, y).astype(jnp.result_type(w.values, x))

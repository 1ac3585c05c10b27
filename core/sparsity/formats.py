"""Block-sparse patterns and matrices: CSR of square blocks, as PopSparse stores its weights.

A `BlockPattern` says which b x b blocks of an m x k matrix are non-zero (block coordinates sorted by row, then
column); a `BlockSparseMatrix` adds the values of those blocks, [nnz_blocks, b, b]. Host-side numpy: the matmuls in
core.sparsity plan from a pattern before anything is traced.

    pattern = BlockPattern.random((4096, 4096), block=16, density=1 / 16, seed=0)
    w = BlockSparseMatrix.from_dense(dense, pattern)   # or BlockSparseMatrix.from_dense(dense, block=16)
    np.testing.assert_array_equal(w.to_dense(), dense * pattern.element_mask())
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK_SIZES = (1, 4, 8, 16)


def check_shape(shape: tuple[int, int], block: int) -> tuple[int, int]:
    if block not in BLOCK_SIZES:
        raise ValueError(f"block size {block} is not supported: choose one of {BLOCK_SIZES}")
    if len(shape) != 2 or any(int(s) <= 0 for s in shape):
        raise ValueError(f"a block-sparse matrix needs a 2-d shape of positive sizes, got {tuple(shape)}")
    m, k = (int(s) for s in shape)
    if m % block or k % block:
        raise ValueError(f"shape {(m, k)} is not divisible by the block size {block}")
    return m, k


def check_density(density: float) -> float:
    if not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density}")
    return float(density)


@dataclass(frozen=True, eq=False)
class BlockPattern:
    """The non-zero blocks of an m x k matrix of b x b blocks: block-row `rows[i]`, block-column `cols[i]`."""

    shape: tuple[int, int]
    block: int
    rows: np.ndarray  # [nnz] int32, sorted by (row, col), no duplicates
    cols: np.ndarray  # [nnz] int32

    def __post_init__(self) -> None:
        m, k = check_shape(self.shape, self.block)
        rows, cols = np.asarray(self.rows, np.int32).ravel(), np.asarray(self.cols, np.int32).ravel()
        if rows.shape != cols.shape:
            raise ValueError(f"rows and cols differ in length: {rows.size} and {cols.size}")
        R, C = m // self.block, k // self.block
        if rows.size and (rows.min() < 0 or rows.max() >= R or cols.min() < 0 or cols.max() >= C):
            raise ValueError(f"block coordinates outside the {R} x {C} block grid")
        key = rows.astype(np.int64) * C + cols
        order = np.argsort(key, kind="stable")
        if np.any(np.diff(key[order]) == 0):
            raise ValueError("a block appears twice in the pattern")
        object.__setattr__(self, "shape", (m, k))
        object.__setattr__(self, "rows", rows[order])
        object.__setattr__(self, "cols", cols[order])

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_mask(cls, mask: np.ndarray, block: int) -> BlockPattern:
        """From a boolean mask over the block grid, [m / b, k / b]."""
        mask = np.asarray(mask, bool)
        if mask.ndim != 2:
            raise ValueError(f"a block mask must be 2-d, got shape {mask.shape}")
        rows, cols = np.nonzero(mask)
        return cls((mask.shape[0] * block, mask.shape[1] * block), block, rows, cols)

    @classmethod
    def from_dense(cls, dense: np.ndarray, block: int) -> BlockPattern:
        """The blocks of `dense` [m, k] that hold a non-zero."""
        dense = np.asarray(dense)
        m, k = check_shape(dense.shape, block)
        blocks = dense.reshape(m // block, block, k // block, block)
        return cls.from_mask(np.any(blocks != 0, axis=(1, 3)), block)

    @classmethod
    def random(cls, shape: tuple[int, int], block: int, density: float, seed: int = 0) -> BlockPattern:
        """round(density * blocks) blocks drawn uniformly without replacement (at least one), as the paper's
        benchmark patterns."""
        m, k = check_shape(shape, block)
        check_density(density)
        R, C = m // block, k // block
        nnz = max(1, round(density * R * C))
        flat = np.random.default_rng(seed).choice(R * C, nnz, replace=False)
        return cls((m, k), block, flat // C, flat % C)

    # ------------------------------------------------------------------ properties
    @property
    def grid(self) -> tuple[int, int]:
        """The block grid, (m / b, k / b)."""
        return self.shape[0] // self.block, self.shape[1] // self.block

    @property
    def nnz_blocks(self) -> int:
        return int(self.rows.size)

    @property
    def density(self) -> float:
        return self.nnz_blocks / (self.grid[0] * self.grid[1])

    @property
    def indptr(self) -> np.ndarray:
        """CSR row pointer over block rows, [m / b + 1]."""
        return np.concatenate([[0], np.cumsum(np.bincount(self.rows, minlength=self.grid[0]))]).astype(np.int32)

    def block_mask(self) -> np.ndarray:
        mask = np.zeros(self.grid, bool)
        mask[self.rows, self.cols] = True
        return mask

    def element_mask(self) -> np.ndarray:
        b = self.block
        return np.repeat(np.repeat(self.block_mask(), b, 0), b, 1)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BlockPattern)
            and self.shape == other.shape
            and self.block == other.block
            and np.array_equal(self.rows, other.rows)
            and np.array_equal(self.cols, other.cols)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.block, self.rows.tobytes(), self.cols.tobytes()))

    def __repr__(self) -> str:
        return (
            f"BlockPattern(shape={self.shape}, block={self.block}, nnz_blocks={self.nnz_blocks}, "
            f"density={self.density:.4g})"
        )


@dataclass(frozen=True, eq=False)
class BlockSparseMatrix:
    """A `BlockPattern` and its block values [nnz, b, b] (numpy or JAX array, in the pattern's block order)."""

    pattern: BlockPattern
    values: np.ndarray

    def __post_init__(self) -> None:
        b = self.pattern.block
        want = (self.pattern.nnz_blocks, b, b)
        if tuple(self.values.shape) != want:
            raise ValueError(f"values of shape {tuple(self.values.shape)} do not match the pattern: need {want}")

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    @property
    def dtype(self):
        return self.values.dtype

    @classmethod
    def from_dense(
        cls, dense: np.ndarray, pattern: BlockPattern | None = None, *, block: int | None = None
    ) -> BlockSparseMatrix:
        """The blocks of `dense` [m, k] at `pattern` (values elsewhere are dropped), or at its non-zero blocks of
        size `block`."""
        if pattern is None:
            if block is None:
                raise ValueError("BlockSparseMatrix.from_dense needs a pattern or a block size")
            pattern = BlockPattern.from_dense(dense, block)
        if tuple(dense.shape) != pattern.shape:
            raise ValueError(f"dense matrix of shape {tuple(dense.shape)} does not match the pattern's {pattern.shape}")
        b = pattern.block
        m, k = pattern.shape
        blocks = np.asarray(dense).reshape(m // b, b, k // b, b).transpose(0, 2, 1, 3)
        return cls(pattern, blocks[pattern.rows, pattern.cols])

    @classmethod
    def random(
        cls, pattern: BlockPattern, seed: int = 0, dtype: str = "float32", std: float = 1.0
    ) -> BlockSparseMatrix:
        """Normally distributed values on `pattern`."""
        b = pattern.block
        values = np.random.default_rng(seed).normal(0, std, (pattern.nnz_blocks, b, b)).astype(dtype)
        return cls(pattern, values)

    def to_dense(self) -> np.ndarray:
        p, b = self.pattern, self.pattern.block
        values = np.asarray(self.values)
        out = np.zeros((*p.grid, b, b), values.dtype)
        out[p.rows, p.cols] = values
        return out.transpose(0, 2, 1, 3).reshape(p.shape)

    def to_scipy(self):
        """The same matrix as a scipy.sparse.bsr_array (the CPU peer of the benchmarks)."""
        from scipy.sparse import bsr_array

        p = self.pattern
        return bsr_array((np.asarray(self.values), p.cols, p.indptr), shape=p.shape)

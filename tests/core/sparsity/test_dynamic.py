"""The dynamic-pattern matmul: right answers against numpy and scipy, a pattern change that needs no recompilation,
padding that contributes exactly zero, gradients against dense autodiff, and explicit errors on overflow."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.sparsity import (
    BLOCK_SIZES,
    BlockPattern,
    BlockSparseMatrix,
    DynamicBlockSparse,
    capacity_for,
    dynamic_from_pattern,
    dynamic_matmul,
)


def reference(w: BlockSparseMatrix, x) -> np.ndarray:
    return w.to_dense().astype(np.float64) @ np.asarray(x, np.float64)


def random_x(k: int, n: int, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(k, n)).astype(dtype)


def with_values(w: DynamicBlockSparse, values) -> DynamicBlockSparse:
    return DynamicBlockSparse(w.rows, w.cols, values, w.nnz, w.shape)


@pytest.mark.parametrize("block", BLOCK_SIZES)
@pytest.mark.parametrize(("grid", "density"), [((4, 6), 1e-6), ((4, 6), 0.3), ((6, 3), 1.0)])
def test_matches_dense_and_scipy(block, grid, density):
    shape = (grid[0] * block, grid[1] * block)
    w = BlockSparseMatrix.random(BlockPattern.random(shape, block, density, seed=2), seed=3)
    dyn = dynamic_from_pattern(w, capacity_for(shape, block, density, slack=0.5))
    assert dyn.capacity >= w.pattern.nnz_blocks
    x = random_x(shape[1], 5)
    y = np.asarray(jax.jit(dynamic_matmul)(dyn, x))
    assert y.shape == (shape[0], 5) and y.dtype == np.float32
    np.testing.assert_allclose(y, reference(w, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, w.to_scipy() @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dyn.to_dense(), w.to_dense())


def test_a_new_pattern_gives_the_new_answer_without_recompiling():
    shape, block, density = (64, 96), 8, 0.25
    capacity = capacity_for(shape, block, density)
    traces = []

    @jax.jit
    def f(w, x):
        traces.append(1)
        return dynamic_matmul(w, x)

    x = random_x(96, 4)
    answers = []
    for seed, d in [(0, density), (1, density), (2, 0.1), (3, 1e-6)]:  # other blocks, fewer blocks, one block
        w = BlockSparseMatrix.random(BlockPattern.random(shape, block, d, seed=seed), seed=seed)
        y = np.asarray(f(dynamic_from_pattern(w, capacity), x))
        np.testing.assert_allclose(y, reference(w, x), rtol=1e-5, atol=1e-5)
        answers.append(y)
    assert len(traces) == 1 and f._cache_size() == 1
    assert not np.allclose(answers[0], answers[1])  # the pattern really changed


def test_empty_rows_and_empty_pattern():
    mask = np.random.default_rng(0).random((6, 5)) < 0.5
    mask[[1, 4]] = False
    w = BlockSparseMatrix.random(BlockPattern.from_mask(mask, 4), seed=1)
    x = random_x(20, 3)
    y = np.asarray(dynamic_matmul(dynamic_from_pattern(w, 30), x))
    np.testing.assert_allclose(y, reference(w, x), rtol=1e-5, atol=1e-5)
    assert not y[4:8].any() and not y[16:20].any()
    empty = BlockSparseMatrix(BlockPattern.from_mask(np.zeros((6, 5), bool), 4), np.zeros((0, 4, 4), np.float32))
    np.testing.assert_array_equal(dynamic_matmul(dynamic_from_pattern(empty, 3), x), np.zeros((24, 3)))


def test_padding_contributes_exactly_zero_whatever_it_holds():
    w = BlockSparseMatrix.random(BlockPattern.from_mask(np.array([[1, 0, 1], [0, 1, 0]], bool), 4), seed=0)
    dyn = dynamic_from_pattern(w, 6)
    nnz = w.pattern.nnz_blocks
    # garbage in the padded entries: valid indices pointing at a NaN column, huge and NaN values
    garbage = DynamicBlockSparse(
        dyn.rows.at[nnz:].set(1),
        dyn.cols.at[nnz:].set(1),
        dyn.values.at[nnz:].set(1e30).at[-1].set(jnp.nan),
        dyn.nnz,
        dyn.shape,
    )
    x = random_x(12, 2)
    x[4:8, 0] = np.nan  # block column 1: used by block row 1 only
    y = np.asarray(jax.jit(dynamic_matmul)(garbage, x))
    want = reference(w, np.nan_to_num(x, nan=0.0))
    np.testing.assert_allclose(y[:4], want[:4], rtol=1e-5, atol=1e-5)  # row 0 never touches column 1
    np.testing.assert_allclose(y[4:, 1], want[4:, 1], rtol=1e-5, atol=1e-5)
    # and the gradient w.r.t. x (the same loop with rows and columns swapped) ignores the garbage too
    x = np.nan_to_num(x, nan=0.0)
    dx = jax.grad(lambda x: dynamic_matmul(garbage, x).sum())(x)
    np.testing.assert_allclose(dx, w.to_dense().T @ np.ones((8, 2)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_gradients_match_dense_autodiff_and_padding_gets_none(block):
    m, k, n = 5 * block, 7 * block, 6
    w = BlockSparseMatrix.random(BlockPattern.random((m, k), block, 0.3, seed=5), seed=6)
    dyn = dynamic_from_pattern(w, w.pattern.nnz_blocks + 3)
    x, dy = random_x(k, n, 7), random_x(m, n, 8)
    mask = jnp.asarray(w.pattern.element_mask(), jnp.float32)

    def sparse(values, x):
        return jnp.sum(dy * dynamic_matmul(with_values(dyn, values), x))

    def dense(wd, x):
        return jnp.sum(dy * ((wd * mask) @ x))

    dv, dx = jax.jit(jax.grad(sparse, argnums=(0, 1)))(dyn.values, x)
    dw_dense, dx_dense = jax.grad(dense, argnums=(0, 1))(jnp.asarray(w.to_dense()), x)
    nnz = w.pattern.nnz_blocks
    want_dv = BlockSparseMatrix.from_dense(np.asarray(dw_dense), w.pattern).values
    np.testing.assert_allclose(dv[:nnz], want_dv, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dv[nnz:], 0)
    np.testing.assert_allclose(dx, dx_dense, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, w.to_dense().T @ dy, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_in_half_precision_out(dtype):
    w = BlockSparseMatrix.random(BlockPattern.random((64, 256), 16, 1.0, seed=0), seed=1)
    dyn = dynamic_from_pattern(w, w.pattern.nnz_blocks)
    dyn = with_values(dyn, dyn.values.astype(dtype))
    x = jnp.asarray(random_x(256, 8), dtype)
    y = dynamic_matmul(dyn, x)
    assert y.dtype == dtype
    want = np.asarray(dyn.to_dense(), np.float64) @ np.asarray(x, np.float64)
    ulp = np.abs(want) * float(jnp.finfo(dtype).eps)
    assert np.all(np.abs(np.asarray(y, np.float64) - want) <= ulp + 1e-3)  # one rounding of a float32 sum


def test_capacity_for():
    assert capacity_for((64, 64), 16, 1.0) == 16
    assert capacity_for((64, 64), 16, 0.25) == 4
    assert capacity_for((64, 64), 16, 0.25, slack=0.5) == 6
    assert capacity_for((64, 64), 16, 1.0, slack=1.0) == 16  # never more than all the blocks
    assert capacity_for((64, 64), 16, 1e-6) == 1
    with pytest.raises(ValueError, match=r"density must be in \(0, 1\], got 1.5"):
        capacity_for((64, 64), 16, 1.5)
    with pytest.raises(ValueError, match="slack must be >= 0"):
        capacity_for((64, 64), 16, 0.5, slack=-0.1)
    with pytest.raises(ValueError, match=r"shape \(60, 64\) is not divisible by the block size 16"):
        capacity_for((60, 64), 16, 0.5)


def test_overflow_is_an_explicit_error():
    w = BlockSparseMatrix.random(BlockPattern.random((64, 64), 8, 0.5, seed=0), seed=0)  # 32 blocks
    with pytest.raises(ValueError, match="nnz=32 blocks but the capacity is 31"):
        dynamic_from_pattern(w, 31)
    with pytest.raises(ValueError, match="capacity must be a positive integer"):
        dynamic_from_pattern(w, 0)
    dyn = dynamic_from_pattern(w, 32)
    hand_built = DynamicBlockSparse(dyn.rows, dyn.cols, dyn.values, jnp.asarray(33, jnp.int32), dyn.shape)
    x = random_x(64, 2)
    with pytest.raises(ValueError, match=r"nnz=33 is outside \[0, capacity=32\]"):
        dynamic_matmul(hand_built, x)
    assert np.isnan(np.asarray(jax.jit(dynamic_matmul)(hand_built, x))).all()  # traced nnz: poisoned, not truncated


def test_bad_inputs_raise_at_trace_time():
    w = BlockSparseMatrix.random(BlockPattern.random((32, 48), 8, 0.5, seed=0), seed=0)
    dyn = dynamic_from_pattern(w, 16)
    good_x = np.zeros((48, 2), np.float32)
    with pytest.raises(
        ValueError, match=r"x of shape \(32, 2\) cannot multiply a 32 x 48 matrix: need shape \(48, n\)"
    ):
        jax.jit(dynamic_matmul)(dyn, np.zeros((32, 2), np.float32))
    with pytest.raises(ValueError, match=r"values of shape \(15, 8, 8\) does not match capacity 16"):
        dynamic_matmul(with_values(dyn, dyn.values[:15]), good_x)
    with pytest.raises(ValueError, match="m=16 does not match the matrix's shape"):
        dynamic_matmul(dyn, good_x, m=16)
    with pytest.raises(ValueError, match="x must be floating point"):
        dynamic_matmul(dyn, good_x.astype(np.int32))
    np.testing.assert_allclose(dynamic_matmul(dyn, random_x(48, 2), m=32), reference(w, random_x(48, 2)), atol=1e-5)

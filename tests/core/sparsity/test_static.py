"""The static-pattern matmul Y = W X against independent references (numpy float64 on `to_dense()`, scipy
bsr_array), its gradients against dense autodiff of the masked W, half-precision inputs, the plan's grouping and
bucketing, and clear errors for bad input."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.sparsity import BLOCK_SIZES, BlockPattern, BlockSparseMatrix, block_sparse_matmul, plan_static, static_matmul
from core.sparsity.static import GROUP_COLUMNS, bucket_widths


def reference(w: BlockSparseMatrix, x: np.ndarray) -> np.ndarray:
    return w.to_dense().astype(np.float64) @ np.asarray(x, np.float64)


def random_x(k: int, n: int, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(k, n)).astype(dtype)


def jitted(plan):
    return jax.jit(lambda values, x: static_matmul(plan, values, x))


SHAPES = [(4, 6), (6, 3)]  # block grids: wide and tall


@pytest.mark.parametrize("block", BLOCK_SIZES)
@pytest.mark.parametrize("grid", SHAPES)
@pytest.mark.parametrize("density", [1e-6, 0.3, 1.0])  # a single block, sparse, full
def test_matches_dense_and_scipy(block, grid, density):
    shape = (grid[0] * block, grid[1] * block)
    w = BlockSparseMatrix.random(BlockPattern.random(shape, block, density, seed=2), seed=3)
    x = random_x(shape[1], 5)
    y = np.asarray(jitted(plan_static(w.pattern))(w.values, x))
    assert y.shape == (shape[0], 5) and y.dtype == np.float32
    np.testing.assert_allclose(y, reference(w, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, w.to_scipy() @ x, rtol=1e-5, atol=1e-5)


def test_larger_pattern_and_the_convenience_function():
    w = BlockSparseMatrix.random(BlockPattern.random((256, 512), 16, 1 / 16, seed=0), seed=1)
    x = random_x(512, 64)
    np.testing.assert_allclose(block_sparse_matmul(w, x), reference(w, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [1, 16])
def test_empty_rows_are_zero_and_an_empty_pattern_gives_zeros(block):
    mask = np.random.default_rng(0).random((6, 5)) < 0.5
    mask[[0, 3]] = False
    w = BlockSparseMatrix.random(BlockPattern.from_mask(mask, block), seed=1)
    x = random_x(5 * block, 4)
    y = np.asarray(block_sparse_matmul(w, x))
    np.testing.assert_allclose(y, reference(w, x), rtol=1e-5, atol=1e-5)
    assert not y[:block].any() and not y[3 * block : 4 * block].any()
    empty = BlockSparseMatrix(BlockPattern.from_mask(np.zeros((2, 5), bool), block), np.zeros((0, block, block)))
    np.testing.assert_array_equal(block_sparse_matmul(empty, x), np.zeros((2 * block, 4)))


@pytest.mark.parametrize("block", [1, 4, 16])
def test_long_and_skewed_rows_are_split_into_groups_and_bucketed(block):
    group = GROUP_COLUMNS // block
    cols = 2 * group + 3
    mask = np.zeros((5, cols), bool)
    mask[0] = True  # a full row: three groups
    mask[1, : group + 1] = True  # two groups
    mask[2, ::7] = True
    mask[4, 5] = True  # a single block
    w = BlockSparseMatrix.random(BlockPattern.from_mask(mask, block), seed=4)
    plan = plan_static(w.pattern)
    groups_per_row = np.bincount(np.concatenate([bk.rows for bk in plan.buckets]), minlength=5)
    np.testing.assert_array_equal(groups_per_row, [3, 2, 1, 0, 1])
    assert all(bk.width <= group for bk in plan.buckets)
    x = random_x(cols * block, 3)
    np.testing.assert_allclose(jitted(plan)(w.values, x), reference(w, x), rtol=1e-5, atol=1e-4)


def test_padded_slots_add_exact_zeros_even_against_nan():
    # rows of 1..10 blocks: 10 sizes in at most 8 buckets, so some groups are padded. The padding must read no
    # column of x: NaN in the block columns that no row uses (0 and 11) must not reach the product.
    mask = np.zeros((10, 12), bool)
    for i in range(10):
        mask[i, 1 : i + 2] = True
    w = BlockSparseMatrix.random(BlockPattern.from_mask(mask, 4), seed=0)
    plan = plan_static(w.pattern)
    assert any((bk.blocks == w.pattern.nnz_blocks).any() for bk in plan.buckets)  # there is padding
    x = random_x(48, 3)
    x[:4] = x[44:] = np.nan
    y = np.asarray(block_sparse_matmul(w, x))
    np.testing.assert_allclose(y, reference(w, np.nan_to_num(x, nan=0.0)), rtol=1e-5, atol=1e-5)
    # nor read any block's values: an infinite last block (of the last row) reaches the last row only
    values = w.values.copy()
    values[-1, 0, 0] = np.inf
    y = np.asarray(static_matmul(plan, values, np.nan_to_num(x, nan=0.0)))
    np.testing.assert_allclose(y[:-4], reference(w, np.nan_to_num(x, nan=0.0))[:-4], rtol=1e-5, atol=1e-5)


def test_bucket_widths_are_exact_for_few_sizes_and_optimal_otherwise():
    np.testing.assert_array_equal(bucket_widths(np.array([3, 1, 3, 2])), [1, 2, 3])
    np.testing.assert_array_equal(bucket_widths(np.array([5, 5])), [5])
    rng = np.random.default_rng(0)
    for _ in range(20):
        sizes = rng.integers(1, 30, size=40)
        limit = int(rng.integers(1, 5))
        widths = bucket_widths(sizes, limit)
        distinct = np.unique(sizes)
        assert len(widths) <= limit and widths[-1] == sizes.max() and set(widths) <= set(distinct)

        def padding(ws, sizes=sizes):
            ws = np.sort(np.asarray(ws))
            return int((ws[np.searchsorted(ws, sizes)] - sizes).sum())

        best = min(
            padding([*rest, distinct[-1]]) for t in range(limit) for rest in itertools.combinations(distinct[:-1], t)
        )
        assert padding(widths) == best


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
@pytest.mark.parametrize(("block", "k"), [(1, 2048), (16, 1024)])  # 8 and 4 groups per row
def test_half_precision_accumulates_in_float32(dtype, block, k):
    # float32 accumulation rounds once, to within an ulp of the exact sum; half-precision partial sums would not
    w32 = BlockSparseMatrix.random(BlockPattern.random((32, k), block, 1.0, seed=0), seed=1)
    values = jnp.asarray(w32.values, dtype)
    x = jnp.asarray(random_x(k, 16), dtype)
    y = jitted(plan_static(w32.pattern))(values, x)
    assert y.dtype == dtype
    w_rounded = BlockSparseMatrix(w32.pattern, np.asarray(values, np.float32))
    want = reference(w_rounded, np.asarray(x, np.float32))
    ulp = np.abs(want) * float(jnp.finfo(dtype).eps)
    assert np.all(np.abs(np.asarray(y, np.float64) - want) <= ulp + 1e-6)


def loss_and_dense_twin(pattern, dy):
    """loss(values, x) = sum(dY * W X) and the same loss of a dense W masked by the pattern."""
    plan, mask = plan_static(pattern), jnp.asarray(pattern.element_mask(), jnp.float32)

    def sparse(values, x):
        return jnp.sum(dy * static_matmul(plan, values, x))

    def dense(w, x):
        return jnp.sum(dy * ((w * mask) @ x))

    return sparse, dense


@pytest.mark.parametrize("block", BLOCK_SIZES)
@pytest.mark.parametrize("density", [0.3, 1.0])
def test_gradients_match_dense_autodiff(block, density):
    m, k, n = 5 * block, 7 * block, 6
    w = BlockSparseMatrix.random(BlockPattern.random((m, k), block, density, seed=5), seed=6)
    x, dy = random_x(k, n, 7), random_x(m, n, 8)
    sparse, dense = loss_and_dense_twin(w.pattern, dy)
    dv, dx = jax.jit(jax.grad(sparse, argnums=(0, 1)))(jnp.asarray(w.values), x)
    dw_dense, dx_dense = jax.grad(dense, argnums=(0, 1))(jnp.asarray(w.to_dense()), x)
    want_dv = BlockSparseMatrix.from_dense(np.asarray(dw_dense), w.pattern).values
    np.testing.assert_allclose(dv, want_dv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dx_dense, rtol=1e-5, atol=1e-5)
    # and against the closed forms: dV[j] = dY[r_j] X[c_j]^T, dX = W^T dY
    r, c = w.pattern.rows[0], w.pattern.cols[0]
    want0 = dy[r * block : (r + 1) * block] @ x[c * block : (c + 1) * block].T
    np.testing.assert_allclose(dv[0], want0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, w.to_dense().T @ dy, rtol=1e-5, atol=1e-5)


def test_gradients_in_half_precision_keep_their_dtypes():
    w = BlockSparseMatrix.random(BlockPattern.random((32, 48), 8, 0.5, seed=0), seed=1)
    values, x = jnp.asarray(w.values, jnp.float16), jnp.asarray(random_x(48, 4), jnp.float16)
    plan = plan_static(w.pattern)
    dv, dx = jax.grad(lambda v, x: static_matmul(plan, v, x).astype(jnp.float32).sum(), argnums=(0, 1))(values, x)
    assert dv.dtype == jnp.float16 and dx.dtype == jnp.float16
    np.testing.assert_allclose(np.asarray(dx, np.float32), w.to_dense().T @ np.ones((32, 4)), rtol=1e-2, atol=2e-2)


def test_plans_are_shared_between_equal_patterns_and_jit_does_not_retrace_for_new_values():
    p = BlockPattern.random((64, 64), 8, 0.25, seed=1)
    assert plan_static(p) is plan_static(BlockPattern.random((64, 64), 8, 0.25, seed=1))
    traces = []

    @jax.jit
    def f(values, x):
        traces.append(1)
        return static_matmul(plan_static(p), values, x)

    x = random_x(64, 3)
    for seed in range(3):
        w = BlockSparseMatrix.random(p, seed=seed)
        np.testing.assert_allclose(f(w.values, x), reference(w, x), rtol=1e-5, atol=1e-5)
    assert len(traces) == 1


def test_bad_inputs_raise_before_any_work():
    p = BlockPattern.random((32, 48), 8, 0.5, seed=0)  # 12 blocks of 8 x 8
    plan = plan_static(p)
    good_values, good_x = np.zeros((p.nnz_blocks, 8, 8), np.float32), np.zeros((48, 2), np.float32)
    with pytest.raises(ValueError, match=r"values of shape \(11, 8, 8\) do not match .*need \(12, 8, 8\)"):
        static_matmul(plan, good_values[:11], good_x)
    with pytest.raises(ValueError, match=r"values of shape \(12, 4, 4\)"):
        static_matmul(plan, np.zeros((12, 4, 4), np.float32), good_x)
    with pytest.raises(
        ValueError, match=r"x of shape \(32, 2\) cannot multiply a 32 x 48 matrix: need shape \(48, n\)"
    ):
        static_matmul(plan, good_values, np.zeros((32, 2), np.float32))
    with pytest.raises(ValueError, match=r"x of shape \(48,\)"):
        static_matmul(plan, good_values, np.zeros(48, np.float32))
    with pytest.raises(ValueError, match=r"x must be floating point.*got int32"):
        static_matmul(plan, good_values, np.zeros((48, 2), np.int32))
    with pytest.raises(ValueError, match="plan_static needs a BlockPattern, got ndarray"):
        plan_static(np.ones((4, 4)))
    with pytest.raises(
        ValueError, match=r"static_matmul needs a StaticPlan \(plan_static\(pattern\)\), got BlockPattern"
    ):
        static_matmul(p, good_values, good_x)
    with pytest.raises(ValueError, match="values of shape"):  # also at trace time, under jit
        jax.jit(lambda v: static_matmul(plan, v, good_x))(good_values[:3])

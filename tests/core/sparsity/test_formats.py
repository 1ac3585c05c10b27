"""Block patterns and block-sparse matrices: random patterns with exactly the asked number of distinct blocks,
deterministic per seed; mask, dense and scipy round-trips checked against independent numpy constructions; clear
errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import bsr_array

from core.sparsity import BLOCK_SIZES, BlockPattern, BlockSparseMatrix


def block_structured(shape, block, block_mask, seed=0):
    """A dense matrix whose b x b blocks are non-zero (normal, never exactly 0) exactly where `block_mask` is."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=shape).astype(np.float32)
    values[values == 0] = 1.0
    return values * np.kron(block_mask, np.ones((block, block), np.float32))


@pytest.mark.parametrize("block", BLOCK_SIZES)
@pytest.mark.parametrize("density", [1 / 16, 0.3, 1.0])
def test_random_pattern_has_exactly_the_asked_blocks(block, density):
    shape = (8 * block, 12 * block)
    p = BlockPattern.random(shape, block, density, seed=3)
    blocks = 8 * 12
    assert p.nnz_blocks == max(1, round(density * blocks))
    assert len({(int(r), int(c)) for r, c in zip(p.rows, p.cols, strict=True)}) == p.nnz_blocks  # distinct
    assert p.rows.min() >= 0 and p.rows.max() < 8 and p.cols.min() >= 0 and p.cols.max() < 12
    assert p.density == pytest.approx(p.nnz_blocks / blocks)
    assert p.block_mask().sum() == p.nnz_blocks
    assert p.element_mask().sum() == p.nnz_blocks * block * block


def test_random_pattern_single_block_when_density_is_tiny():
    p = BlockPattern.random((64, 64), 16, 1e-6, seed=0)
    assert p.nnz_blocks == 1


def test_random_pattern_is_deterministic_per_seed_and_differs_between_seeds():
    a, b = (BlockPattern.random((256, 256), 4, 0.1, seed=s) for s in (7, 7))
    assert a == b and hash(a) == hash(b)
    np.testing.assert_array_equal(a.rows, b.rows)
    c = BlockPattern.random((256, 256), 4, 0.1, seed=8)
    assert a != c


def test_blocks_are_sorted_by_row_then_column_and_indptr_counts_rows():
    rows, cols = np.array([2, 0, 2, 1, 0]), np.array([1, 3, 0, 2, 0])
    p = BlockPattern((12, 16), 4, rows, cols)
    assert list(zip(p.rows.tolist(), p.cols.tolist(), strict=True)) == [(0, 0), (0, 3), (1, 2), (2, 0), (2, 1)]
    np.testing.assert_array_equal(p.indptr, [0, 2, 3, 5])


@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_from_mask_round_trip(block):
    mask = np.random.default_rng(0).random((5, 7)) < 0.4
    mask[2] = False  # an empty block row
    p = BlockPattern.from_mask(mask, block)
    assert p.shape == (5 * block, 7 * block)
    np.testing.assert_array_equal(p.block_mask(), mask)
    np.testing.assert_array_equal(p.element_mask(), np.kron(mask, np.ones((block, block))).astype(bool))


@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_from_dense_round_trip(block):
    mask = np.random.default_rng(1).random((6, 4)) < 0.5
    dense = block_structured((6 * block, 4 * block), block, mask)
    w = BlockSparseMatrix.from_dense(dense, block=block)
    np.testing.assert_array_equal(w.pattern.block_mask(), mask)
    np.testing.assert_array_equal(w.to_dense(), dense)
    # each stored block is the dense sub-matrix at its coordinates
    for j, (r, c) in enumerate(zip(w.pattern.rows, w.pattern.cols, strict=True)):
        np.testing.assert_array_equal(w.values[j], dense[r * block : (r + 1) * block, c * block : (c + 1) * block])


def test_from_dense_on_a_pattern_drops_values_outside_it():
    p = BlockPattern.random((32, 48), 8, 0.4, seed=2)
    dense = np.random.default_rng(2).normal(size=(32, 48)).astype(np.float32)
    w = BlockSparseMatrix.from_dense(dense, p)
    np.testing.assert_array_equal(w.to_dense(), dense * p.element_mask())


@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_to_scipy_matches_dense_and_multiplies_like_it(block):
    p = BlockPattern.random((10 * block, 6 * block), block, 0.3, seed=4)
    w = BlockSparseMatrix.random(p, seed=5)
    sp = w.to_scipy()
    assert isinstance(sp, bsr_array) and sp.blocksize == (block, block)
    np.testing.assert_array_equal(sp.toarray(), w.to_dense())
    x = np.random.default_rng(6).normal(size=(6 * block, 3))
    np.testing.assert_allclose(sp @ x, w.to_dense().astype(np.float64) @ x, rtol=1e-6, atol=1e-6)


def test_empty_pattern():
    p = BlockPattern.from_mask(np.zeros((3, 2), bool), 4)
    w = BlockSparseMatrix(p, np.zeros((0, 4, 4), np.float32))
    assert p.nnz_blocks == 0 and p.density == 0
    np.testing.assert_array_equal(w.to_dense(), np.zeros((12, 8)))
    np.testing.assert_array_equal(w.to_scipy().toarray(), np.zeros((12, 8)))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: BlockPattern.random((64, 64), 3, 0.5), r"block size 3 .*choose one of \(1, 4, 8, 16\)"),
        (lambda: BlockPattern.random((60, 64), 8, 0.5), r"shape \(60, 64\) is not divisible by the block size 8"),
        (lambda: BlockPattern.random((64, 64), 8, 0.0), r"density must be in \(0, 1\], got 0.0"),
        (lambda: BlockPattern.random((64, 64), 8, 1.5), r"density must be in \(0, 1\], got 1.5"),
        (lambda: BlockPattern.random((64, 64), 8, -0.1), r"density must be in \(0, 1\]"),
        (lambda: BlockPattern((16, 16), 4, [0, 0], [1, 1]), "a block appears twice"),
        (lambda: BlockPattern((16, 16), 4, [0], [4]), r"outside the 4 x 4 block grid"),
        (lambda: BlockPattern((16, 16), 4, [0, 1], [1]), "differ in length"),
        (lambda: BlockPattern.from_mask(np.ones(4, bool), 4), "must be 2-d"),
    ],
)
def test_bad_patterns_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_values_that_do_not_match_the_pattern_raise():
    p = BlockPattern.random((32, 32), 8, 0.5, seed=0)
    with pytest.raises(ValueError, match=r"need \(8, 8, 8\)"):
        BlockSparseMatrix(p, np.zeros((7, 8, 8), np.float32))
    with pytest.raises(ValueError, match="does not match the pattern"):
        BlockSparseMatrix.from_dense(np.zeros((32, 16)), p)

"""Transfer counted from traced programs (papers.sparq.transfer) against the paper's formulas written out here, and
the decode-speed operating point."""

import jax
import jax.numpy as jnp
import pytest

from core.nn.attention import dense_attention, sparq_attention
from papers.sparq.speed import _sparq_with_transposed_k, kernel_elements, operating_point
from papers.sparq.transfer import elements_read, elements_written


@pytest.mark.parametrize(
    ("S", "d", "r", "k"),
    [(16384, 128, 32, 128), (512, 128, 16, 32), (2048, 128, 16, 128), (16384, 128, 16, 1024), (300, 64, 3, 40)],
)
def test_timed_kernels_move_the_papers_transfer(S, d, r, k):
    """What was the `transfer-formula` claim (ledger.py, 2026-11-25): the timed kernels at the default operating point
    (S=16384, r=32, k=128), the smoke scale's and others."""
    dense, sparq = kernel_elements(S, d, r, k)
    assert dense == (2 + 2 * S) * d  # q, the output, all of K and V
    assert sparq == (2 + 2 * k) * d + d + S * r + 2 * d  # q, out, K[i2], V[i2], V mean, K[:, i1], the 2d writes


def test_counts_follow_each_argument():
    S, d, r, k = 512, 32, 4, 64
    q, K, Kt, m = jnp.zeros((1, d)), jnp.zeros((1, S, d)), jnp.zeros((1, d, S)), jnp.zeros((1, d))
    reads = elements_read(lambda q, K, Kt, V, m: _sparq_with_transposed_k(q, K, Kt, V, m, r, k), q, K, Kt, K, m)
    assert reads == [d, k * d, r * S, k * d, d]  # q; K[i2]; r rows of the transposed K (a loop of r slices); V[i2]
    # the reference implementation reduces over every row of V for its mean: the count sees S d, not d
    reads = elements_read(lambda q, K, V: sparq_attention(q, K, V, r=r, k=k)[0], q, K, K)
    assert reads == [d, S * r + k * d, S * d]
    assert elements_read(lambda q, K, V: dense_attention(q, K, V)[0], q, K, K) == [d, S * d, S * d]
    assert elements_written(lambda q, K, V: dense_attention(q, K, V)[0], q, K, K) == d


def test_loops_multiply_and_unknown_trip_counts_are_refused():
    x = jnp.zeros((10, 7))

    def rows(x, n):
        return jax.lax.fori_loop(0, n, lambda i, acc: acc + jax.lax.dynamic_slice(x, (i, 0), (1, 7))[0], jnp.zeros(7))

    assert elements_read(lambda x: rows(x, 3), x) == [3 * 7]
    assert elements_read(lambda x: x[2:4].sum() + x[5, 1], x) == [2 * 7 + 1]
    assert elements_read(lambda x: x.T.reshape(-1).sum() + x[0, 0], x) == [70]  # a full read covers the gather
    with pytest.raises(ValueError, match="while loop"):
        elements_read(lambda x, n: rows(x, n), x, jnp.int32(3))


def test_operating_point_follows_the_quality_sweeps_rule():
    # k = 128 (the paper's), r from the budget: 1/8 at S=2048, d=128 is r = 16 (the paper's example); at S=16384
    # the paper's r = 32 moves 0.133 of dense, and 1/8 is r = 30
    assert operating_point(1 / 8, 2048) == (16, 128)
    assert operating_point(1 / 8, 16384) == (30, 128)
    dense, sparq = kernel_elements(16384, 128, 30, 128)
    assert sparq / dense == pytest.approx(1 / 8, rel=0.01)
    with pytest.raises(ValueError, match=r"cannot reach 0\.01"):
        operating_point(0.01, 2048)

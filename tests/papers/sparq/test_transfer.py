"""The timed decode-step kernels' transfer counted from their traced programs (core.nn.transfer) against the paper's
formulas written out here, and the decode-speed operating point."""

import jax.numpy as jnp
import pytest

from core.nn.transfer import elements_read
from papers.sparq.speed import kernel_elements, operating_point, timed_kernels


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


def test_the_timed_sparq_kernel_reads_each_argument_as_the_paper_counts():
    S, d, r, k = 512, 32, 4, 64
    q, K, K_t, v_mean = jnp.zeros((1, d)), jnp.zeros((1, S, d)), jnp.zeros((1, d, S)), jnp.zeros((1, d))
    _, sparq = timed_kernels(r, k)
    # q; K[i2]; r rows of the transposed K (a loop of r slices); V[i2]; the mean of V
    assert elements_read(sparq, q, K, K_t, K, v_mean) == [d, k * d, r * S, k * d, d]


def test_operating_point_follows_the_quality_sweeps_rule():
    # k = 128 (the paper's), r from the budget: 1/8 at S=2048, d=128 is r = 16 (the paper's example); at S=16384
    # the paper's r = 32 moves 0.133 of dense, and 1/8 is r = 30
    assert operating_point(1 / 8, 2048) == (16, 128)
    assert operating_point(1 / 8, 16384) == (30, 128)
    dense, sparq = kernel_elements(16384, 128, 30, 128)
    assert sparq / dense == pytest.approx(1 / 8, rel=0.01)
    with pytest.raises(ValueError, match=r"cannot reach 0\.01"):
        operating_point(0.01, 2048)

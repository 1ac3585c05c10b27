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


def test_the_timed_kernels_on_the_simulated_ipu_compute_jaxs_values_and_stream_what_they_read():
    """Both timed kernels lowered onto a small simulated IPU with the cache in streaming memory, as
    `simulate_decode_steps` lowers them: their outputs equal JAX's on this CPU (whose SparQ reads K_t's rows in a
    loop; the IPU's gathers them) to float16 rounding, and the bytes read from streaming memory are the paper's
    count of what each reads, written out here: dense K and V whole, SparQ r rows of K_t, k rows of K and of V and the
    mean of V a head."""
    import jax
    import numpy as np

    from ipu_model import get_device
    from ipu_model.lowering import lower

    H, S, d, r, k = 2, 256, 32, 8, 16
    rng = np.random.default_rng(0)
    q, K, V = (rng.standard_normal(s).astype(np.float16) for s in ((H, d), (H, S, d), (H, S, d)))
    K_t, v_mean = np.swapaxes(K, -1, -2).copy(), V.astype(np.float32).mean(1).astype(np.float16)
    dense, sparq = timed_kernels(r, k)
    device = get_device("bow", tiles=16)
    for fn, args, remote, elements in (
        (dense, (q, K, V), (1, 2), 2 * H * S * d),
        (sparq, (q, K, K_t, V, v_mean), (1, 2, 3, 4), H * (r * S + 2 * k * d + d)),
    ):
        low = lower(fn, *args, device=device, remote=remote)
        want = np.asarray(jax.jit(fn)(*args), np.float32)
        np.testing.assert_allclose(np.asarray(low.run(*args), np.float32), want, atol=2e-3 * np.abs(want).max())
        assert low.streamed_bytes == 2 * elements  # float16

"""core.nn.transfer: elements read and written counted from traced programs, per argument, through views, gathers,
full reads and loops."""

import jax
import jax.numpy as jnp
import pytest

from core.nn.attention import dense_attention, sparq_attention
from core.nn.transfer import elements_moved, elements_read, elements_written


def test_counts_follow_each_argument():
    S, d, r, k = 512, 32, 4, 64
    q, K, K_t, v_mean = jnp.zeros((1, d)), jnp.zeros((1, S, d)), jnp.zeros((1, d, S)), jnp.zeros((1, d))

    def kept(q, K, K_t, V, v_mean):  # SparQ given K transposed and the mean of V
        return sparq_attention(q, K, V, r=r, k=k, K_t=K_t, v_mean=v_mean)[0]

    assert elements_read(kept, q, K, K_t, K, v_mean) == [d, k * d, r * S, k * d, d]  # r rows of K_t: r slices
    # without them SparQ gathers K[:, i1] and reduces over every row of V for its mean: the count sees S d, not d
    assert elements_read(lambda q, K, V: sparq_attention(q, K, V, r=r, k=k)[0], q, K, K) == [d, S * r + k * d, S * d]
    assert elements_read(lambda q, K, V: dense_attention(q, K, V)[0], q, K, K) == [d, S * d, S * d]
    assert elements_written(lambda q, K, V: dense_attention(q, K, V)[0], q, K, K) == d
    assert elements_moved(lambda q, K, V: dense_attention(q, K, V)[0], q, K, K) == (2 + 2 * S) * d


def test_loops_multiply_and_unknown_trip_counts_are_refused():
    x = jnp.zeros((10, 7))

    def rows(x, n):
        return jax.lax.fori_loop(0, n, lambda i, acc: acc + jax.lax.dynamic_slice(x, (i, 0), (1, 7))[0], jnp.zeros(7))

    assert elements_read(lambda x: rows(x, 3), x) == [3 * 7]
    assert elements_read(lambda x: x[2:4].sum() + x[5, 1], x) == [2 * 7 + 1]
    assert elements_read(lambda x: x.T.reshape(-1).sum() + x[0, 0], x) == [70]  # a full read covers the gather
    with pytest.raises(ValueError, match="while loop"):
        elements_read(lambda x, n: rows(x, n), x, jnp.int32(3))


def test_a_platform_choice_counts_once_and_its_branches_must_agree():
    x = jnp.zeros((10, 7))
    same = lambda x: jax.lax.platform_dependent(x, cpu=lambda a: a[1:3].sum(), default=lambda a: (a[4] + a[6]).sum())
    assert elements_read(same, x) == [2 * 7]
    differ = lambda x: jax.lax.platform_dependent(x, cpu=lambda a: a[1].sum(), default=lambda a: a.sum())
    with pytest.raises(ValueError, match="branches of a platform_dependent read differently"):
        elements_read(differ, x)

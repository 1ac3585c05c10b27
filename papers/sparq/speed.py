"""Decode-step attention time, dense vs SparQ, on whatever JAX runs on (CPU here; a GPU when present)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from core.bench import time_call
from papers.sparq.attention import dense_attention, sparq_attention


def decode_step_times(S: int = 16384, d: int = 128, rows: int = 32, r: int = 32, k: int = 256, seed: int = 0):
    """Seconds per decode step of dense and SparQ attention over `rows` = batch x heads caches of S x d, float32.
    Returns (dense seconds, sparq seconds, sparq transfer / dense transfer)."""
    key = jax.random.split(jax.random.key(seed), 3)
    q = jax.random.normal(key[0], (rows, d))
    K = jax.random.normal(key[1], (rows, S, d))
    V = jax.random.normal(key[2], (rows, S, d))
    # SparQ reads K[:, i1] from a second, transposed copy of K ([..., d, S]), as the paper stores it
    Kt = jnp.swapaxes(K, -1, -2)
    v_mean = jnp.mean(V, -2)  # kept up to date incrementally while decoding (d reads and writes per step)
    dense = jax.jit(lambda q, K, V: dense_attention(q, K, V)[0])
    sparq = jax.jit(lambda q, K, Kt, V, m: _sparq_with_transposed_k(q, K, Kt, V, m, r, k))
    t_dense = time_call(lambda: dense(q, K, V), repeat=5)
    t_sparq = time_call(lambda: sparq(q, K, Kt, V, v_mean), repeat=5)
    _, transfer_dense = dense_attention(q[:1], K[:1], V[:1])
    _, transfer_sparq = sparq_attention(q[:1], K[:1], V[:1], r=r, k=k, local_k=k // 4)
    return t_dense, t_sparq, transfer_sparq / transfer_dense


def _sparq_with_transposed_k(q, K, Kt, V, v_mean, r: int, k: int):
    """sparq_attention's arithmetic (no cache mask; the last k/4 positions forced in), reading K[:, i1] as rows of
    the transposed copy (contiguous), the layout that makes step 2 cost S r reads instead of S d."""
    import math

    d, S = q.shape[-1], K.shape[-2]
    absq = jnp.abs(q)
    i1 = jax.lax.top_k(absq, r)[1]
    q1 = jnp.take_along_axis(q, i1, -1)
    rows_of = jax.vmap(lambda x, i: x[i])
    approx = _partial_scores(Kt, i1, q1)  # q[i1] . K[:, i1]^T, reading r rows of S per head
    temperature = jnp.sqrt(d * jnp.sum(jnp.abs(q1), -1) / jnp.sum(absq, -1))
    s_hat = jax.nn.softmax(approx / temperature[:, None], -1)
    local = k // 4
    score = jnp.where(jnp.arange(S) >= S - local, 2.0, s_hat)
    i2 = jax.lax.top_k(score, k)[1]
    alpha = jnp.sum(jnp.take_along_axis(s_hat, i2, -1), -1)
    K2, V2 = rows_of(K, i2), rows_of(V, i2)
    y = jnp.einsum("nk,nkd->nd", jax.nn.softmax(jnp.einsum("nkd,nd->nk", K2, q) / math.sqrt(d), -1), V2)
    return alpha[:, None] * y + (1 - alpha[:, None]) * v_mean


def _partial_scores(Kt: jax.Array, i1: jax.Array, q1: jax.Array) -> jax.Array:
    """sum_j q1[n, j] * Kt[n, i1[n, j], :] for every row n: [rows, S].

    A loop of row slices accumulated in place: XLA's CPU gather moves [rows, r, S] element by element (several
    times slower than reading the rows), so the r rows of each head are sliced and added one after another."""
    rows, d, S = Kt.shape
    r = i1.shape[-1]
    flat = Kt.reshape(rows * d, S)
    idx = (jnp.arange(rows)[:, None] * d + i1).reshape(-1)
    weights = q1.reshape(-1)

    def body(j, acc):
        row = jax.lax.dynamic_slice(flat, (idx[j], 0), (1, S))[0]
        return acc.at[j // r].add(row * weights[j])

    return jax.lax.fori_loop(0, rows * r, body, jnp.zeros((rows, S), Kt.dtype))

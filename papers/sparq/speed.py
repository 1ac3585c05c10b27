"""Decode-step attention time, dense vs SparQ, on whatever JAX runs on (CPU here; a GPU when present), at a given
fraction of the dense transfer, with the transfer of both kernels counted from their traced programs. The rounds are
returned as a `DecodeTiming` (papers/sparq/results.py); the speed-up's interval over them is decided from the stored
rounds (papers/sparq/claims.py, `speedup`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from core.bench import time_rounds
from core.nn.attention import dense_attention
from papers.sparq.results import DecodeTiming
from papers.sparq.tasks import make_method
from papers.sparq.transfer import elements_read, elements_written


def operating_point(ratio: float, S: int, d: int = 128, k: int = 128) -> tuple[int, int]:
    """(r, k) at `ratio` of the dense transfer (one query head per KV head, step 5 kept), by the same rule as the
    quality sweep (`tasks.make_method`: k fixed, r from the budget)."""
    m = make_method("sparq", ratio, S, d, k=k)
    if m is None:
        raise ValueError(f"operating_point: SparQ with k={k} cannot reach {ratio} of the dense transfer at S={S}")
    return m.r, m.k


def kernel_elements(S: int, d: int, r: int, k: int) -> tuple[int, int]:
    """(dense, SparQ) elements per head per step of the timed kernels, counted from their traced programs: what each
    reads (q, the caches, SparQ's mean of V) and writes (the output). SparQ's step also writes the new key into
    the transposed copy of K and updates the mean of V (2d, as the paper's formula counts them); the cache update
    does that outside the timed kernel, so those 2d are added here, the one term not counted from a program."""
    q, K, Kt, m = jnp.zeros((1, d)), jnp.zeros((1, S, d)), jnp.zeros((1, d, S)), jnp.zeros((1, d))

    def dense(q, K, V):
        return dense_attention(q, K, V)[0]

    def sparq(q, K, Kt, V, m):
        return _sparq_with_transposed_k(q, K, Kt, V, m, r, k)

    n_dense = sum(elements_read(dense, q, K, K)) + elements_written(dense, q, K, K)
    n_sparq = sum(elements_read(sparq, q, K, Kt, K, m)) + elements_written(sparq, q, K, Kt, K, m) + 2 * d
    return n_dense, n_sparq


def decode_step_times(
    S: int = 16384, d: int = 128, rows: int = 32, r: int = 16, k: int = 1024, *, repeat: int = 7, seed: int = 0
) -> DecodeTiming:
    """Dense and SparQ decode-step attention over `rows` = batch x heads caches of S x d, float32, both warmed and
    timed in the same interleaved rounds (`core.bench.time_rounds`)."""
    key = jax.random.split(jax.random.key(seed), 3)
    q = jax.random.normal(key[0], (rows, d))
    K = jax.random.normal(key[1], (rows, S, d))
    V = jax.random.normal(key[2], (rows, S, d))
    # SparQ reads K[:, i1] from a second, transposed copy of K ([..., d, S]), as the paper stores it
    Kt = jnp.swapaxes(K, -1, -2)
    v_mean = jnp.mean(V, -2)  # kept up to date incrementally while decoding (d reads and writes per step)
    dense = jax.jit(lambda q, K, V: dense_attention(q, K, V)[0])
    sparq = jax.jit(lambda q, K, Kt, V, m: _sparq_with_transposed_k(q, K, Kt, V, m, r, k))
    # step 3 alone, to tell a compute-bound selection from the memory-bound reads the theory counts
    scores = jax.random.normal(key[0], (rows, S))
    select = jax.jit(lambda s: jax.lax.top_k(s, k)[1])
    rounds = time_rounds(
        {
            "dense": lambda: dense(q, K, V),
            "sparq": lambda: sparq(q, K, Kt, V, v_mean),
            "select": lambda: select(scores),
        },
        repeat=repeat,
        min_seconds=0.2,
    )
    n_dense, n_sparq = kernel_elements(S, d, r, k)
    return DecodeTiming(
        S, d, rows, r, k, tuple(rounds["dense"]), tuple(rounds["sparq"]), n_dense, n_sparq, tuple(rounds["select"])
    )


def _sparq_with_transposed_k(q, K, Kt, V, v_mean, r: int, k: int):
    """sparq_attention's arithmetic (no cache mask; the last k/4 positions forced in), reading K[:, i1] as rows of
    the transposed copy (contiguous), the layout that makes step 2 cost S r reads instead of S d."""
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

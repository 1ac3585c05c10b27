"""core.nn.attention.dense_attention_gqa against a numpy reference written here (softmax attention of each query head
over its group's KV head, masked by length), and the relations that hold by the definitions: one query head per KV
head is dense_attention, and every GQA baseline given the whole cache is dense_attention_gqa. (SparQ and the
baselines themselves are tested step by step in tests/papers/sparq/test_attention.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn.attention import (
    dense_attention,
    dense_attention_gqa,
    local_attention_gqa,
    quest_attention_gqa,
    sparq_attention_gqa,
    streaming_attention_gqa,
)
from core.nn.decode_methods import Dense

B, HKV, G, S, D = 2, 3, 4, 40, 8
LENGTHS = np.array([[40, 17, 1], [9, 33, 40]])  # per KV head: a full cache, one position, lengths off the pages


def reference(q: np.ndarray, K: np.ndarray, V: np.ndarray, length: np.ndarray) -> np.ndarray:
    """float64: for each row b, KV head h and query head j of its group, softmax(q K[:n]^T / sqrt(d)) V[:n] with
    n = length[b, h]."""
    out = np.zeros(q.shape)
    for b, h, j in np.ndindex(*q.shape[:3]):
        n = int(length[b, h])
        logits = K[b, h, :n] @ q[b, h, j] / np.sqrt(q.shape[-1])
        p = np.exp(logits - logits.max())
        out[b, h, j] = (p / p.sum()) @ V[b, h, :n]
    return out


@pytest.fixture(scope="module")
def data():
    """float32 values (held in float64 for the reference)."""
    rng = np.random.default_rng(59)
    q = rng.standard_normal((B, HKV, G, D)).astype(np.float32)
    K, V = (rng.standard_normal((B, HKV, S, D)).astype(np.float32) for _ in range(2))
    return q, K, V


def test_dense_gqa_matches_the_reference(data):
    q, K, V = data
    out, transfer = dense_attention_gqa(q, K, V, jnp.asarray(LENGTHS))
    assert out.shape == (B, HKV, G, D)
    assert transfer == (2 * G + 2 * S) * D  # per KV head: q and the outputs of the group, K and V once
    want = reference(*(x.astype(np.float64) for x in data), LENGTHS)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)
    # no length: the whole cache; a scalar length: the same for every KV head
    full, _ = dense_attention_gqa(q, K, V)
    np.testing.assert_allclose(np.asarray(full), reference(q, K, V, np.full((B, HKV), S)), rtol=1e-5, atol=1e-6)
    short, _ = dense_attention_gqa(q, K, V, 9)
    np.testing.assert_allclose(np.asarray(short), reference(q, K, V, np.full((B, HKV), 9)), rtol=1e-5, atol=1e-6)
    # under jit, and vmapped over the rows
    jitted = jax.jit(lambda q, K, V, n: dense_attention_gqa(q, K, V, n)[0])(q, K, V, LENGTHS)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5, atol=1e-6)
    mapped = jax.vmap(lambda q, K, V, n: dense_attention_gqa(q, K, V, n)[0])(q, K, V, LENGTHS)
    np.testing.assert_allclose(np.asarray(mapped), want, rtol=1e-5, atol=1e-6)


def test_one_query_head_per_kv_head_is_dense_attention(data):
    q, K, V = data
    out, transfer = dense_attention_gqa(q[..., :1, :], K, V, LENGTHS)
    mha, mha_transfer = dense_attention(q[..., 0, :], K, V, LENGTHS)
    assert transfer == mha_transfer == (2 + 2 * S) * D
    np.testing.assert_allclose(np.asarray(out[..., 0, :]), np.asarray(mha), rtol=1e-6, atol=1e-7)


def test_the_decode_step_is_dense_gqa(data):
    """core.nn.decoding's default step, `Dense().step` (query heads [B, H, d], head h reading KV head h // g), on the
    same cache."""
    q, K, V = data
    length = 23  # the decode step's one length for every row and head
    out, transfer, _ = Dense().step(0, jnp.asarray(q).reshape(B, HKV * G, D), K, V, length, None)
    ours, our_transfer = dense_attention_gqa(q, K, V, length)
    assert transfer == our_transfer
    np.testing.assert_allclose(np.asarray(out).reshape(q.shape), np.asarray(ours), rtol=1e-6, atol=1e-7)


def test_every_baseline_given_the_whole_cache_is_dense(data):
    """By the definitions: the last S positions, sinks plus a window of S, every page, or SparQ with every component
    (the exact scores) and every position (alpha = 1, so step 5 leaves y) all attend over every valid position."""
    q, K, V = data
    dense, _ = dense_attention_gqa(q, K, V, LENGTHS)
    n = jnp.asarray(LENGTHS)
    whole = {
        "local": local_attention_gqa(q, K, V, k=S, length=n),
        "streaming": streaming_attention_gqa(q, K, V, k=S, sinks=4, length=n),
        "quest": quest_attention_gqa(q, K, V, k=S, page=8, length=n),
        "sparq": sparq_attention_gqa(q, K, V, r=D, k=S, length=n, reallocate=True),
        "sparq without step 5": sparq_attention_gqa(q, K, V, r=D, k=S, length=n, reallocate=False),
    }
    for name, (out, _) in whole.items():
        np.testing.assert_allclose(np.asarray(out), np.asarray(dense), rtol=1e-5, atol=1e-6, err_msg=name)
    # and a window shorter than a KV head's valid cache is not dense (the relation above is not vacuous)
    local, _ = local_attention_gqa(q, K, V, k=8, length=n)
    assert not np.allclose(np.asarray(local[0, 0]), np.asarray(dense[0, 0]), atol=1e-3)


def test_bad_shapes_are_refused_with_the_shapes(data):
    q, K, V = data
    with pytest.raises(ValueError, match=r"dense_attention_gqa: q must be \[..., g, d\] and K, V \[..., S, d\]"):
        dense_attention_gqa(q[..., 0, :], K, V)  # q without its group axis
    with pytest.raises(ValueError, match=r"got q \(2, 3, 4, 8\), K \(2, 3, 40, 8\), V \(2, 3, 39, 8\)"):
        dense_attention_gqa(q, K, V[..., 1:, :])
    with pytest.raises(ValueError, match=r"dense_attention_gqa: q must be"):
        dense_attention_gqa(q[..., :4], K, V)  # d differs

"""KV-cache decoding of TransformerLM gives exactly the logits of the full forward pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn import TransformerLM
from core.nn.decode_methods import Dense
from core.nn.decoding import decode_step, prefill


@pytest.fixture(scope="module", params=["learned", "rope"])
def lm(request):
    model = TransformerLM(vocab=20, d_model=32, depth=2, heads=4, seq_len=48, position=request.param)
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 20, (3, 40)), jnp.int32)
    return model, model.init(jax.random.key(0), ids), ids


def reference_attention(model, params, ids):
    """The full forward with a float64 numpy causal attention in every block (query head h reads KV head
    h // (H / Hkv)); returns (logits, per layer the probabilities [B, H, T, T])."""
    probs = {}

    def attend(layer, q, k, v):
        q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
        g = q.shape[1] // k.shape[1]
        k, v = np.repeat(k, g, 1), np.repeat(v, g, 1)
        T = q.shape[2]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        probs[layer] = p
        return jnp.asarray(p @ v, jnp.float32)

    logits = model.apply(params, ids, attend=attend)
    return logits, [probs[i] for i in range(len(probs))]


def group_sums(p, kv_heads, queries):
    """Attention each position received from the given queries, summed over the query heads of each KV head."""
    B, H, T, _ = p.shape
    return p[:, :, queries].sum(2).reshape(B, kv_heads, H // kv_heads, T).sum(2)


def test_prefill_then_decode_equals_the_full_forward(lm):
    model, params, ids = lm
    full = model.apply(params, ids)
    ref_logits, ref_probs = reference_attention(model, params, ids[:, :25])
    np.testing.assert_allclose(ref_logits, full[:, :25], atol=1e-4)
    cache, logits, sums = prefill(model, params, ids[:, :25], 48, column_sums=True)
    np.testing.assert_allclose(logits, full[:, :25], atol=1e-5)
    assert len(sums) == 2 and sums[0].shape == (3, 4, 48)
    for layer in range(2):
        want = group_sums(ref_probs[layer], 4, slice(0, 25))
        np.testing.assert_allclose(sums[layer][..., :25], want, atol=1e-5)
        assert np.all(np.asarray(sums[layer][..., 25:]) == 0)  # unused slots get nothing
    step = jax.jit(lambda c, t: decode_step(model, params, c, t))
    for t in range(25, 40):
        logits, cache, transfer = step(cache, ids[:, t])
        np.testing.assert_allclose(logits, full[:, t], atol=1e-5, err_msg=f"position {t}")
        assert int(transfer) == 2 * (2 + 2 * 48) * 8  # dense over the whole cache, two layers, head dim 8
    assert int(cache.length) == 40


def test_chunked_prefill_continues_the_cache(lm):
    model, params, ids = lm
    full = model.apply(params, ids)
    _, ref_probs = reference_attention(model, params, ids[:, :25])
    cache, first, _ = prefill(model, params, ids[:, :10], 48)
    cache, logits, sums = prefill(model, params, ids[:, 10:25], cache=cache, column_sums=True)
    np.testing.assert_allclose(first, full[:, :10], atol=1e-5)
    np.testing.assert_allclose(logits, full[:, 10:25], atol=1e-5)
    assert int(cache.length) == 25
    # the chunk's queries only: what H2O adds to the scores it already had
    np.testing.assert_allclose(sums[1][..., :25], group_sums(ref_probs[1], 4, slice(10, 25)), atol=1e-5)
    logits, cache, _ = decode_step(model, params, cache, ids[:, 25])
    np.testing.assert_allclose(logits, full[:, 25], atol=1e-5)


def test_prefill_column_sums_with_grouped_query_attention():
    from core.nn.llama import Llama, LlamaConfig

    model = Llama(LlamaConfig(vocab=30, d_model=32, depth=2, heads=4, kv_heads=2, ffn=48, context=64))
    ids = jnp.asarray(np.random.default_rng(1).integers(0, 30, (2, 20)), jnp.int32)
    params = model.init(jax.random.key(1), ids)
    ref_logits, ref_probs = reference_attention(model, params, ids)
    cache, logits, sums = prefill(model, params, ids, 32, column_sums=True)
    np.testing.assert_allclose(logits, ref_logits, atol=1e-4)
    assert cache.k.shape == (2, 2, 2, 32, 8) and sums[0].shape == (2, 2, 32)
    for layer in range(2):
        np.testing.assert_allclose(sums[layer][..., :20], group_sums(ref_probs[layer], 2, slice(0, 20)), atol=1e-5)
        # every query's probabilities sum to 1: a KV head collects P queries x 2 heads
        np.testing.assert_allclose(np.asarray(sums[layer]).sum(-1), 40.0, rtol=1e-5)


def test_a_custom_step_attention_is_used_with_its_state(lm):
    model, params, ids = lm
    cache, _, _ = prefill(model, params, ids[:, :10], 16)
    cache = cache._replace(state=(jnp.int32(0), jnp.int32(0)))
    calls = []

    def counting(layer, q, K, V, length, state):
        calls.append(layer)
        out, transfer, _ = Dense().step(layer, q, K, V, length, state)
        return out, transfer, state + 1

    _, cache, _ = decode_step(model, params, cache, ids[:, 10], counting)
    assert calls == [0, 1] and [int(s) for s in cache.state] == [1, 1]


def test_prefill_checks_the_capacity(lm):
    model, params, ids = lm
    with pytest.raises(ValueError, match="capacity 60 <= the model's seq_len 48"):
        prefill(model, params, ids[:, :10], 60)

"""KV-cache decoding of TransformerLM gives exactly the logits of the full forward pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn import Ops, TransformerLM
from core.nn.decoding import decode_step, dense_step, prefill


@pytest.fixture(scope="module", params=["learned", "rope"])
def lm(request):
    model = TransformerLM(vocab=20, d_model=32, depth=2, heads=4, seq_len=48, ops=Ops(), position=request.param)
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 20, (3, 40)), jnp.int32)
    return model, model.init(jax.random.key(0), ids), ids


def test_prefill_then_decode_equals_the_full_forward(lm):
    model, params, ids = lm
    full = model.apply(params, ids)
    cache, logits, probs = prefill(model, params, ids[:, :25], 48, keep_probs=True)
    np.testing.assert_allclose(logits, full[:, :25], atol=1e-5)
    assert len(probs) == 2 and probs[0].shape == (3, 4, 25, 25)
    np.testing.assert_allclose(probs[0].sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(np.asarray(probs[0]), 1) == 0)  # causal
    step = jax.jit(lambda c, t: decode_step(model, params, c, t))
    for t in range(25, 40):
        logits, cache, transfer = step(cache, ids[:, t])
        np.testing.assert_allclose(logits, full[:, t], atol=1e-5, err_msg=f"position {t}")
        assert int(transfer) == 2 * (2 + 2 * 48) * 8  # dense over the whole cache, two layers, head dim 8
    assert int(cache.length) == 40


def test_a_custom_step_attention_is_used_with_its_state(lm):
    model, params, ids = lm
    cache, _, _ = prefill(model, params, ids[:, :10], 16)
    cache = cache._replace(state=(jnp.int32(0), jnp.int32(0)))
    calls = []

    def counting(layer, q, K, V, length, state):
        calls.append(layer)
        out, transfer, _ = dense_step(layer, q, K, V, length, state)
        return out, transfer, state + 1

    _, cache, _ = decode_step(model, params, cache, ids[:, 10], counting)
    assert calls == [0, 1] and [int(s) for s in cache.state] == [1, 1]


def test_prefill_checks_the_capacity(lm):
    model, params, ids = lm
    with pytest.raises(ValueError, match="capacity 60 <= the model's seq_len 48"):
        prefill(model, params, ids[:, :10], 60)

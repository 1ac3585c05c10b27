"""Autoregressive decoding of core.nn.TransformerLM with a KV cache, and pluggable attention for the decode steps.

    cache, logits = prefill(model, params, ids, capacity=512)            # dense causal attention over the prompt
    logits, cache, transfer = decode_step(model, params, cache, token, step_attention)

`step_attention(layer, q, K, V, length, state) -> (out, transfer, state)` gets one new query per head, q [B, H, d],
the cache K, V [B, H, S, d] with the new key and value already written at position length - 1, and a per-layer
state it may carry (H2O's accumulated scores); `transfer` is what it reports reading per head. `dense_step` is
the exact default. All rows of a batch decode in lockstep (one shared length).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from core.nn.ops import masked_softmax
from core.nn.transformer import TransformerLM


class KVCache(NamedTuple):
    k: jax.Array  # [layers, B, H, S, d]
    v: jax.Array
    length: jax.Array  # int32 scalar: positions 0..length-1 are filled
    state: Any = None  # per-layer state of the step attention (tuple over layers), or None


StepAttention = Callable[..., tuple[jax.Array, Any, Any]]


def dense_step(layer, q, K, V, length, state):
    """Exact attention over the valid cache: softmax(q K^T / sqrt(d)) V; reads (2 + 2S) d elements per head."""
    S, d = K.shape[-2], q.shape[-1]
    valid = jnp.arange(S) < length
    p = masked_softmax(jnp.einsum("bhsd,bhd->bhs", K, q) / math.sqrt(d), valid)
    return jnp.einsum("bhs,bhsd->bhd", p, V), (2 + 2 * S) * d, state


def prefill(
    model: TransformerLM, params, ids: jax.Array, capacity: int, keep_probs: bool = False
) -> tuple[KVCache, jax.Array, list[jax.Array] | None]:
    """Run the prompt ids [B, P] with causal attention; return (cache of `capacity` positions, logits [B, P, V],
    the causal attention probabilities per layer [B, H, P, P] if `keep_probs`)."""
    P = ids.shape[1]
    if not P <= capacity <= model.seq_len:
        raise ValueError(
            f"prefill: need prompt length {P} <= capacity {capacity} <= the model's seq_len {model.seq_len}"
        )
    keys, values, probs = {}, {}, {}

    def attend(layer, q, k, v):
        keys[layer], values[layer] = k, v
        d = q.shape[-1]
        mask = jnp.tril(jnp.ones((P, P), bool))
        p = jnp.where(mask, jax.nn.softmax(jnp.where(mask, q @ jnp.swapaxes(k, -1, -2) / math.sqrt(d), -1e30)), 0.0)
        probs[layer] = p
        return p @ v

    logits = model.apply(params, ids, attend=attend)
    pad = ((0, 0), (0, 0), (0, capacity - P), (0, 0))
    k = jnp.stack([jnp.pad(keys[i], pad) for i in range(model.depth)])
    v = jnp.stack([jnp.pad(values[i], pad) for i in range(model.depth)])
    return KVCache(k, v, jnp.int32(P)), logits, [probs[i] for i in range(model.depth)] if keep_probs else None


def decode_step(
    model: TransformerLM, params, cache: KVCache, token: jax.Array, step_attention: StepAttention = dense_step
) -> tuple[jax.Array, KVCache, jax.Array]:
    """Append `token` [B] at position cache.length; return (logits [B, vocab], new cache, transfer per head
    summed over layers)."""
    B = token.shape[0]
    pos = jnp.broadcast_to(cache.length, (B, 1))
    new_k, new_v, states, transfers = [], [], [], []

    def attend(layer, q, k, v):  # q, k, v: [B, H, 1, d]
        K = jax.lax.dynamic_update_slice(cache.k[layer], k, (0, 0, cache.length, 0))
        V = jax.lax.dynamic_update_slice(cache.v[layer], v, (0, 0, cache.length, 0))
        state = None if cache.state is None else cache.state[layer]
        out, transfer, state = step_attention(layer, q[:, :, 0], K, V, cache.length + 1, state)
        new_k.append(K)
        new_v.append(V)
        states.append(state)
        transfers.append(transfer)
        return out[:, :, None]

    logits = model.apply(params, token[:, None], positions=pos, attend=attend)
    new_state = None if cache.state is None else tuple(states)
    new_cache = KVCache(jnp.stack(new_k), jnp.stack(new_v), cache.length + 1, new_state)
    return logits[:, 0], new_cache, sum(jnp.asarray(t) for t in transfers)

"""Autoregressive decoding of core.nn.TransformerLM with a KV cache, and pluggable attention for the decode steps.

    cache, logits = prefill(model, params, ids, capacity=512)            # dense causal attention over the prompt
    logits, cache, transfer = decode_step(model, params, cache, token, step_attention)

`step_attention(layer, q, K, V, length, state) -> (out, transfer, state)` gets one new query per head, q [B, H, d],
the cache K, V [B, Hkv, S, d] with the new key and value already written at position length - 1, and a per-layer
state it may carry (H2O's accumulated scores); `transfer` is what it reports reading per KV head. Models with
grouped-query attention (core.nn.llama) have Hkv < H: query head h reads KV head h // (H / Hkv); the
TransformerLM has Hkv = H. `dense_step` is the exact default. All rows of a batch decode in lockstep (one shared
length).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from core.nn.llama import Llama
from core.nn.ops import masked_softmax
from core.nn.transformer import TransformerLM


class KVCache(NamedTuple):
    k: jax.Array  # [layers, B, Hkv, S, d]
    v: jax.Array
    length: jax.Array  # int32 scalar: positions 0..length-1 are filled
    state: Any = None  # per-layer state of the step attention (tuple over layers), or None


StepAttention = Callable[..., tuple[jax.Array, Any, Any]]


def dense_step(layer, q, K, V, length, state):
    """Exact attention over the valid cache: softmax(q K^T / sqrt(d)) V; reads (2g + 2S) d elements per KV head
    (g = H / Hkv query heads share it)."""
    (B, H, d), (Hkv, S) = q.shape, K.shape[1:3]
    qg = q.reshape(B, Hkv, H // Hkv, d)
    valid = jnp.arange(S) < length
    p = masked_softmax(jnp.einsum("bksd,bkgd->bkgs", K, qg) / math.sqrt(d), valid)
    return jnp.einsum("bkgs,bksd->bkgd", p, V).reshape(B, H, d), (2 * (H // Hkv) + 2 * S) * d, state


def prefill(
    model: TransformerLM | Llama, params, ids: jax.Array, capacity: int, keep_probs: bool = False
) -> tuple[KVCache, jax.Array, list[jax.Array] | None]:
    """Run the prompt ids [B, P] with causal attention; return (cache of `capacity` positions, logits [B, P, V],
    the causal attention probabilities per layer [B, H, P, P] if `keep_probs`). `model`: TransformerLM or Llama."""
    P = ids.shape[1]
    if not P <= capacity <= model.seq_len:
        raise ValueError(
            f"prefill: need prompt length {P} <= capacity {capacity} <= the model's seq_len {model.seq_len}"
        )
    keys, values, probs = {}, {}, {}

    def attend(layer, q, k, v):  # q [B, H, P, d]; k, v [B, Hkv, P, d]
        keys[layer], values[layer] = k, v
        (B, H, _, d), Hkv = q.shape, k.shape[1]
        qg = q.reshape(B, Hkv, H // Hkv, P, d)
        mask = jnp.tril(jnp.ones((P, P), bool))
        s = jnp.einsum("bkgqd,bksd->bkgqs", qg, k) / math.sqrt(d)
        p = jnp.where(mask, jax.nn.softmax(jnp.where(mask, s, -1e30)), 0.0)
        if keep_probs:
            probs[layer] = p.reshape(B, H, P, P)
        return jnp.einsum("bkgqs,bksd->bkgqd", p, v).reshape(q.shape)

    logits = model.apply(params, ids, attend=attend)
    pad = ((0, 0), (0, 0), (0, capacity - P), (0, 0))
    k = jnp.stack([jnp.pad(keys[i], pad) for i in range(model.depth)])
    v = jnp.stack([jnp.pad(values[i], pad) for i in range(model.depth)])
    return KVCache(k, v, jnp.int32(P)), logits, [probs[i] for i in range(model.depth)] if keep_probs else None


def decode_step(
    model: TransformerLM | Llama, params, cache: KVCache, token: jax.Array, step_attention: StepAttention = dense_step
) -> tuple[jax.Array, KVCache, jax.Array]:
    """Append `token` [B] at position cache.length; return (logits [B, vocab], new cache, transfer per head
    summed over layers)."""
    B = token.shape[0]
    pos = jnp.broadcast_to(cache.length, (B, 1))
    kv = {"k": cache.k, "v": cache.v}
    states, transfers = [], []

    def attend(layer, q, k, v):  # q: [B, H, 1, d]; k, v: [B, Hkv, 1, d]
        # written into the stacked cache in place (no per-layer copies; jit with the cache donated reuses its buffer)
        for name, new in (("k", k), ("v", v)):
            kv[name] = jax.lax.dynamic_update_slice(
                kv[name], new[None].astype(kv[name].dtype), (layer, 0, 0, cache.length, 0)
            )
        state = None if cache.state is None else cache.state[layer]
        out, transfer, state = step_attention(
            layer, q[:, :, 0], kv["k"][layer], kv["v"][layer], cache.length + 1, state
        )
        states.append(state)
        transfers.append(transfer)
        return out[:, :, None]

    logits = model.apply(params, token[:, None], positions=pos, attend=attend)
    new_state = None if cache.state is None else tuple(states)
    new_cache = KVCache(kv["k"], kv["v"], cache.length + 1, new_state)
    return logits[:, 0], new_cache, sum(jnp.asarray(t) for t in transfers)

"""Autoregressive decoding of core.nn.TransformerLM with a KV cache, and pluggable attention for the decode steps.

    cache, logits, _ = prefill(model, params, ids, capacity=512)         # dense causal attention over the prompt
    cache, logits, _ = prefill(model, params, more_ids, cache=cache)      # continue it (chunked prefill)
    logits, cache, transfer = decode_step(model, params, cache, token, step_attention)

`step_attention(layer, q, K, V, length, state) -> (out, transfer, state)` gets one new query per head, q [B, H, d],
the cache K, V [B, Hkv, S, d] with the new key and value already written at position length - 1, and a per-layer
state it may carry (H2O's accumulated scores); `transfer` is what it reports reading per KV head. Models with
grouped-query attention (core.nn.llama) have Hkv < H: query head h reads KV head h // (H / Hkv); the
TransformerLM has Hkv = H. Any method of core.nn.decode_methods gives one as its `step`; `Dense().step`, exact
attention, is the default. All rows of a batch decode in lockstep (one shared length).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from core.nn.decode_methods import Dense
from core.nn.llama import Llama
from core.nn.transformer import TransformerLM


class KVCache(NamedTuple):
    k: jax.Array  # [layers, B, Hkv, S, d]
    v: jax.Array
    length: jax.Array  # int32 scalar: positions 0..length-1 are filled
    state: Any = None  # per-layer state of the step attention (tuple over layers), or None


StepAttention = Callable[..., tuple[jax.Array, Any, Any]]


def empty_cache(model: TransformerLM | Llama, batch: int, capacity: int, dtype=jnp.float32) -> KVCache:
    """A cache of `capacity` positions with nothing in it (length 0)."""
    if not 1 <= capacity <= model.seq_len:
        raise ValueError(f"empty_cache: capacity {capacity} must be in [1, the model's seq_len {model.seq_len}]")
    c = getattr(model, "config", model)  # Llama keeps its sizes in a LlamaConfig; TransformerLM on itself
    shape = (model.depth, batch, getattr(c, "kv_heads", c.heads), capacity, c.d_model // c.heads)
    return KVCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), jnp.int32(0))


def prefill(
    model: TransformerLM | Llama,
    params,
    ids: jax.Array,
    capacity: int | None = None,
    *,
    cache: KVCache | None = None,
    column_sums: bool = False,
) -> tuple[KVCache, jax.Array, list[jax.Array] | None]:
    """Run the ids [B, P] densely (causal attention) into a cache; return (cache, logits [B, P, V], per layer the
    attention each cache position received from these P queries, summed over them and over the query heads of its
    KV head, [B, Hkv, capacity], if `column_sums` (H2O's accumulated attention; None otherwise)).

    A new cache of `capacity` positions, or, with `cache=`, a continuation (chunked prefill): the ids are appended
    after `cache.length` and attend to everything before them. `model`: TransformerLM or Llama."""
    B, P = ids.shape
    if cache is None:
        if capacity is None or not P <= capacity <= model.seq_len:
            raise ValueError(
                f"prefill: need prompt length {P} <= capacity {capacity} <= the model's seq_len {model.seq_len}"
            )
        cache = empty_cache(model, B, capacity)
    capacity = cache.k.shape[3]
    start = cache.length
    kv = {"k": cache.k, "v": cache.v}
    sums = {}

    def attend(layer, q, k, v):  # q [B, H, P, d]; k, v [B, Hkv, P, d]
        for name, new in (("k", k), ("v", v)):
            kv[name] = jax.lax.dynamic_update_slice(kv[name], new[None].astype(kv[name].dtype), (layer, 0, 0, start, 0))
        K, V = kv["k"][layer], kv["v"][layer]  # [B, Hkv, capacity, d]
        (_, H, _, d), Hkv = q.shape, k.shape[1]
        qg = q.reshape(B, Hkv, H // Hkv, P, d)
        mask = jnp.arange(capacity)[None, :] <= start + jnp.arange(P)[:, None]  # [P, capacity]: causal
        s = jnp.einsum("bkgqd,bksd->bkgqs", qg, K) / math.sqrt(d)
        p = jnp.where(mask, jax.nn.softmax(jnp.where(mask, s, -1e30)), 0.0)
        if column_sums:
            sums[layer] = jnp.sum(p, (2, 3))
        return jnp.einsum("bkgqs,bksd->bkgqd", p, V).reshape(q.shape)

    positions = jnp.broadcast_to(start + jnp.arange(P), (B, P))
    logits = model.apply(params, ids, positions=positions, attend=attend)
    out = KVCache(kv["k"], kv["v"], start + P, cache.state)
    return out, logits, [sums[i] for i in range(model.depth)] if column_sums else None


def decode_step(
    model: TransformerLM | Llama,
    params,
    cache: KVCache,
    token: jax.Array,
    step_attention: StepAttention | None = None,
) -> tuple[jax.Array, KVCache, jax.Array]:
    """Append `token` [B] at position cache.length; return (logits [B, vocab], new cache, transfer per head
    summed over layers). `step_attention`: None for exact attention (`Dense().step`)."""
    step_attention = Dense().step if step_attention is None else step_attention
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

"""The evaluations: the repetition task and held-out bits per character, with any decode-step attention method.

Prefill (context and prompt) is dense, as in the paper; the method under test runs every decode step. A method is
given by its name and compression ratio and becomes a `core.nn.decoding` step function here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from core.nn.decoding import KVCache, decode_step, dense_step, prefill
from papers.sparq.attention import h2o_attention, h2o_init, local_attention, sparq_attention

METHODS = ("dense", "sparq", "h2o", "local")


@dataclass(frozen=True)
class Method:
    name: str
    ratio: float = 1.0  # target fraction of the dense transfer
    r: int = 0
    k: int = 0
    local_k: int = 0

    @property
    def label(self) -> str:
        return "dense" if self.name == "dense" else f"{self.name} 1/{round(1 / self.ratio)}"


def make_method(name: str, ratio: float, head_dim: int, S: int) -> Method:
    """Settings that move about `ratio` of the dense transfer at cache length S.

    SparQ: transfer / dense ~ r / (2 d) + k / S; half the budget each: r = ratio d, k = ratio S / 2, local_k = k / 4
    (the paper's local share, REFERENCES.md "setup"). H2O and the local window move 2kd of 2Sd: k = ratio S (H2O keeps
    k/4 recent)."""
    if name == "dense":
        return Method("dense")
    if name == "sparq":
        k = max(1, round(ratio * S / 2))
        return Method("sparq", ratio, r=max(1, min(head_dim, round(ratio * head_dim))), k=k, local_k=k // 4)
    k = max(1, round(ratio * S))
    return Method(name, ratio, k=k, local_k=k // 4 if name == "h2o" else 0)


def step_fn(method: Method):
    if method.name == "dense":
        return dense_step
    if method.name == "local":
        return lambda layer, q, K, V, length, state: (*local_attention(q, K, V, k=method.k, length=length), state)
    if method.name == "sparq":
        return lambda layer, q, K, V, length, state: (
            *sparq_attention(q, K, V, r=method.r, k=method.k, local_k=method.local_k, length=length),
            state,
        )

    def h2o(layer, q, K, V, length, state):
        out, transfer, state = h2o_attention(q, K, V, state, k=method.k, local_k=method.local_k, length=length)
        return out, transfer, state

    return h2o


def _start(model, params, ids, capacity: int, method: Method) -> tuple[KVCache, jax.Array]:
    cache, logits, probs = prefill(model, params, ids, capacity, keep_probs=method.name == "h2o")
    if method.name == "h2o":
        P = ids.shape[1]
        pad = ((0, 0), (0, 0), (0, capacity - P), (0, capacity - P))
        states = tuple(h2o_init(jnp.pad(p, pad), P, k=method.k, local_k=method.local_k) for p in probs)
        cache = cache._replace(state=states)
    return cache, logits


def repetition(model, params, texts: np.ndarray, prompt_len: int, generate: int, method: Method, seed: int):
    """texts [N, C] int: contexts. For each, a prompt of `prompt_len` ids copied from the context (at a seeded
    position that leaves `generate` ids after it inside the context) is appended; the model then generates
    `generate` ids greedily. Returns (scores [N]: ids equal to the context's continuation before the first
    mismatch, mean transfer per head per step summed over layers)."""
    N, C = texts.shape
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, C - prompt_len - generate + 1, N)
    prompts = np.stack([texts[i, s : s + prompt_len] for i, s in enumerate(starts)])
    truth = np.stack([texts[i, s + prompt_len : s + prompt_len + generate] for i, s in enumerate(starts)])
    ids = jnp.asarray(np.concatenate([texts, prompts], 1), jnp.int32)
    capacity = C + prompt_len + generate
    cache, logits = _start(model, params, ids, capacity, method)
    step = jax.jit(partial(decode_step, model, params, step_attention=step_fn(method)))
    token = jnp.argmax(logits[:, -1], -1)
    out, transfers = [], []
    for _ in range(generate):
        out.append(np.asarray(token))
        logits, cache, transfer = step(cache, token)
        transfers.append(int(transfer))
        token = jnp.argmax(logits, -1)
    generated = np.stack(out, 1)
    wrong = generated != truth
    scores = np.where(wrong.any(1), wrong.argmax(1), generate)
    return scores, float(np.mean(transfers[:-1] or transfers))


def bits_per_character(model, params, windows: np.ndarray, prefill_len: int, method: Method):
    """Teacher-forced BPC of windows [N, T] over positions prefill_len..T-1, each predicted by a decode step that
    uses `method` (the first prefill_len ids are a dense prefill). Returns (BPC of each window [N], mean transfer per
    step); every window has the same number of predicted positions, so the mean of the windows' BPC is the BPC."""
    T = windows.shape[1]
    ids = jnp.asarray(windows, jnp.int32)
    cache, logits = _start(model, params, ids[:, :prefill_len], T, method)
    step = jax.jit(partial(decode_step, model, params, step_attention=step_fn(method)))
    nats, transfers = [], []
    logp = jax.nn.log_softmax(logits[:, -1])
    for t in range(prefill_len, T):
        nats.append(-np.asarray(jnp.take_along_axis(logp, ids[:, t : t + 1], -1))[:, 0])
        if t + 1 < T:
            logits, cache, transfer = step(cache, ids[:, t])
            transfers.append(int(transfer))
            logp = jax.nn.log_softmax(logits)
    return np.mean(np.stack(nats, 1), 1) / math.log(2), float(np.mean(transfers))

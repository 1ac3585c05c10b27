"""Decode-time attention: one step of dense attention, SparQ (Ribar et al., ICML 2024), H2O, a local window,
StreamingLLM (attention sinks + window) and Quest (page-level key bounds) over a KV cache, in one interface. Each is a
method object in core.nn.decode_methods (its settings from a transfer budget, its transfer formula and count, its
`core.nn.decoding` step attention, which calls the kernel here); papers.sparq evaluates them.

Shapes: q [..., d] (leading dims: batch, heads), K, V [..., S, d] (the KV cache), `length` [...] or None: the number
of valid cache positions (positions >= length are unused slots of the cache and never attended). Every function
returns (output [..., d], transfer) where `transfer` counts, per head and step, the K/V/q elements the method reads
or writes, computed from the sizes of what it actually gathers.

SparQ, exactly as the paper (per head):
    1. i1 = the r largest |q| components;
    2. s_hat = softmax(q[i1] . K[:, i1]^T / sqrt(d * sum|q[i1]| / sum|q|))         (over valid positions);
    3. i2 = the k largest s_hat, the last `local_k` valid positions always included (they count towards k);
    4. y = softmax(q . K[i2]^T / sqrt(d)) . V[i2];
    5. out = alpha * y + (1 - alpha) * mean(V over the valid positions), alpha = sum of s_hat over i2.
Transfer, elements per head per step: q and the output (2d), K[:, i1] (S r; the paper keeps a second, transposed
copy of K so these are contiguous), K[i2] and V[i2] (2kd), the running mean of V (d), and the new key and value
written to the second K copy and the V mean (2d): (2 + 2k)d + d + S r + 2d. Dense: q, output, K, V: (2 + 2S)d.

GQA (`sparq_attention_gqa`): a KV head serves g query heads; i1 comes from |q| summed over the g heads, i2 from
the approximate scores (the logits q[i1] . K[:, i1] / temperature, before the softmax) summed over them, one gather
of K and V per KV head; y, alpha and the output per query head. This is the reference implementation's rule
(graphcore-research/llm-inference-research, `llminference/methods/ann_attention.py`, `SparseQ.forward` and
`AnnAttention.forward`; papers/sparq/REFERENCES.md, SPARQ-GQA), not the mean of the softmax probabilities.
`dense_attention_gqa`, `local_attention_gqa`, `h2o_attention_gqa`, `streaming_attention_gqa` and `quest_attention_gqa`
are the baselines in the same layout: the whole valid cache, one window, one kept set (H2O's accumulated attention
summed over the group), one set of sinks and window, or one set of pages (Quest's bounds summed over the group) per KV
head, read once for the g query heads. The transfers below are per head with one query head per KV head; the GQA
forms count q and the outputs of the group, 2gd, in place of 2d.

Public pieces (transfer per head and step):
    dense_attention(_gqa): every valid position, (2 + 2S)d; local_attention(_gqa): the last k, (2 + 2k)d
    sparq_attention(_gqa): SparQ's five steps for one query head per KV head (given K transposed and the mean of V,
        as a kernel that keeps them runs it: step 2 reads rows of K_t, `scores_from_rows`), or for g sharing one
    H2OState, h2o_init, h2o_init_scores, h2o_attention(_gqa): H2O, the k positions with the most accumulated
        attention (the most recent `local_k` always kept), evicting one a step; (2 + 2k)d + 2k
    streaming_attention(_gqa): StreamingLLM, the first `sinks` valid positions and the last k - sinks; (2 + 2k)d
    quest_attention(_gqa), quest_page_bounds, quest_attention_from_bounds: Quest, the k/page pages of `page`
        positions with the highest bound on q . K from each page's key min/max (the newest always), its page
        metadata, and its step given the metadata (what a kernel reads); (2 + 2S/page + 2k)d
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from core.nn.parametrization import masked_softmax


def _check(q, K, V, what: str) -> tuple[int, int]:
    if q.ndim < 1 or K.ndim != q.ndim + 1 or K.shape != V.shape:
        raise ValueError(
            f"{what}: q must be [..., d] and K, V [..., S, d] alike; got q {q.shape}, K {K.shape}, V {V.shape}"
        )
    if K.shape[:-2] != q.shape[:-1] or K.shape[-1] != q.shape[-1]:
        raise ValueError(f"{what}: leading dims and d of q {q.shape} and K {K.shape} must match")
    return K.shape[-2], q.shape[-1]


def _valid(S: int, length, lead: tuple[int, ...]) -> jax.Array:
    if length is None:  # a constant, so XLA drops the masking it would do
        return jnp.ones((*lead, S), bool)
    return jnp.arange(S) < jnp.broadcast_to(jnp.asarray(length), lead)[..., None]


def dense_attention(q, K, V, length=None) -> tuple[jax.Array, int]:
    S, d = _check(q, K, V, "dense_attention")
    valid = _valid(S, length, q.shape[:-1])
    p = masked_softmax(jnp.einsum("...sd,...d->...s", K, q) / math.sqrt(d), valid)
    return jnp.einsum("...s,...sd->...d", p, V), (2 + 2 * S) * d


def dense_attention_gqa(q, K, V, length=None) -> tuple[jax.Array, int]:
    """`dense_attention` with grouped queries: q [..., g, d], K, V [..., S, d], `length` [...] (per KV head) or None;
    the g query heads of a KV head attend over every valid position of its cache, read once for the group. Transfer
    per KV head: 2gd + 2Sd (the kernel of core.nn.decode_methods.Dense, decoding's default step)."""
    S, d, g = _check_gqa(q, K, V, "dense_attention_gqa")
    valid = _valid(S, length, K.shape[:-2])  # [..., S]
    p = masked_softmax(jnp.einsum("...sd,...gd->...gs", K, q) / math.sqrt(d), valid[..., None, :])
    return jnp.einsum("...gs,...sd->...gd", p, V), (2 * g + 2 * S) * d


def local_attention(q, K, V, *, k: int, length=None) -> tuple[jax.Array, int]:
    """Attention over the last `k` valid positions only (`local_attention_gqa` with one query head per KV head)."""
    S, _ = _check(q, K, V, "local_attention")
    if not 1 <= k <= S:
        raise ValueError(f"local_attention: k={k} must be in [1, S={S}]")
    out, transfer = local_attention_gqa(q[..., None, :], K, V, k=k, length=length)
    return out[..., 0, :], transfer


def _check_gqa(q, K, V, what: str) -> tuple[int, int, int]:
    if (
        q.ndim < 2
        or K.ndim != q.ndim
        or K.shape[:-2] != q.shape[:-2]
        or K.shape != V.shape
        or K.shape[-1] != q.shape[-1]
    ):
        raise ValueError(
            f"{what}: q must be [..., g, d] and K, V [..., S, d] alike; got q {q.shape}, K {K.shape}, V {V.shape}"
        )
    return K.shape[-2], q.shape[-1], q.shape[-2]


def local_attention_gqa(q, K, V, *, k: int, length=None) -> tuple[jax.Array, int]:
    """`local_attention` with grouped queries: q [..., g, d], K, V [..., S, d]; the g query heads of a KV head share
    one read of its last k positions. Transfer per KV head: 2gd + 2kd."""
    S, d, g = _check_gqa(q, K, V, "local_attention_gqa")
    if not 1 <= k <= S:
        raise ValueError(f"local_attention_gqa: k={k} must be in [1, S={S}]")
    end = jnp.broadcast_to(jnp.asarray(S if length is None else length), K.shape[:-2])
    idx = jnp.clip(end[..., None] - k + jnp.arange(k), 0, S - 1)  # [..., k]
    ok = (end[..., None] - k + jnp.arange(k)) >= 0
    K2 = jnp.take_along_axis(K, idx[..., None], axis=-2)
    V2 = jnp.take_along_axis(V, idx[..., None], axis=-2)
    p = masked_softmax(jnp.einsum("...kd,...gd->...gk", K2, q) / math.sqrt(d), ok[..., None, :])
    return jnp.einsum("...gk,...kd->...gd", p, V2), 2 * g * d + K2.shape[-2] * d + V2.shape[-2] * d


def _check_sparq(S: int, d: int, r: int, k: int, local_k: int, what: str) -> None:
    if not 1 <= r <= d:
        raise ValueError(f"{what}: r={r} must be in [1, d={d}]")
    if not 1 <= k <= S:
        raise ValueError(f"{what}: k={k} must be in [1, S={S}]")
    if not 0 <= local_k <= k:
        raise ValueError(f"{what}: local_k={local_k} must be in [0, k={k}]")


def _select(s_hat_for_selection, valid, S: int, k: int, local_k: int, length, lead) -> jax.Array:
    """Top-k positions by approximate score, the last `local_k` valid positions forced in."""
    end = jnp.broadcast_to(jnp.asarray(S if length is None else length), lead)[..., None]
    pos = jnp.arange(S)
    forced = valid & (pos >= end - local_k)
    score = jnp.where(forced, jnp.inf, jnp.where(valid, s_hat_for_selection, -jnp.inf))
    return jax.lax.top_k(score, k)[1]


def sparq_attention(
    q, K, V, *, r: int, k: int, local_k: int = 0, length=None, K_t=None, v_mean=None
) -> tuple[jax.Array, int]:
    """SparQ attention for one decode step (see the module docstring). Returns (output, transfer per head). As a kernel
    keeping the paper's second copy of K runs it: step 2 reads the rows K[:, i1] of `K_t` [..., d, S], K transposed
    (`scores_from_rows`), and step 5 reads `v_mean` [..., d], the mean of V kept as values are written, not V."""
    S, d = _check(q, K, V, "sparq_attention")
    _check_sparq(S, d, r, k, local_k, "sparq_attention")
    if K_t is not None and K_t.shape != (*K.shape[:-2], d, S):
        raise ValueError(f"sparq_attention: K_t must be K transposed, {(*K.shape[:-2], d, S)}; got {K_t.shape}")
    lead = q.shape[:-1]
    valid = _valid(S, length, lead)
    absq = jnp.abs(q)
    i1 = jax.lax.top_k(absq, r)[1]  # [..., r]
    q1 = jnp.take_along_axis(q, i1, axis=-1)
    if K_t is None:
        approx = jnp.einsum("...sr,...r->...s", jnp.take_along_axis(K, i1[..., None, :], axis=-1), q1)
    else:
        approx = scores_from_rows(K_t, i1, q1)
    temperature = jnp.sqrt(d * jnp.sum(jnp.abs(q1), -1) / jnp.sum(absq, -1))
    s_hat = masked_softmax(approx / temperature[..., None], valid)
    i2 = _select(s_hat, valid, S, k, local_k, length, lead)  # [..., k]
    ok = jnp.take_along_axis(valid, i2, axis=-1)
    alpha = jnp.sum(jnp.take_along_axis(s_hat, i2, axis=-1) * ok, -1)
    K2 = jnp.take_along_axis(K, i2[..., None], axis=-2)
    V2 = jnp.take_along_axis(V, i2[..., None], axis=-2)
    y = jnp.einsum("...k,...kd->...d", masked_softmax(jnp.einsum("...kd,...d->...k", K2, q) / math.sqrt(d), ok), V2)
    if v_mean is None:
        v_mean = jnp.sum(jnp.where(valid[..., None], V, 0.0), -2) / jnp.maximum(jnp.sum(valid, -1), 1)[..., None]
    out = alpha[..., None] * y + (1 - alpha[..., None]) * v_mean
    transfer = 2 * d + S * r + K2.shape[-2] * d + V2.shape[-2] * d + v_mean.shape[-1] + 2 * d
    return out, transfer


def scores_from_rows(K_t: jax.Array, i1: jax.Array, q1: jax.Array) -> jax.Array:
    """SparQ's approximate logits q[i1] . K[:, i1]^T as rows of K transposed, K_t [..., d, S]: sum_j q1[..., j]
    K_t[..., i1[..., j], :] for i1, q1 [..., r]; [..., S]. One gather of each head's r rows and a batched product (as
    the authors' IPU kernel), except on CPU (`jax.lax.platform_dependent`), where XLA's gather is ~6x slower than a
    loop of row slices (S = 16384, r = 32, 32 heads). Both read the same r S elements a head (core.nn.transfer)."""
    return jax.lax.platform_dependent(K_t, i1, q1, cpu=_scores_row_loop, default=_scores_gathered)


def _scores_gathered(K_t: jax.Array, i1: jax.Array, q1: jax.Array) -> jax.Array:
    return jnp.einsum("...rs,...r->...s", jnp.take_along_axis(K_t, i1[..., None], axis=-2), q1)


def _scores_row_loop(K_t: jax.Array, i1: jax.Array, q1: jax.Array) -> jax.Array:
    lead, (d, S), r = K_t.shape[:-2], K_t.shape[-2:], i1.shape[-1]
    heads = math.prod(lead)
    flat = K_t.reshape(heads * d, S)
    idx = (jnp.arange(heads)[:, None] * d + i1.reshape(heads, r)).reshape(-1)
    weights = q1.reshape(-1)

    def body(j, acc):
        row = jax.lax.dynamic_slice(flat, (idx[j], 0), (1, S))[0]
        return acc.at[j // r].add(row * weights[j])

    return jax.lax.fori_loop(0, heads * r, body, jnp.zeros((heads, S), K_t.dtype)).reshape(*lead, S)


def sparq_attention_gqa(
    q, K, V, *, r: int, k: int, local_k: int = 0, length=None, reallocate: bool = True
) -> tuple[jax.Array, int]:
    """SparQ with grouped queries: q [..., g, d] (g query heads per KV head), K, V [..., S, d]. Transfer is per
    KV head: the g query heads share one gather of K[:, i1], K[i2] and V[i2]. `reallocate=False` skips step 5 (the
    output is y, and the mean of V is neither read nor updated: 2d less transfer), as the paper runs its grouped-query
    models, Llama 3 and Mistral ("GQA models obtained better performance without [step 3]", Section 4; its step 3
    is step 5 here)."""
    S, d, g = _check_gqa(q, K, V, "sparq_attention_gqa")
    _check_sparq(S, d, r, k, local_k, "sparq_attention_gqa")
    lead = K.shape[:-2]
    valid = _valid(S, length, lead)  # [..., S]
    absq = jnp.abs(q)
    i1 = jax.lax.top_k(jnp.sum(absq, -2), r)[1]  # shared over the group: [..., r]
    q1 = jnp.take_along_axis(q, i1[..., None, :], axis=-1)  # [..., g, r]
    K1 = jnp.take_along_axis(K, i1[..., None, :], axis=-1)  # [..., S, r]
    temperature = jnp.sqrt(d * jnp.sum(jnp.abs(q1), -1) / jnp.sum(absq, -1))  # [..., g]
    logits = jnp.einsum("...sr,...gr->...gs", K1, q1) / temperature[..., None]  # approximate scores
    s_hat = masked_softmax(logits, valid[..., None, :])
    i2 = _select(jnp.sum(logits, -2), valid, S, k, local_k, length, lead)  # shared: [..., k]
    ok = jnp.take_along_axis(valid, i2, axis=-1)  # [..., k]
    alpha = jnp.sum(jnp.take_along_axis(s_hat, i2[..., None, :], axis=-1) * ok[..., None, :], -1)  # [..., g]
    K2 = jnp.take_along_axis(K, i2[..., None], axis=-2)
    V2 = jnp.take_along_axis(V, i2[..., None], axis=-2)
    p = masked_softmax(jnp.einsum("...kd,...gd->...gk", K2, q) / math.sqrt(d), ok[..., None, :])
    y = jnp.einsum("...gk,...kd->...gd", p, V2)
    transfer = 2 * g * d + K1.shape[-2] * K1.shape[-1] + K2.shape[-2] * d + V2.shape[-2] * d
    if not reallocate:
        return y, transfer + d  # the new key written to the transposed copy of K
    v_mean = jnp.sum(jnp.where(valid[..., None], V, 0.0), -2) / jnp.maximum(jnp.sum(valid, -1), 1)[..., None]
    out = alpha[..., None] * y + (1 - alpha[..., None]) * v_mean[..., None, :]
    return out, transfer + d + 2 * d


class H2OState(NamedTuple):
    """Per position: attention accumulated since it entered the cache, and whether it is still kept."""

    score: jax.Array  # [..., S]
    kept: jax.Array  # [..., S] bool


def h2o_init(prefill_probs: jax.Array, length, *, k: int, local_k: int) -> H2OState:
    """H2O's cache after a dense prefill: the `local_k` most recent positions plus the k - local_k others with the
    most accumulated attention (column sums of the prefill's causal attention probabilities [..., S, S])."""
    return h2o_init_scores(jnp.sum(prefill_probs, -2), length, k=k, local_k=local_k)


def h2o_init_scores(score: jax.Array, length, *, k: int, local_k: int) -> H2OState:
    """`h2o_init` from the accumulated attention itself, score [..., S] (with grouped queries: summed over the
    query heads of a KV head; `core.nn.decoding.prefill(column_sums=True)` returns it)."""
    S = score.shape[-1]
    lead = score.shape[:-1]
    valid = _valid(S, length, lead)
    score = score * valid
    end = jnp.broadcast_to(jnp.asarray(length), lead)[..., None]
    recent = valid & (jnp.arange(S) >= end - local_k)
    heavy = jax.lax.top_k(jnp.where(valid & ~recent, score, -1.0), max(k - local_k, 1))[1]
    chosen = jnp.zeros(valid.shape, bool)
    if k - local_k > 0:
        chosen = jnp.put_along_axis(chosen, heavy, True, axis=-1, inplace=False)
    return H2OState(score, (chosen & valid) | recent)


def h2o_attention(q, K, V, state: H2OState, *, k: int, local_k: int, length) -> tuple[jax.Array, int, H2OState]:
    """One H2O decode step. The newest position (length - 1) joins the cache; attention runs over kept positions;
    their scores accumulate; if more than k are kept, the one with the least accumulated attention outside the
    `local_k` most recent is evicted for good. Transfer: q, output, K and V of the k kept positions, and their
    scores read and written: (2 + 2k)d + 2k. (`h2o_attention_gqa` with one query head per KV head.)"""
    S, _ = _check(q, K, V, "h2o_attention")
    if not 0 <= local_k <= k <= S:
        raise ValueError(f"h2o_attention: need 0 <= local_k={local_k} <= k={k} <= S={S}")
    out, transfer, state = h2o_attention_gqa(q[..., None, :], K, V, state, k=k, local_k=local_k, length=length)
    return out[..., 0, :], transfer, state


def h2o_attention_gqa(q, K, V, state: H2OState, *, k: int, local_k: int, length) -> tuple[jax.Array, int, H2OState]:
    """`h2o_attention` with grouped queries: q [..., g, d], K, V [..., S, d], state per KV head ([..., S]). The g
    query heads attend over the KV head's kept positions (one read of their K and V); the attention they give
    accumulates summed over the group, and eviction keeps one set per KV head, the rule that saves transfer when
    heads share their keys. Transfer per KV head: (2g + 2k)d + 2k."""
    S, d, g = _check_gqa(q, K, V, "h2o_attention_gqa")
    if not 0 <= local_k <= k <= S:
        raise ValueError(f"h2o_attention_gqa: need 0 <= local_k={local_k} <= k={k} <= S={S}")
    lead = K.shape[:-2]
    valid = _valid(S, length, lead)
    end = jnp.broadcast_to(jnp.asarray(length), lead)[..., None]
    pos = jnp.arange(S)
    kept = (state.kept | (pos == end - 1)) & valid
    p = masked_softmax(jnp.einsum("...sd,...gd->...gs", K, q) / math.sqrt(d), kept[..., None, :])
    out = jnp.einsum("...gs,...sd->...gd", p, V)
    score = state.score + jnp.sum(p, -2)
    over = jnp.sum(kept, -1) > k
    candidates = jnp.where(kept & (pos < end - local_k), score, jnp.inf)
    evict = jax.nn.one_hot(jnp.argmin(candidates, -1), S, dtype=bool) & over[..., None]
    return out, (2 * g + 2 * k) * d + 2 * k, H2OState(score, kept & ~evict)


def _check_streaming(S: int, k: int, sinks: int, what: str) -> None:
    if not 0 <= sinks < k <= S:
        raise ValueError(f"{what}: need 0 <= sinks={sinks} < k={k} <= S={S}")


def streaming_attention(q, K, V, *, k: int, sinks: int = 4, length=None) -> tuple[jax.Array, int]:
    """StreamingLLM's attention for one query head per KV head (`streaming_attention_gqa` with g = 1).
    Transfer: (2 + 2k)d."""
    S, _ = _check(q, K, V, "streaming_attention")
    _check_streaming(S, k, sinks, "streaming_attention")
    out, transfer = streaming_attention_gqa(q[..., None, :], K, V, k=k, sinks=sinks, length=length)
    return out[..., 0, :], transfer


def streaming_attention_gqa(q, K, V, *, k: int, sinks: int = 4, length=None) -> tuple[jax.Array, int]:
    """StreamingLLM (Xiao et al., ICLR 2024, arXiv 2309.17453) with grouped queries: q [..., g, d], K, V [..., S, d].

    Attention runs over the first `sinks` valid positions (the attention sinks) and the last k - sinks valid ones
    (the newest, length - 1, included), read once per KV head for its g query heads. When length <= k that is every
    valid position, each once: window positions that are also sinks are masked, so none gets double weight.
    StreamingLLM also re-positions the keys within the rolling cache so a model can run past its trained length; a
    decode inside the trained context does not need that, and here the keys keep the positions they were written
    with (the cache holds keys rotated at their original positions). Transfer per KV head: 2gd + 2kd."""
    S, d, g = _check_gqa(q, K, V, "streaming_attention_gqa")
    _check_streaming(S, k, sinks, "streaming_attention_gqa")
    end = jnp.broadcast_to(jnp.asarray(S if length is None else length), K.shape[:-2])[..., None]
    window = end - (k - sinks) + jnp.arange(k - sinks)  # [..., k - sinks]
    idx = jnp.concatenate([jnp.broadcast_to(jnp.arange(sinks), (*K.shape[:-2], sinks)), jnp.clip(window, 0, S - 1)], -1)
    ok = jnp.concatenate([jnp.arange(sinks) < end, window >= sinks], -1)  # [..., k]
    K2 = jnp.take_along_axis(K, idx[..., None], axis=-2)
    V2 = jnp.take_along_axis(V, idx[..., None], axis=-2)
    p = masked_softmax(jnp.einsum("...kd,...gd->...gk", K2, q) / math.sqrt(d), ok[..., None, :])
    return jnp.einsum("...gk,...kd->...gd", p, V2), 2 * g * d + K2.shape[-2] * d + V2.shape[-2] * d


def _check_quest(S: int, k: int, page: int, what: str) -> None:
    if page < 1 or S % page:
        raise ValueError(f"{what}: page={page} must be a positive divisor of S={S}")
    if not (page <= k <= S and k % page == 0):
        raise ValueError(f"{what}: k={k} must be a multiple of page={page} in [{page}, S={S}]")


def quest_attention(q, K, V, *, k: int, page: int = 16, length=None) -> tuple[jax.Array, int]:
    """Quest's attention for one query head per KV head (`quest_attention_gqa` with g = 1).
    Transfer: 2d + 2d S/page + 2kd."""
    S, _ = _check(q, K, V, "quest_attention")
    _check_quest(S, k, page, "quest_attention")
    out, transfer = quest_attention_gqa(q[..., None, :], K, V, k=k, page=page, length=length)
    return out[..., 0, :], transfer


def quest_attention_gqa(q, K, V, *, k: int, page: int = 16, length=None) -> tuple[jax.Array, int]:
    """Quest (Tang et al., ICML 2024, arXiv 2406.10774) with grouped queries: q [..., g, d], K, V [..., S, d].

    The cache is split into S/page pages of `page` consecutive positions. A page's metadata is the element-wise
    min and max of its valid keys; its upper bound on a query head's score q . K is sum_i max(q_i max_i, q_i min_i).
    Our GQA rule, the one SparQ's reference uses for its selection: a page's score is that bound summed over the g
    query heads of the KV head, so the group reads one set of pages. Pages with no valid position score -inf; the
    k/page best pages are selected, the page holding the newest valid position (length - 1) always among them, and
    each query head attends over the valid positions of the selected pages.

    The metadata is computed from K here (`quest_page_bounds`); a real kernel keeps it up to date as keys are
    written, so only its read is counted (`quest_attention_from_bounds` is that kernel). Transfer per KV head: q and
    the outputs (2gd), the min and max of every page (2d S/page), K and V of the selected pages (2kd)."""
    S = _check_gqa(q, K, V, "quest_attention_gqa")[0]
    _check_quest(S, k, page, "quest_attention_gqa")
    k_min, k_max = quest_page_bounds(K, page=page, length=length)
    return quest_attention_from_bounds(q, K, V, k_min, k_max, k=k, page=page, length=length)


def quest_page_bounds(K, *, page: int, length=None) -> tuple[jax.Array, jax.Array]:
    """Quest's page metadata: the element-wise (min, max) of each page's valid keys, [..., S/page, d] each (+inf and
    -inf for a page with no valid position)."""
    S, d = K.shape[-2:]
    lead = K.shape[:-2]
    valid = _valid(S, length, lead).reshape(*lead, S // page, page, 1)
    pages = K.reshape(*lead, S // page, page, d)
    return jnp.min(jnp.where(valid, pages, jnp.inf), -2), jnp.max(jnp.where(valid, pages, -jnp.inf), -2)


def quest_attention_from_bounds(q, K, V, k_min, k_max, *, k: int, page: int, length=None) -> tuple[jax.Array, int]:
    """Quest's decode step given the page metadata (`quest_page_bounds`), as a kernel that keeps it up to date runs
    it: it reads the bounds, then K and V of the selected pages only (what `core.nn.transfer` counts)."""
    S, d, g = _check_gqa(q, K, V, "quest_attention_from_bounds")
    _check_quest(S, k, page, "quest_attention_from_bounds")
    lead = K.shape[:-2]
    qe = q[..., :, None, :]  # [..., g, 1, d]
    bound = jnp.sum(jnp.maximum(qe * k_max[..., None, :, :], qe * k_min[..., None, :, :]), (-3, -1))  # [..., S/page]
    end = jnp.broadcast_to(jnp.asarray(S if length is None else length), lead)[..., None]
    start = jnp.arange(S // page) * page
    newest = start == (end - 1) // page * page
    score = jnp.where(newest, jnp.inf, jnp.where(start < end, bound, -jnp.inf))
    chosen = jax.lax.top_k(score, k // page)[1]  # [..., k/page]
    idx = (chosen[..., None] * page + jnp.arange(page)).reshape(*lead, k)
    ok = idx < end
    K2 = jnp.take_along_axis(K, idx[..., None], axis=-2)
    V2 = jnp.take_along_axis(V, idx[..., None], axis=-2)
    p = masked_softmax(jnp.einsum("...kd,...gd->...gk", K2, q) / math.sqrt(d), ok[..., None, :])
    metadata = k_min.shape[-2] * d + k_max.shape[-2] * d
    return jnp.einsum("...gk,...kd->...gd", p, V2), 2 * g * d + metadata + K2.shape[-2] * d + V2.shape[-2] * d

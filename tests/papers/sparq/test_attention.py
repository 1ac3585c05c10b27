"""SparQ and its baselines (core.nn.attention) against a step-by-step numpy reference, transfer counts against the
paper's formulas, and clear errors for bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn.attention import (
    dense_attention,
    h2o_attention,
    h2o_attention_gqa,
    h2o_init,
    h2o_init_scores,
    local_attention,
    local_attention_gqa,
    quest_attention,
    quest_attention_gqa,
    sparq_attention,
    sparq_attention_gqa,
    streaming_attention,
    streaming_attention_gqa,
)
from papers.sparq.speed import timed_kernels


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def sparq_reference(q, K, V, r, k, local_k, length):
    """The paper's five steps for one head, in float64 numpy, written independently of the JAX version."""
    d = q.size
    K, V = K[:length], V[:length]
    i1 = np.argsort(-np.abs(q), kind="stable")[:r]
    temperature = np.sqrt(d * np.abs(q[i1]).sum() / np.abs(q).sum())
    s_hat = softmax(K[:, i1] @ q[i1] / temperature)
    forced = list(range(max(length - local_k, 0), length))
    rest = [i for i in np.argsort(-s_hat, kind="stable") if i not in forced]
    i2 = np.array(forced + rest[: max(k - len(forced), 0)])
    alpha = s_hat[i2].sum()
    y = softmax(K[i2] @ q / np.sqrt(d)) @ V[i2]
    return alpha * y + (1 - alpha) * V.mean(0)


def dense_reference(q, K, V, length):
    K, V = K[:length], V[:length]
    return softmax(K @ q / np.sqrt(q.size)) @ V


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    B, H, S, d = 2, 3, 50, 16
    q = rng.standard_normal((B, H, d))
    K = rng.standard_normal((B, H, S, d))
    V = rng.standard_normal((B, H, S, d))
    length = np.array([[50, 41, 37], [12, 50, 29]])
    return q, K, V, length


@pytest.mark.parametrize(("r", "k", "local_k"), [(4, 8, 0), (4, 8, 2), (16, 12, 12), (1, 1, 0), (8, 20, 5)])
def test_sparq_matches_the_papers_steps(data, r, k, local_k):
    q, K, V, length = data
    out, _ = sparq_attention(
        jnp.asarray(q, jnp.float32),
        jnp.asarray(K, jnp.float32),
        jnp.asarray(V, jnp.float32),
        r=r,
        k=k,
        local_k=local_k,
        length=jnp.asarray(length),
    )
    for b in range(2):
        for h in range(3):
            L = int(length[b, h])
            ref = sparq_reference(q[b, h], K[b, h], V[b, h], r, min(k, L), min(local_k, L), L)
            np.testing.assert_allclose(np.asarray(out[b, h]), ref, atol=2e-5, err_msg=f"row {b}, head {h}")


def test_sparq_with_every_component_and_position_is_dense(data):
    q, K, V = (jnp.asarray(x, jnp.float32) for x in data[:3])
    length = jnp.asarray(data[3])
    S, d = K.shape[-2], q.shape[-1]
    out, _ = sparq_attention(q, K, V, r=d, k=S, local_k=0, length=length)
    ref, _ = dense_attention(q, K, V, length)
    np.testing.assert_allclose(out, ref, atol=2e-6)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(
                ref[b, h], dense_reference(*(np.asarray(x)[b, h] for x in (q, K, V)), int(length[b, h])), atol=2e-6
            )


def test_a_single_selected_position_takes_the_rest_from_the_mean(data):
    q, K, V, _ = (jnp.asarray(x, jnp.float32) for x in data)
    out, _ = sparq_attention(q, K, V, r=16, k=1, local_k=1)  # only the last position, forced in
    s_hat = jax.nn.softmax(jnp.einsum("...sd,...d->...s", K, q) / 4.0, -1)
    alpha = s_hat[..., -1:]
    expected = alpha * V[..., -1, :] + (1 - alpha) * V.mean(-2)
    np.testing.assert_allclose(out, expected, atol=2e-6)


def _transfers(method, *arrays, **settings) -> int:
    """The transfer count a method returns, from tracing it (jax.eval_shape): the count is a Python int of the shapes,
    and running the method op by op would compile each op for each shape."""
    seen = []

    def traced(*a):
        out, transfers = method(*a, **settings)
        seen.append(transfers)
        return out

    jax.eval_shape(traced, *arrays)
    (transfers,) = seen
    assert isinstance(transfers, int), type(transfers)
    return transfers


@pytest.mark.parametrize(("S", "d", "r", "k"), [(2048, 128, 16, 128), (512, 64, 8, 32), (100, 16, 1, 1)])
def test_transfer_counts_equal_the_papers_formulas(S, d, r, k):
    q, K = jnp.ones((1, d)), jnp.ones((1, S, d))
    dense = _transfers(dense_attention, q, K, K)
    sparq = _transfers(sparq_attention, q, K, K, r=r, k=k, local_k=k // 4)
    local = _transfers(local_attention, q, K, K, k=k)
    assert dense == (2 + 2 * S) * d
    assert sparq == (2 + 2 * k) * d + d + S * r + 2 * d
    assert local == (2 + 2 * k) * d
    if (S, d, r, k) == (2048, 128, 16, 128):
        assert sparq / dense == pytest.approx(1 / 8, rel=0.02)  # the paper's example


def test_gqa_with_one_query_head_is_sparq_and_shares_the_gather(data):
    q, K, V = (jnp.asarray(x, jnp.float32) for x in data[:3])
    length = jnp.asarray(data[3])
    single, t1 = sparq_attention(q, K, V, r=4, k=8, local_k=2, length=length)
    grouped, tg = sparq_attention_gqa(q[..., None, :], K, V, r=4, k=8, local_k=2, length=length)
    np.testing.assert_allclose(grouped[..., 0, :], single, atol=1e-6)
    assert tg == t1
    q4 = jnp.asarray(np.random.default_rng(1).standard_normal((2, 3, 4, 16)), jnp.float32)
    out, t4 = sparq_attention_gqa(q4, K, V, r=4, k=8, local_k=2, length=length)
    assert out.shape == (2, 3, 4, 16) and t4 == t1 + 3 * 2 * 16  # only q and the outputs grow with the group
    # i1 from |q| summed over the group: with identical heads the group behaves as one head
    same = jnp.repeat(q[..., None, :], 4, axis=-2)
    out_same, _ = sparq_attention_gqa(same, K, V, r=4, k=8, local_k=2, length=length)
    np.testing.assert_allclose(out_same[..., 2, :], single, atol=1e-6)


def sparq_gqa_reference(q, K, V, r, k, local_k, length, rule="sum_logits"):
    """SparQ for one KV head and its g query heads (q [g, d]) in float64 numpy, selecting i2 as the reference
    implementation does (approximate logits summed over the group) or, for contrast, by the mean of the approximate
    softmax probabilities ("mean_probs")."""
    g, d = q.shape
    K, V = K[:length], V[:length]
    i1 = np.argsort(-np.abs(q).sum(0), kind="stable")[:r]
    temperature = np.sqrt(d * np.abs(q[:, i1]).sum(-1) / np.abs(q).sum(-1))  # [g]
    logits = q[:, i1] @ K[:, i1].T / temperature[:, None]  # [g, S]
    probs = np.stack([softmax(row) for row in logits])
    key = logits.sum(0) if rule == "sum_logits" else probs.mean(0)
    forced = list(range(max(length - local_k, 0), length))
    rest = [i for i in np.argsort(-key, kind="stable") if i not in forced]
    i2 = np.array(forced + rest[: max(k - len(forced), 0)])
    out = [
        probs[h, i2].sum() * (softmax(K[i2] @ q[h] / np.sqrt(d)) @ V[i2]) + (1 - probs[h, i2].sum()) * V.mean(0)
        for h in range(g)
    ]
    return np.stack(out)


def sparq_gqa_without_step5_reference(q, K, V, r, k, local_k, length):
    """SparQ for one KV head and its g query heads without step 5 (the paper's GQA models): softmax attention over
    the group's selected positions only, float64 numpy."""
    g, d = q.shape
    K, V = K[:length], V[:length]
    i1 = np.argsort(-np.abs(q).sum(0), kind="stable")[:r]
    temperature = np.sqrt(d * np.abs(q[:, i1]).sum(-1) / np.abs(q).sum(-1))
    key = (q[:, i1] @ K[:, i1].T / temperature[:, None]).sum(0)
    forced = list(range(max(length - local_k, 0), length))
    rest = [i for i in np.argsort(-key, kind="stable") if i not in forced]
    i2 = np.array(forced + rest[: max(k - len(forced), 0)])
    return np.stack([softmax(K[i2] @ q[h] / np.sqrt(d)) @ V[i2] for h in range(g)])


def test_gqa_without_step5_attends_the_selection_only():
    rng = np.random.default_rng(8)
    B, Hkv, g, S, d = 2, 3, 3, 40, 16
    q = 2.0 * rng.standard_normal((B, Hkv, g, d))
    K, V = rng.standard_normal((2, B, Hkv, S, d))
    length = np.array([[40, 33, 9], [12, 40, 29]])
    args = [jnp.asarray(x, jnp.float32) for x in (q, K, V)]
    out, transfer = sparq_attention_gqa(*args, r=4, k=10, local_k=3, length=jnp.asarray(length), reallocate=False)
    with_step5, transfer5 = sparq_attention_gqa(*args, r=4, k=10, local_k=3, length=jnp.asarray(length))
    assert transfer == transfer5 - 2 * d  # no mean of V read or updated
    assert transfer == 2 * g * d + S * 4 + 2 * 10 * d + d
    for b in range(B):
        for h in range(Hkv):
            want = sparq_gqa_without_step5_reference(q[b, h], K[b, h], V[b, h], 4, 10, 3, int(length[b, h]))
            np.testing.assert_allclose(np.asarray(out[b, h]), want, atol=3e-5)
    assert not np.allclose(np.asarray(out), np.asarray(with_step5), atol=1e-3)  # step 5 changes the output


@pytest.mark.parametrize(("r", "k", "local_k"), [(4, 8, 0), (4, 8, 2), (16, 12, 3), (8, 20, 5)])
def test_gqa_selects_by_the_groups_summed_approximate_logits(r, k, local_k):
    rng = np.random.default_rng(7)
    B, Hkv, g, S, d = 2, 3, 3, 50, 16
    q = 2.0 * rng.standard_normal((B, Hkv, g, d))  # peaked scores, so the two selection rules differ somewhere
    K, V = rng.standard_normal((2, B, Hkv, S, d))
    length = np.array([[50, 41, 37], [12, 50, 29]])
    out, _ = sparq_attention_gqa(
        *(jnp.asarray(x, jnp.float32) for x in (q, K, V)), r=r, k=k, local_k=local_k, length=jnp.asarray(length)
    )
    differs = 0
    for b in range(B):
        for h in range(Hkv):
            args = (q[b, h], K[b, h], V[b, h], r, k, local_k, int(length[b, h]))
            want = sparq_gqa_reference(*args)
            np.testing.assert_allclose(np.asarray(out[b, h]), want, atol=3e-5, err_msg=f"row {b}, KV head {h}")
            differs += not np.allclose(sparq_gqa_reference(*args, rule="mean_probs"), want, atol=3e-5)
    if k < 12:  # the rules pick different positions for some head: the test can tell them apart
        assert differs > 0


def test_local_window_attends_the_last_k(data):
    q, K, V, length = data
    out, _ = local_attention(*(jnp.asarray(x, jnp.float32) for x in (q, K, V)), k=5, length=jnp.asarray(length))
    for b in range(2):
        for h in range(3):
            L = int(length[b, h])
            ref = softmax(K[b, h, L - 5 : L] @ q[b, h] / 4.0) @ V[b, h, L - 5 : L]
            np.testing.assert_allclose(np.asarray(out[b, h]), ref, atol=2e-6)


def test_h2o_keeps_the_budget_and_evicts_the_least_attended():
    rng = np.random.default_rng(3)
    S, d, k, local_k = 30, 8, 6, 2
    q = jnp.asarray(rng.standard_normal((1, d)), jnp.float32)
    K = jnp.asarray(rng.standard_normal((1, S, d)), jnp.float32)
    probs = jnp.tril(jnp.ones((1, 20, 20))) / jnp.arange(1, 21)[:, None]  # uniform causal attention
    state = h2o_init(jnp.pad(probs, ((0, 0), (0, S - 20), (0, S - 20))), 20, k=k, local_k=local_k)
    assert int(state.kept.sum()) == k
    assert bool(state.kept[0, 18]) and bool(state.kept[0, 19])  # the recent window
    assert bool(state.kept[0, 0])  # the first position gathered the most attention
    for length in range(21, 26):
        _, transfer, new = h2o_attention(q, K, K, state, k=k, local_k=local_k, length=length)
        assert int(new.kept.sum()) == k and bool(new.kept[0, length - 1])
        assert transfer == (2 + 2 * k) * d + 2 * k
        evicted = np.flatnonzero(np.asarray(state.kept[0] | (np.arange(S) == length - 1)) & ~np.asarray(new.kept[0]))
        if evicted.size:
            kept_before = np.flatnonzero(np.asarray(state.kept[0]) & (np.arange(S) < length - local_k))
            scores = np.asarray(new.score[0])
            assert scores[evicted[0]] == scores[kept_before].min()
        state = new


def test_local_window_with_grouped_queries():
    rng = np.random.default_rng(5)
    B, Hkv, g, S, d, k = 2, 3, 3, 24, 8, 5
    q = rng.standard_normal((B, Hkv, g, d)).astype(np.float32)
    K, V = (rng.standard_normal((B, Hkv, S, d)).astype(np.float32) for _ in range(2))
    out, transfer = local_attention_gqa(jnp.asarray(q), jnp.asarray(K), jnp.asarray(V), k=k, length=17)
    assert transfer == 2 * g * d + 2 * k * d  # one read of the window per KV head
    for b, h, j in np.ndindex(B, Hkv, g):
        ref = softmax(K[b, h, 12:17] @ q[b, h, j] / np.sqrt(d)) @ V[b, h, 12:17]
        np.testing.assert_allclose(np.asarray(out[b, h, j]), ref, atol=2e-6)
    one, _ = local_attention_gqa(jnp.asarray(q[:, :, :1]), jnp.asarray(K), jnp.asarray(V), k=k, length=17)
    mha, _ = local_attention(jnp.asarray(q[:, :, 0]), jnp.asarray(K), jnp.asarray(V), k=k, length=17)
    np.testing.assert_allclose(np.asarray(one[:, :, 0]), np.asarray(mha), atol=1e-6)


def h2o_step_reference(q, K, V, score, kept, k, local_k, length):
    """One H2O step for one KV head and its g query heads, float64 numpy: the newest position joins, each query
    head attends over the kept positions, the group's attention is added to the scores, and if more than k are
    kept the least-scored one outside the recent window goes."""
    d = q.shape[-1]
    kept = kept.copy()
    kept[length - 1] = True
    idx = np.flatnonzero(kept)
    p = np.stack([softmax(K[idx] @ qh / np.sqrt(d)) for qh in q])  # [g, kept]
    out = p @ V[idx]
    score = score.copy()
    score[idx] += p.sum(0)
    if kept.sum() > k:
        candidates = [i for i in idx if i < length - local_k]
        kept[min(candidates, key=lambda i: score[i])] = False
    return out, score, kept


def test_h2o_with_grouped_queries_keeps_one_set_per_kv_head():
    rng = np.random.default_rng(6)
    Hkv, g, S, d, k, local_k = 2, 3, 30, 8, 7, 2
    probs = rng.dirichlet(np.ones(20), (Hkv, g, 20)) * np.tril(np.ones((20, 20)))
    sums = probs.sum((1, 2))  # what prefill(column_sums=True) gives: summed over queries and the group
    state = h2o_init_scores(jnp.asarray(np.pad(sums, ((0, 0), (0, S - 20))), jnp.float32), 20, k=k, local_k=local_k)
    same = h2o_init(
        jnp.asarray(np.pad(probs.sum(1), ((0, 0), (0, S - 20), (0, S - 20))), jnp.float32), 20, k=k, local_k=local_k
    )
    assert np.array_equal(state.kept, same.kept) and int(state.kept.sum()) == Hkv * k
    K, V = (rng.standard_normal((Hkv, S, d)) for _ in range(2))
    score, kept = np.array(state.score, np.float64), np.array(state.kept)
    for length in range(21, 27):
        q = rng.standard_normal((Hkv, g, d))
        out, transfer, state = h2o_attention_gqa(
            *(jnp.asarray(a, jnp.float32) for a in (q, K, V)), state, k=k, local_k=local_k, length=length
        )
        assert transfer == (2 * g + 2 * k) * d + 2 * k
        for h in range(Hkv):
            ref, score[h], kept[h] = h2o_step_reference(q[h], K[h], V[h], score[h], kept[h], k, local_k, length)
            np.testing.assert_allclose(np.asarray(out[h]), ref, atol=1e-5)
        assert np.array_equal(np.asarray(state.kept), kept) and int(state.kept.sum()) == Hkv * k
        np.testing.assert_allclose(np.asarray(state.score), score, rtol=1e-5, atol=1e-5)
    # one query head per KV head: the MHA function
    q = jnp.asarray(rng.standard_normal((Hkv, 1, d)), jnp.float32)
    Kj, Vj = jnp.asarray(K, jnp.float32), jnp.asarray(V, jnp.float32)
    a, _, sa = h2o_attention_gqa(q, Kj, Vj, state, k=k, local_k=local_k, length=27)
    b, _, sb = h2o_attention(q[:, 0], Kj, Vj, state, k=k, local_k=local_k, length=27)
    np.testing.assert_allclose(np.asarray(a[:, 0]), np.asarray(b), atol=1e-6)
    assert np.array_equal(np.asarray(sa.kept), np.asarray(sb.kept))


def test_speed_kernel_computes_sparq():
    """The timed kernel (K[:, i1] read as rows of K transposed, the mean of V given) is SparQ with k/4 local."""
    key = jax.random.split(jax.random.key(1), 3)
    q = jax.random.normal(key[0], (4, 64))
    K = jax.random.normal(key[1], (4, 300, 64))
    V = jax.random.normal(key[2], (4, 300, 64))
    fast = timed_kernels(8, 40)[1](q, K, jnp.swapaxes(K, -1, -2), V, jnp.mean(V, -2))
    ref, _ = sparq_attention(q, K, V, r=8, k=40, local_k=10)
    np.testing.assert_allclose(fast, ref, atol=1e-5)
    # with a cache length and lead dims [2, 2]: the rows of K transposed, masked as the gathered columns are
    n = jnp.asarray([[300, 217], [90, 41]])
    lead = (2, 2, *q.shape[1:])
    kept, _ = sparq_attention(
        q.reshape(lead), K.reshape(2, 2, 300, 64), V.reshape(2, 2, 300, 64), r=8, k=40, local_k=10, length=n,
        K_t=jnp.swapaxes(K, -1, -2).reshape(2, 2, 64, 300),
    )  # fmt: skip
    ref, _ = sparq_attention(
        q.reshape(lead), K.reshape(2, 2, 300, 64), V.reshape(2, 2, 300, 64), r=8, k=40, local_k=10, length=n
    )
    np.testing.assert_allclose(kept, ref, atol=1e-5)
    with pytest.raises(ValueError, match=r"K_t must be K transposed, \(4, 64, 300\); got \(4, 300, 64\)"):
        sparq_attention(q, K, V, r=8, k=40, K_t=K)


def test_jit_and_bad_arguments():
    q, K = jnp.ones((2, 8)), jnp.ones((2, 10, 8))
    jax.jit(lambda q, K: sparq_attention(q, K, K, r=2, k=3)[0])(q, K)
    with pytest.raises(ValueError, match=r"r=9 must be in \[1, d=8\]"):
        sparq_attention(q, K, K, r=9, k=3)
    with pytest.raises(ValueError, match=r"k=11 must be in \[1, S=10\]"):
        sparq_attention(q, K, K, r=2, k=11)
    with pytest.raises(ValueError, match=r"local_k=4 must be in \[0, k=3\]"):
        sparq_attention(q, K, K, r=2, k=3, local_k=4)
    with pytest.raises(ValueError, match="leading dims and d"):
        sparq_attention(jnp.ones((3, 8)), K, K, r=2, k=3)
    with pytest.raises(ValueError, match="K, V"):
        dense_attention(q, K, jnp.ones((2, 9, 8)))


def streaming_reference(q, K, V, k, sinks, length):
    """StreamingLLM for one KV head and its g query heads (q [g, d]) in float64 numpy: the first `sinks` valid
    positions and the last k - sinks, each position once."""
    positions = sorted(set(range(min(sinks, length))) | set(range(max(length - (k - sinks), 0), length)))
    return np.stack([softmax(K[positions] @ qh / np.sqrt(q.shape[-1])) @ V[positions] for qh in q])


def quest_reference(q, K, V, k, page, length):
    """Quest for one KV head and its g query heads (q [g, d]) in float64 numpy: each page's bound from the min and max
    of its valid keys, summed over the group; the newest valid position's page and the best others, k/page in all;
    attention over the valid positions of the chosen pages."""
    bounds = []
    for start in range(0, K.shape[0], page):
        keys = K[start : min(start + page, length)]
        if len(keys) == 0:
            bounds.append(-np.inf)
            continue
        hi, lo = keys.max(0), keys.min(0)
        bounds.append(sum(np.maximum(qh * hi, qh * lo).sum() for qh in q))
    newest = (length - 1) // page
    others = [j for j in np.argsort(-np.array(bounds), kind="stable") if j != newest]
    chosen = [newest, *others[: k // page - 1]]
    positions = [i for j in chosen for i in range(j * page, (j + 1) * page) if i < length]
    return np.stack([softmax(K[positions] @ qh / np.sqrt(q.shape[-1])) @ V[positions] for qh in q])


@pytest.fixture
def grouped_data():
    """Three query heads per KV head, S = 48, float32 values held in float64 for the references; lengths include 3
    (below every k tested), lengths that are not multiples of the pages, and a full cache."""
    rng = np.random.default_rng(11)
    B, Hkv, g, S, d = 2, 3, 3, 48, 16
    q = rng.standard_normal((B, Hkv, g, d)).astype(np.float32).astype(np.float64)
    K, V = (rng.standard_normal((B, Hkv, S, d)).astype(np.float32).astype(np.float64) for _ in range(2))
    length = np.array([[48, 41, 37], [3, 30, 29]])
    return q, K, V, length


def _jax(*arrays):
    return tuple(jnp.asarray(x, jnp.float32) for x in arrays)


def _dense_grouped(q, K, V, length):
    """dense_attention for each query head of a group, the KV head's cache repeated for each."""
    K, V = (jnp.broadcast_to(jnp.asarray(x, jnp.float32)[..., None, :, :], q.shape[:-1] + x.shape[-2:]) for x in (K, V))
    return dense_attention(jnp.asarray(q, jnp.float32), K, V, jnp.asarray(length)[..., None])[0]


@pytest.mark.parametrize(("k", "sinks"), [(8, 4), (12, 4), (6, 0), (5, 1), (40, 4), (48, 4)])
def test_streaming_matches_the_reference(grouped_data, k, sinks):
    q, K, V, length = grouped_data
    out, transfer = streaming_attention_gqa(*_jax(q, K, V), k=k, sinks=sinks, length=jnp.asarray(length))
    mha, mha_transfer = streaming_attention(*_jax(q[..., 0, :], K, V), k=k, sinks=sinks, length=jnp.asarray(length))
    d, g = q.shape[-1], q.shape[-2]
    assert transfer == 2 * g * d + 2 * k * d and mha_transfer == 2 * d + 2 * k * d
    for b, h in np.ndindex(*length.shape):
        L = int(length[b, h])
        want = streaming_reference(q[b, h], K[b, h], V[b, h], k, sinks, L)
        np.testing.assert_allclose(np.asarray(out[b, h]), want, atol=2e-5, err_msg=f"row {b}, KV head {h}")
        np.testing.assert_allclose(np.asarray(mha[b, h]), want[0], atol=2e-5, err_msg=f"row {b}, head {h}")


def test_streaming_over_at_least_every_valid_position_is_dense(grouped_data):
    q, K, V, length = grouped_data
    short = np.minimum(length, 10)  # 10 and 3: every valid position fits in k = 10, the sinks overlap the window
    for k, L in ((48, length), (10, short)):
        out, _ = streaming_attention_gqa(*_jax(q, K, V), k=k, sinks=4, length=jnp.asarray(L))
        dense = _dense_grouped(q, K, V, L)
        np.testing.assert_allclose(np.asarray(out), np.asarray(dense), atol=2e-6)


@pytest.mark.parametrize(("k", "page"), [(8, 4), (16, 8), (24, 4), (4, 4), (12, 6), (16, 16)])
def test_quest_matches_the_reference(grouped_data, k, page):
    q, K, V, length = grouped_data
    out, transfer = quest_attention_gqa(*_jax(q, K, V), k=k, page=page, length=jnp.asarray(length))
    mha, mha_transfer = quest_attention(*_jax(q[..., 0, :], K, V), k=k, page=page, length=jnp.asarray(length))
    S, d, g = K.shape[-2], q.shape[-1], q.shape[-2]
    assert transfer == 2 * g * d + 2 * d * (S // page) + 2 * k * d
    assert mha_transfer == 2 * d + 2 * d * (S // page) + 2 * k * d
    for b, h in np.ndindex(*length.shape):
        L = int(length[b, h])
        want = quest_reference(q[b, h], K[b, h], V[b, h], k, page, L)
        np.testing.assert_allclose(np.asarray(out[b, h]), want, atol=2e-5, err_msg=f"row {b}, KV head {h}")
        want = quest_reference(q[b, h, :1], K[b, h], V[b, h], k, page, L)
        np.testing.assert_allclose(np.asarray(mha[b, h]), want[0], atol=2e-5, err_msg=f"row {b}, head {h}")


def test_quest_over_every_page_is_dense(grouped_data):
    q, K, V, length = grouped_data
    out, _ = quest_attention_gqa(*_jax(q, K, V), k=48, page=8, length=jnp.asarray(length))
    dense = _dense_grouped(q, K, V, length)
    np.testing.assert_allclose(np.asarray(out), np.asarray(dense), atol=2e-6)


def test_quest_picks_the_page_with_the_highest_bound():
    rng = np.random.default_rng(12)
    S, d, page, g = 64, 8, 8, 2
    q = rng.standard_normal((g, d))
    K = 0.1 * rng.standard_normal((S, d))
    V = rng.standard_normal((S, d))
    K[19] = 2.0 * q.sum(0)  # page 2 holds a key aligned with the group's queries: the highest bound
    out, _ = quest_attention_gqa(*_jax(q, K, V), k=2 * page, page=page, length=45)
    positions = list(range(16, 24)) + list(range(40, 45))  # page 2 and the newest position's page, 5
    for h in range(g):
        want = softmax(K[positions] @ q[h] / np.sqrt(d)) @ V[positions]
        np.testing.assert_allclose(np.asarray(out[h]), want, atol=2e-5)


def test_streaming_and_quest_jit(grouped_data):
    q, K, V, length = grouped_data
    args = (*_jax(q, K, V), jnp.asarray(length))
    for fn, kw in ((streaming_attention_gqa, dict(k=8, sinks=4)), (quest_attention_gqa, dict(k=16, page=8))):
        eager, _ = fn(*args[:3], length=args[3], **kw)
        jitted = jax.jit(lambda q, K, V, length, fn=fn, kw=kw: fn(q, K, V, length=length, **kw)[0])(*args)
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), atol=1e-6)


def test_streaming_and_quest_bad_arguments():
    q, K = jnp.ones((2, 3, 8)), jnp.ones((2, 48, 8))
    with pytest.raises(ValueError, match=r"streaming_attention_gqa: need 0 <= sinks=4 < k=4 <= S=48"):
        streaming_attention_gqa(q, K, K, k=4, sinks=4)
    with pytest.raises(ValueError, match=r"sinks=-1 < k=8"):
        streaming_attention_gqa(q, K, K, k=8, sinks=-1)
    with pytest.raises(ValueError, match=r"streaming_attention: need 0 <= sinks=4 < k=49 <= S=48"):
        streaming_attention(q[:, 0], K, K, k=49)
    with pytest.raises(ValueError, match=r"quest_attention_gqa: page=5 must be a positive divisor of S=48"):
        quest_attention_gqa(q, K, K, k=10, page=5)
    with pytest.raises(ValueError, match=r"page=0 must be a positive divisor"):
        quest_attention_gqa(q, K, K, k=16, page=0)
    with pytest.raises(ValueError, match=r"quest_attention: k=12 must be a multiple of page=8 in \[8, S=48\]"):
        quest_attention(q[:, 0], K, K, k=12, page=8)
    with pytest.raises(ValueError, match=r"k=0 must be a multiple of page=16"):
        quest_attention_gqa(q, K, K, k=0)
    with pytest.raises(ValueError, match=r"k=64 must be a multiple of page=16 in \[16, S=48\]"):
        quest_attention_gqa(q, K, K, k=64)
    with pytest.raises(ValueError, match="quest_attention: leading dims and d"):
        quest_attention(jnp.ones((3, 8)), K, K, k=16)
    with pytest.raises(ValueError, match=r"streaming_attention_gqa: q must be \[..., g, d\]"):
        streaming_attention_gqa(q[:, 0], K, K, k=8)

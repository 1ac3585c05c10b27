"""The SparQ evaluations (papers.sparq.tasks) on a tiny random Llama with SmolLM2's tokenizer: greedy generation and
teacher-forced scoring from a shared prefill equal what the full forward pass gives, methods never see each other's
cache, the task builders put the prompt, needle and question where they say, and `evaluate` resumes from its store."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn.decode_methods import DECODE_METHODS, H2O, Dense, Local, Quest, SparQ, Streaming
from papers.sparq.config import Config
from papers.sparq.results import Method
from papers.sparq.run import EvalData, evaluate, methods_for, spaced_windows
from papers.sparq.tasks import (
    LM,
    QUESTION,
    Decoder,
    common_prefix,
    context_batch,
    context_tasks,
    diverged,
    insert_needles,
)


@pytest.fixture(scope="module")
def lm(tiny_llama):
    model, params, tok = tiny_llama
    return LM(model, params, lambda ids: tok.decode([int(i) for i in ids])), tok


@pytest.fixture(scope="module")
def ids(lm):
    _, tok = lm
    text = "ROMEO.\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n" * 4
    row = np.asarray(tok.encode(text).ids[:48], np.int32)
    return np.stack([row, np.roll(row, 7), np.roll(row, 19)])


# the tiny Llama: head dimension 8, 2 query heads per KV head; budgets set at a cache of 40 positions
METHODS = [
    Dense(),
    SparQ.for_ratio(0.5, 40, 8, 2, k=8),
    H2O.for_ratio(0.5, 40, 8, 2),
    Local.for_ratio(0.25, 40, 8, 2),
    Streaming.for_ratio(0.5, 40, 8, 2, sinks=2),
    Quest.for_ratio(0.5, 40, 8, 2, page=4),
]


def test_budgets_reach_the_ratio_with_the_papers_settings():
    """SparQ keeps k (the paper's 128) and takes r from the budget; the others take k; each lands near its ratio of
    the dense transfer by the paper's formulas, and a ratio no setting reaches gives None."""
    L, d, g = 2088, 64, 3
    dense = Dense.for_ratio(1.0, L, d, g).transfer(L, d, g)
    assert dense == 2 * g * d + 2 * L * d
    sparq = SparQ.for_ratio(1 / 8, L, d, g, reallocate=False)
    assert (sparq.r, sparq.k, sparq.local_k) == (8, 128, 32)  # the operating point: r = 8 of 64
    assert sparq.transfer(L, d, g) == 2 * g * d + L * 8 + 2 * 128 * d + d
    for kind in (SparQ, H2O, Local, Streaming, Quest):
        for ratio in (1 / 2, 1 / 4, 1 / 8):
            m = kind.for_ratio(ratio, L, d, g)
            assert m.transfer(L, d, g) / dense == pytest.approx(ratio, rel=0.1), m
    # at 1/16, k = 128 alone moves 2kd / (2Ld) = 1/16: the nearest SparQ is r = 1 (1/14), Quest's page bounds alone
    # move 1/16 (the nearest is one page); at 1/32 neither is within 1.25x of the target
    assert SparQ.for_ratio(1 / 16, L, d, g).r == 1 and Quest.for_ratio(1 / 16, L, d, g).k == 16
    assert SparQ.for_ratio(1 / 32, L, d, g) is None and Quest.for_ratio(1 / 32, L, d, g) is None
    assert Local.for_ratio(1 / 16, L, d, g).k == 128  # the local window reads as much as SparQ's k


def test_results_store_each_method_as_the_record_they_always_had():
    """`Method.of` stores a method as the flat record Results always held (same fields, same values: stored runs are
    read back unchanged) and `build` gives the method back; the table of names covers every method."""
    assert list(DECODE_METHODS) == ["dense", "sparq", "h2o", "local", "streaming", "quest"]
    assert Method.of(Dense()) == Method("dense")
    assert Method.of(METHODS[1]) == Method("sparq", 0.5, r=METHODS[1].r, k=8, local_k=2)
    assert Method.of(METHODS[2]) == Method("h2o", 0.5, k=METHODS[2].k, local_k=METHODS[2].k // 4)
    assert Method.of(METHODS[3]) == Method("local", 0.25, k=METHODS[3].k)
    assert Method.of(METHODS[4]) == Method("streaming", 0.5, k=METHODS[4].k, sinks=2)
    assert Method.of(METHODS[5]) == Method("quest", 0.5, k=METHODS[5].k, page=4)
    for m in METHODS:
        assert Method.of(m).build() == m and Method.of(m).label == m.label


def test_counted_transfer_follows_the_scoring_kernels_programs():
    """What each scoring kernel's traced program reads and writes equals the paper's formula up to two terms we know:
    the current token's key and value are read (2d; the formula treats them as free) and SparQ's key write to its
    transposed copy happens in the cache update (d); H2O's masked kernel reads everything, so it is not counted."""
    L, d, g = 208, 16, 2
    for kind, extra in ((Dense, 0), (Local, 2 * d), (Streaming, 2 * d), (SparQ, d), (Quest, 0)):
        m = kind.for_ratio(1 / 4, L, d, g, k=16, sinks=2, page=8, reallocate=False)
        assert m.counted_transfer(L, d, g) == m.transfer(L, d, g) + extra, kind
    assert H2O.for_ratio(1 / 4, L, d, g).counted_transfer(L, d, g) is None
    # with step 5 the scoring kernel reduces over all of V for its mean: the count sees V read whole (L d, which
    # covers its gather of k + 1 rows) where the formula has the k gathered rows (k d) and the mean's 2d
    m = SparQ.for_ratio(1 / 4, L, d, g, k=16)
    assert m.counted_transfer(L, d, g) == m.transfer(L, d, g) + L * d - m.k * d - 2 * d


def test_dense_generation_and_scoring_equal_the_full_forward(lm, ids):
    lm_, _ = lm
    decoder = Decoder(lm_, METHODS)
    cache, logits, sums = decoder.start(ids[:, :30], 40)
    generated = decoder.generate(METHODS[0], cache, sums, logits, 6)
    seq = np.zeros((3, 36), np.int32)
    seq[:, :30] = ids[:, :30]
    forward = jax.jit(lambda ids: lm_.model.apply(lm_.params, ids))  # causal: padding after t changes nothing at t
    for t in range(30, 36):  # greedy by recomputing the whole sequence each time
        seq[:, t] = np.argmax(np.asarray(forward(jnp.asarray(seq)))[:, t - 1], -1)
    np.testing.assert_array_equal(generated, seq[:, 30:])
    nats = decoder.score(METHODS[0], cache, sums, logits, ids[:, 30:40])
    logp = jax.nn.log_softmax(lm_.model.apply(lm_.params, jnp.asarray(ids[:, :40])), -1)
    want = -np.asarray(jnp.take_along_axis(logp[:, 29:39], jnp.asarray(ids[:, 30:40])[..., None], -1))[..., 0]
    np.testing.assert_allclose(nats, want.sum(1), rtol=1e-4)


def test_generation_stops_once_done_says_so(lm, ids):
    lm_, _ = lm
    decoder = Decoder(lm_, METHODS[:1])
    cache, logits, sums = decoder.start(ids[:, :30], 40)
    full = decoder.generate(METHODS[0], cache, sums, logits, 6)
    short = decoder.generate(METHODS[0], cache, sums, logits, 6, done=lambda so_far: so_far.shape[1] >= 3)
    np.testing.assert_array_equal(short, full[:, :3])
    # rows that diverged from their truth are final; a row still on its truth is not; a row holding all of it is
    assert diverged(["abX", "ab"], ["abc", "ab"]) and not diverged(["ab", "abX"], ["abc", "abc"])


def test_methods_start_from_the_same_prefill_and_do_not_share_caches(lm, ids):
    lm_, _ = lm
    decoder = Decoder(lm_, METHODS)
    cache, logits, sums = decoder.start(ids[:, :30], 40)
    first = {m: decoder.generate(m, cache, sums, logits, 8) for m in METHODS}
    again = {m: decoder.generate(m, cache, sums, logits, 8) for m in reversed(METHODS)}
    for m in METHODS:  # the donated step caches never wrote into the shared prefill
        np.testing.assert_array_equal(first[m], again[m])


def test_every_method_attends_the_current_token_for_free(lm, ids):
    """k counts cache positions read besides the current token's (the reference's k + 1): a local window of k
    generates what a window of k + 1 positions does, and dense attention over a cache of k + 1 positions equals it."""
    lm_, _ = lm
    local = Local.for_ratio(0.25, 40, 8, 2)
    decoder = Decoder(lm_, [local])
    cache, logits, sums = decoder.start(ids[:, : local.k], 40)  # the cache holds exactly k positions
    # the first decode step writes the (k+1)th: a window of k + 1 is every position, as dense
    dense = Decoder(lm_, METHODS[:1])
    np.testing.assert_array_equal(
        decoder.generate(local, cache, sums, logits, 2), dense.generate(METHODS[0], cache, sums, logits, 2)
    )


def _batch(lm_, ids, tok=None, rng=0):
    """Windows of 40 ids: a 30-id context, then 10 following ids (the BPC text)."""
    encode = None if tok is None else (lambda t: tok.encode(t).ids)
    return context_batch(lm_, ids[:, :40], 10, 6, 5, 1000, np.random.default_rng(rng), encode=encode)


def test_repetition_prompt_is_copied_from_the_context_and_scored_in_characters(lm, ids):
    lm_, _ = lm
    batch = _batch(lm_, ids)
    assert batch.contexts.shape == (3, 30) and batch.prompts.shape == (3, 6) and batch.question is None
    np.testing.assert_array_equal(batch.following, ids[:, 30:40])
    for row, prompt, truth in zip(batch.contexts, batch.prompts, batch.truth, strict=True):
        starts = [s for s in range(25) if (row[s : s + 6] == prompt).all()]
        assert starts and any(lm_.text(row[s + 6 : s + 11]) == truth for s in starts)
    cut = context_batch(lm_, ids[:, :40], 10, 6, 5, 4, np.random.default_rng(0))
    assert [len(t) for t in cut.truth] == [4, 4, 4]  # the truth is cut to the characters scored
    assert common_prefix("abcde", "abXde") == 2 and common_prefix("abc", "abc") == 3 and common_prefix("", "a") == 0
    out = context_tasks(Decoder(lm_, METHODS[:1]), batch, 5, 0, 48)
    assert set(out) == {"repetition", "bpc"}
    assert all(0 <= s <= len(t) for s, t in zip(out["repetition"][METHODS[0]], batch.truth, strict=True))


def test_chunked_continuations_equal_prefilling_each_whole_sequence(lm, ids):
    """The shared context prefill continued by the prompt (or the question) gives what prefilling the whole
    sequence gives, and the BPC text is scored as the full forward scores it."""
    lm_, tok = lm
    batch = _batch(lm_, ids, tok, rng=3)
    decoder = Decoder(lm_, METHODS[:1])
    out = context_tasks(decoder, batch, 4, 5, 60)
    for task, suffix, steps in (("repetition", batch.prompts, 4), ("needle", None, 5)):
        tail = suffix if suffix is not None else np.broadcast_to(batch.question, (3, batch.question.size))
        seq = np.concatenate([batch.contexts, tail], 1)
        cache, logits, sums = decoder.start(seq, 60)
        generated = decoder.generate(METHODS[0], cache, sums, logits, steps)
        if task == "repetition":
            want = [common_prefix(lm_.text(g), t) for g, t in zip(generated, batch.truth, strict=True)]
            # generation stopped once every row had diverged: the scores are those of the full continuation
            assert out[task][METHODS[0]] == want
        else:
            want = [float(lm_.text(g).lstrip().startswith(a)) for g, a in zip(generated, batch.answers, strict=True)]
            assert out[task][METHODS[0]] == want
    seq = np.concatenate([batch.contexts, batch.following], 1)
    logp = jax.nn.log_softmax(lm_.model.apply(lm_.params, jnp.asarray(seq)), -1)
    nats = -np.asarray(jnp.take_along_axis(logp[:, 29:39], jnp.asarray(batch.following)[..., None], -1))[..., 0]
    chars = np.array([len(lm_.text(f)) for f in batch.following])
    np.testing.assert_allclose(out["bpc"][METHODS[0]], nats.sum(1) / np.log(2) / chars, rtol=1e-4)


def test_needles_sit_in_the_contexts_at_increasing_depths(lm, ids):
    lm_, tok = lm
    rows, answers = insert_needles(lm_, lambda t: tok.encode(t).ids, ids[:, :40], np.random.default_rng(1))
    assert rows.shape == (3, 40)
    for row, answer in zip(rows, answers, strict=True):
        assert len(answer) == 5 and answer.isdigit() and answer[0] != "0"
        assert f"The secret number is {answer}.\n" in lm_.text(row)
    depths = [lm_.text(r).index("The secret") / len(lm_.text(r)) for r in rows]
    assert depths == sorted(depths)
    batch = context_batch(
        lm_, np.concatenate([ids[:, :40], ids[:, :8]], 1), 8, 6, 5, 100, np.random.default_rng(1),
        encode=lambda t: tok.encode(t).ids,
    )  # fmt: skip
    assert lm_.text(batch.question) == QUESTION and batch.answers == answers


def test_evaluate_reports_every_method_and_resumes_from_its_store(lm, ids, tmp_path, monkeypatch):
    lm_, tok = lm
    c = Config(methods=["sparq", "h2o", "local"], ratios=[0.5, 0.25], claim_ratio=0.25, k=8)
    data = EvalData(_batch(lm_, ids, tok), 4, 5, 60, 2, 8, 2, 36)
    methods, unreachable = methods_for(c, data)
    assert [m.label for m in methods] == ["dense", "sparq 1/2", "h2o 1/2", "local 1/2", "h2o 1/4", "local 1/4"]
    assert unreachable == [("sparq", 0.25)]  # k = 8 of a 36-position cache is already beyond 1/4
    results = evaluate(c, lm_, data, methods, tmp_path, seed=0)
    assert [r.method.label for r in results] == [m.label for m in methods]
    for r in results:
        assert len(r.scores) == 3 and len(r.needles) == 3 and len(r.bpcs) == 3  # the padded row dropped
        assert all(np.isfinite(r.bpcs)) and r.bpc == pytest.approx(np.mean(r.bpcs))
    assert results[0].transfer == 1.0 and results[1].transfer == pytest.approx(0.5, rel=0.25)
    entries = {
        tuple(json.loads(p.read_text())["key"]["contexts"]): p.parent for p in tmp_path.glob("evaluation/*/entry.json")
    }
    assert sorted(entries) == [(0, 2), (2, 3)]  # one memo entry per batch
    part = json.loads((entries[(2, 3)] / "value.json").read_text())
    assert set(part) == {"repetition", "needle", "bpc"}
    assert set(part["needle"]) == {m.label for m in methods}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished batch was recomputed")

    monkeypatch.setattr(Decoder, "start", refuse)
    again = evaluate(c, lm_, data, methods, tmp_path, seed=0)
    for a, b in zip(results, again, strict=True):
        assert a == b  # every outcome, transfer and count, read back from the store
    with pytest.raises(AssertionError, match="recomputed"):  # a fresh run (no resume) evaluates again
        evaluate(c, lm_, data, methods, tmp_path, seed=0, reuse=False)
    with pytest.raises(AssertionError, match="recomputed"):  # another seed: other entries
        evaluate(c, lm_, data, methods, tmp_path, seed=1)


def test_spaced_windows_cover_the_stream():
    stream = np.arange(100)
    w = spaced_windows(stream, 4, 10)
    assert w.shape == (4, 10) and w[0, 0] == 0 and w[-1, -1] == 99
    assert (np.diff(w[:, 0]) > 10).all()  # non-overlapping when the stream is long enough
    np.testing.assert_array_equal(spaced_windows(stream, 1, 10), stream[None, :10])
    with pytest.raises(ValueError, match="cannot hold a window of 200"):
        spaced_windows(stream, 2, 200)

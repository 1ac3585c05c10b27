"""The SparQ evaluations (papers.sparq.tasks) on a tiny random Llama with SmolLM2's tokenizer: greedy generation and
teacher-forced scoring from a shared prefill equal what the full forward pass gives, methods never see each other's
cache, the task builders put the prompt, needle and question where they say, and `evaluate` resumes from its store."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from papers.sparq import Config, EvalData, evaluate, spaced_windows
from papers.sparq.tasks import (
    LM,
    QUESTION,
    Decoder,
    common_prefix,
    context_batch,
    context_tasks,
    insert_needles,
    make_method,
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


METHODS = [
    make_method("dense", 1.0, 8, 40),
    make_method("sparq", 0.5, 8, 40),
    make_method("h2o", 0.5, 8, 40),
    make_method("local", 0.25, 8, 40),
]


def test_dense_generation_and_scoring_equal_the_full_forward(lm, ids):
    lm_, _ = lm
    decoder = Decoder(lm_, METHODS)
    cache, logits, sums = decoder.start(ids[:, :30], 40)
    generated, transfer = decoder.generate(METHODS[0], cache, sums, logits, 6)
    seq = np.zeros((3, 36), np.int32)
    seq[:, :30] = ids[:, :30]
    forward = jax.jit(lambda ids: lm_.model.apply(lm_.params, ids))  # causal: padding after t changes nothing at t
    for t in range(30, 36):  # greedy by recomputing the whole sequence each time
        seq[:, t] = np.argmax(np.asarray(forward(jnp.asarray(seq)))[:, t - 1], -1)
    np.testing.assert_array_equal(generated, seq[:, 30:])
    assert transfer == 2 * (2 * 2 + 2 * 40) * 8  # two layers, dense per KV head: (2g + 2S) d
    nats, _ = decoder.score(METHODS[0], cache, sums, logits, ids[:, 30:40])
    logp = jax.nn.log_softmax(lm_.model.apply(lm_.params, jnp.asarray(ids[:, :40])), -1)
    want = -np.asarray(jnp.take_along_axis(logp[:, 29:39], jnp.asarray(ids[:, 30:40])[..., None], -1))[..., 0]
    np.testing.assert_allclose(nats, want.sum(1), rtol=1e-4)


def test_methods_start_from_the_same_prefill_and_do_not_share_caches(lm, ids):
    lm_, _ = lm
    decoder = Decoder(lm_, METHODS)
    cache, logits, sums = decoder.start(ids[:, :30], 40)
    first = {m: decoder.generate(m, cache, sums, logits, 8) for m in METHODS}
    again = {m: decoder.generate(m, cache, sums, logits, 8) for m in reversed(METHODS)}
    for m in METHODS:  # the donated step caches never wrote into the shared prefill
        np.testing.assert_array_equal(first[m][0], again[m][0])
    assert first[METHODS[1]][1] < first[METHODS[0]][1]  # SparQ at 1/2 reads less than dense
    # the compressed methods' transfer is near their ratio of dense (analytic rule: r/(2d) + k/S for SparQ)
    for m in METHODS[1:]:
        assert first[m][1] / first[METHODS[0]][1] == pytest.approx(m.ratio, rel=0.35), m.label


def test_repetition_prompt_is_copied_from_the_context_and_scored_in_characters(lm, ids):
    lm_, _ = lm
    batch = context_batch(lm_, ids[:, :40], 6, 5, np.random.default_rng(0))
    assert batch.contexts.shape == (3, 40) and batch.prompts.shape == (3, 6) and batch.question is None
    for row, prompt, truth in zip(batch.contexts, batch.prompts, batch.truth, strict=True):
        starts = [s for s in range(35) if (row[s : s + 6] == prompt).all()]
        assert starts and any(lm_.text(row[s + 6 : s + 11]) == truth for s in starts)
    assert common_prefix("abcde", "abXde") == 2 and common_prefix("abc", "abc") == 3 and common_prefix("", "a") == 0
    out = context_tasks(Decoder(lm_, METHODS[:1]), batch, 5, 0, 51)
    assert set(out) == {"repetition"}
    assert all(0 <= s <= len(t) for s, t in zip(out["repetition"][METHODS[0]]["scores"], batch.truth, strict=True))


def test_chunked_continuations_equal_prefilling_each_whole_sequence(lm, ids):
    """The shared context prefill continued by the prompt (or the question) gives what prefilling the whole
    sequence gives: the greedy continuation of dense attention is the full forward's."""
    lm_, tok = lm
    batch = context_batch(lm_, ids[:, :30], 5, 4, np.random.default_rng(3), encode=lambda t: tok.encode(t).ids)
    decoder = Decoder(lm_, METHODS[:1])
    out = context_tasks(decoder, batch, 4, 5, 60)
    for task, suffix, steps in (("repetition", batch.prompts, 4), ("needle", None, 5)):
        tail = suffix if suffix is not None else np.broadcast_to(batch.question, (3, batch.question.size))
        seq = np.concatenate([batch.contexts, tail], 1)
        cache, logits, sums = decoder.start(seq, 60)
        generated, _ = decoder.generate(METHODS[0], cache, sums, logits, steps)
        if task == "repetition":
            want = [common_prefix(lm_.text(g), t) for g, t in zip(generated, batch.truth, strict=True)]
            assert out[task][METHODS[0]]["scores"] == want
        else:
            want = [float(lm_.text(g).lstrip().startswith(a)) for g, a in zip(generated, batch.answers, strict=True)]
            assert out[task][METHODS[0]]["hits"] == want


def test_needles_sit_in_the_contexts_at_increasing_depths(lm, ids):
    lm_, tok = lm
    rows, answers = insert_needles(lm_, lambda t: tok.encode(t).ids, ids[:, :40], np.random.default_rng(1))
    assert rows.shape == (3, 40)
    for row, answer in zip(rows, answers, strict=True):
        assert len(answer) == 5 and answer.isdigit() and answer[0] != "0"
        assert f"The secret number is {answer}.\n" in lm_.text(row)
    depths = [lm_.text(r).index("The secret") / len(lm_.text(r)) for r in rows]
    assert depths == sorted(depths)
    batch = context_batch(lm_, ids[:, :40], 6, 5, np.random.default_rng(1), encode=lambda t: tok.encode(t).ids)
    assert lm_.text(batch.question) == QUESTION and batch.answers == answers


def test_evaluate_reports_every_method_and_resumes_from_its_store(lm, ids, tmp_path, monkeypatch):
    lm_, tok = lm
    c = Config(methods=["sparq", "h2o", "local"], ratios=[0.5, 0.25], claim_ratio=0.25)
    contexts = context_batch(lm_, ids[:, :30], 5, 4, np.random.default_rng(2), encode=lambda t: tok.encode(t).ids)
    data = EvalData(contexts, 4, 5, ids[:, :39], 6, 60, 2, 8, 35)
    results = evaluate(c, lm_, data, tmp_path, seed=0)
    assert [r["method"].label for r in results] == [
        "dense", "sparq 1/2", "h2o 1/2", "local 1/2", "sparq 1/4", "h2o 1/4", "local 1/4"
    ]  # fmt: skip
    for r in results:
        assert len(r["scores"]) == 3 and len(r["needles"]) == 3 and len(r["bpcs"]) == 3  # the padded row dropped
        assert all(np.isfinite(r["bpcs"])) and r["bpc"] == pytest.approx(np.mean(r["bpcs"]))
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == ["bpc_0_2.json", "bpc_2_3.json", "context_0_2.json", "context_2_3.json"]
    part = json.loads((tmp_path / "context_2_3.json").read_text())
    assert set(part) == {"repetition/scores", "repetition/transfer", "needle/hits", "needle/transfer"}
    assert set(part["needle/hits"]) == {r["method"].label for r in results}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished batch was recomputed")

    monkeypatch.setattr(Decoder, "start", refuse)
    again = evaluate(c, lm_, data, tmp_path, seed=0)
    for a, b in zip(results, again, strict=True):
        assert a["scores"] == b["scores"] and a["bpcs"] == b["bpcs"] and a["needles"] == b["needles"]


def test_spaced_windows_cover_the_stream():
    stream = np.arange(100)
    w = spaced_windows(stream, 4, 10)
    assert w.shape == (4, 10) and w[0, 0] == 0 and w[-1, -1] == 99
    assert (np.diff(w[:, 0]) > 10).all()  # non-overlapping when the stream is long enough
    np.testing.assert_array_equal(spaced_windows(stream, 1, 10), stream[None, :10])
    with pytest.raises(ValueError, match="cannot hold a window of 200"):
        spaced_windows(stream, 2, 200)

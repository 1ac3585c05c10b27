"""The evaluations: the repetition task, needle retrieval and held-out bits per character, with any decode-step
attention method, on any language model `core.nn.decoding` drives (the character LM or SmolLM2).

Prefill (context and prompt) is dense, as in the paper, and runs once per batch of examples: every method starts
from a copy of the same cache (H2O from the prefill's accumulated attention), so a sweep of methods costs one
prefill. A method is a core.nn.decode_methods object (its settings from a compression ratio, its transfer, its
`core.nn.decoding` step); with grouped-query attention the g query heads of a KV head share its reads (transfer is
counted per KV head). Scores are in characters of text, so a token-level and a character-level model
are scored alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from core.nn.decode_methods import DecodeMethod
from core.nn.decoding import KVCache, decode_step, prefill

QUESTION = "\nWhat is the secret number? The secret number is"


@dataclass
class LM:
    """What the evaluations need of a language model: a `core.nn.decoding` model, its parameters, and its ids ->
    text (scores are counted in characters)."""

    model: object
    params: object
    text: Callable[[Sequence[int]], str]

    @property
    def head_dim(self) -> int:
        c = getattr(self.model, "config", self.model)
        return c.d_model // c.heads


class Decoder:
    """Greedy generation and teacher-forced scoring with each method from one shared dense prefill. Each method's
    decode step is compiled once (the cache donated: written in place) and reused for every batch of the same
    shape."""

    def __init__(self, lm: LM, methods: Sequence[DecodeMethod]):
        self.lm, self.methods = lm, list(methods)
        self._steps = {}
        self._prefill = jax.jit(
            lambda params, ids, capacity, sums: prefill(lm.model, params, ids, capacity, column_sums=sums),
            static_argnums=(2, 3),
        )
        self._extend = jax.jit(
            lambda params, cache, ids, sums: prefill(lm.model, params, ids, cache=cache, column_sums=sums),
            static_argnums=3,
        )
        self._column_sums = any(m.needs_column_sums for m in self.methods)

    def _step(self, method: DecodeMethod):
        if method not in self._steps:
            self._steps[method] = jax.jit(
                lambda params, cache, token: decode_step(self.lm.model, params, cache, token, method.step),
                donate_argnums=1,
            )
        return self._steps[method]

    def start(self, ids: np.ndarray, capacity: int):
        """Dense prefill of ids [B, P] into a cache of `capacity` positions: (cache, logits, column sums or None)."""
        return self._prefill(self.lm.params, jnp.asarray(ids, jnp.int32), capacity, self._column_sums)

    def extend(self, cache: KVCache, sums, ids: np.ndarray):
        """Dense prefill of ids [B, P] after what the cache holds (a new cache; the given one is left as it was):
        (cache, logits, the column sums `sums` plus these ids' or None)."""
        cache, logits, more = self._extend(self.lm.params, cache, jnp.asarray(ids, jnp.int32), self._column_sums)
        return cache, logits, None if sums is None else [a + b for a, b in zip(sums, more, strict=True)]

    def cache_for(self, method: DecodeMethod, cache: KVCache, sums) -> KVCache:
        """A private copy of the prefill's cache with the method's state (H2O: its kept set from the prefill's
        accumulated attention)."""
        state = method.init_state(sums, cache.length)
        # every array copied: the step donates its cache, and the prefill's must survive for the next method
        return KVCache(jnp.copy(cache.k), jnp.copy(cache.v), jnp.copy(cache.length), state)

    def generate(self, method: DecodeMethod, cache: KVCache, sums, logits, steps: int, done=None) -> np.ndarray:
        """Greedy: up to `steps` ids [B, n] after the prefill's last logits, stopping early once `done(ids so far)`
        says no row's score can change."""
        step = self._step(method)
        cache = self.cache_for(method, cache, sums)
        token = jnp.argmax(logits[:, -1], -1)
        out = [np.asarray(token)]
        while len(out) < steps and not (done is not None and done(np.stack(out, 1))):
            logits_t, cache, _ = step(self.lm.params, cache, token)
            token = jnp.argmax(logits_t, -1)
            out.append(np.asarray(token))
        return np.stack(out, 1)

    def score(self, method: DecodeMethod, cache: KVCache, sums, logits, targets: np.ndarray) -> np.ndarray:
        """Teacher-forced: nats of each row's targets [B, M] (the first predicted by the dense prefill's last
        logits, the rest by decode steps with the method), summed per row."""
        step = self._step(method)
        cache = self.cache_for(method, cache, sums)
        targets = jnp.asarray(targets, jnp.int32)
        logp = jax.nn.log_softmax(logits[:, -1])
        nats = np.zeros(targets.shape[0])
        for t in range(targets.shape[1]):
            nats -= np.asarray(jnp.take_along_axis(logp, targets[:, t : t + 1], -1))[:, 0]
            if t + 1 < targets.shape[1]:
                logits_t, cache, _ = step(self.lm.params, cache, targets[:, t])
                logp = jax.nn.log_softmax(logits_t)
        return nats


def common_prefix(a: str, b: str) -> int:
    """Characters of `a` equal to `b` before the first mismatch."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


# ---------------------------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class ContextBatch:
    """Contexts [B, C] ids, each prefilled once and continued three ways: by a prompt [B, P] copied from it (the
    repetition task; `truth`: the text that followed the copied span, up to the characters scored), by the text
    that followed the context in the corpus (`following` [B, T], scored teacher-forced: BPC) and, when the contexts
    hold a needle line, by the question (`answers`: the needles' numbers)."""

    contexts: np.ndarray
    prompts: np.ndarray
    truth: list[str]
    following: np.ndarray
    question: np.ndarray | None = None
    answers: list[str] | None = None

    def rows(self, a: int, b: int, size: int) -> ContextBatch:
        """Rows a..b, padded to `size` rows by repeating the first (so every batch has one shape)."""
        pad = size - (b - a)

        def take(x):
            part = x[a:b]
            return part + part[:1] * pad if isinstance(x, list) else np.concatenate([part, np.repeat(part[:1], pad, 0)])

        answers = None if self.answers is None else take(self.answers)
        return ContextBatch(
            take(self.contexts), take(self.prompts), take(self.truth), take(self.following), self.question, answers
        )


def insert_needles(lm: LM, encode, haystacks: np.ndarray, rng: np.random.Generator, *, digits: int = 5):
    """Into each haystack [B, C] of text ids a line "The secret number is N." (N of `digits` random digits, no leading
    0) is inserted after a line break at a depth spread evenly over the examples; each haystack loses as many ids
    from its start, so the rows keep length C. Returns (contexts [B, C], answers). `encode(text) -> ids`."""
    B = haystacks.shape[0]
    rows, answers = [], []
    for i in range(B):
        answer = str(rng.integers(1, 10)) + "".join(str(x) for x in rng.integers(0, 10, digits - 1))
        needle = encode(f"The secret number is {answer}.\n")
        hay = haystacks[i, len(needle) :]
        breaks = [j + 1 for j in range(len(hay) - 1) if lm.text(hay[j : j + 1]).endswith("\n")]
        depth = (i + 0.5) / B * len(hay)
        at = min(breaks, key=lambda j: abs(j - depth)) if breaks else int(depth)
        rows.append(np.concatenate([hay[:at], needle, hay[at:]]))
        answers.append(answer)
    return np.stack(rows).astype(np.int32), answers


def context_batch(
    lm: LM,
    windows: np.ndarray,
    following: int,
    prompt_len: int,
    generate: int,
    truth_chars: int,
    rng: np.random.Generator,
    encode=None,
) -> ContextBatch:
    """The tasks' examples from windows [B, C + following] of held-out text: the last `following` ids of each are the
    text scored for BPC and the first C the context. With `encode` (a tokenizer's text -> ids) a needle line goes
    into each context (`insert_needles`) and the question follows it. Then `prompt_len` ids are copied from each
    context at a random position that leaves `generate` ids after it inside the context; the truth is the text of
    those, cut to `truth_chars` characters (the paper scores up to 256)."""
    answers = question = None
    contexts, after = windows[:, : windows.shape[1] - following], windows[:, windows.shape[1] - following :]
    if encode is not None:
        contexts, answers = insert_needles(lm, encode, contexts, rng)
        question = np.asarray(encode(QUESTION), np.int32)
    B, C = contexts.shape
    if C < prompt_len + generate:
        raise ValueError(f"repetition: a context of {C} ids cannot hold prompt {prompt_len} + generate {generate}")
    starts = rng.integers(0, C - prompt_len - generate + 1, B)
    prompts = np.stack([contexts[i, s : s + prompt_len] for i, s in enumerate(starts)])
    truth = [
        lm.text(contexts[i, s + prompt_len : s + prompt_len + generate])[:truth_chars] for i, s in enumerate(starts)
    ]
    return ContextBatch(contexts, prompts, truth, np.asarray(after, np.int32), question, answers)


def diverged(texts: Sequence[str], truth: Sequence[str]) -> bool:
    """Whether every row's score is final: its text already differs from its truth, or holds all of it."""
    for text, want in zip(texts, truth, strict=True):
        n = common_prefix(text, want)
        if n < len(want) and n == len(text):
            return False
    return True


def context_tasks(
    decoder: Decoder, batch: ContextBatch, generate: int, needle_generate: int, capacity: int, tick=None
) -> dict[str, dict[DecodeMethod, list]]:
    """One dense prefill of the contexts, shared by every method and task. Repetition (continued by the prompts,
    chunked prefill): each method generates up to `generate` ids greedily, stopping once every row has diverged
    from its truth; score = characters equal to the truth before the first mismatch (the paper's repetition score,
    at most the truth's length). Needle (continued by the question): `needle_generate` ids; a hit is a
    continuation that starts (after spaces) with the answer. BPC: the text that followed the context, teacher-forced
    (the first id predicted by the prefill's logits, every other by a decode step with the method): bits over its
    characters. `tick()` is called after each method finishes each task (progress)."""
    tick = tick or (lambda: None)
    cache, logits, sums = decoder.start(batch.contexts, capacity)
    text = decoder.lm.text
    out: dict[str, dict[DecodeMethod, list]] = {"repetition": {}, "bpc": {}}
    chars = np.array([len(text(row)) for row in batch.following], np.float64)
    for method in decoder.methods:
        nats = decoder.score(method, cache, sums, logits, batch.following)
        out["bpc"][method] = (nats / math.log(2) / chars).tolist()
        tick()
    cache_p, logits_p, sums_p = decoder.extend(cache, sums, batch.prompts)
    for method in decoder.methods:
        ids = decoder.generate(
            method, cache_p, sums_p, logits_p, generate, done=lambda ids: diverged([text(r) for r in ids], batch.truth)
        )
        out["repetition"][method] = [common_prefix(text(row), batch.truth[i]) for i, row in enumerate(ids)]
        tick()
    del cache_p, sums_p
    if batch.question is not None:
        question = np.broadcast_to(batch.question, (len(batch.contexts), batch.question.size))
        cache_q, logits_q, sums_q = decoder.extend(cache, sums, question)
        out["needle"] = {}
        for method in decoder.methods:
            ids = decoder.generate(method, cache_q, sums_q, logits_q, needle_generate)
            out["needle"][method] = [
                float(text(row).lstrip().startswith(batch.answers[i])) for i, row in enumerate(ids)
            ]
            tick()
    return out

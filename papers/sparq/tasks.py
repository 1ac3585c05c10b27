"""The evaluations: the repetition task, needle retrieval and held-out bits per character, with any decode-step
attention method, on any language model `core.nn.decoding` drives (the character LM or SmolLM2).

Prefill (context and prompt) is dense, as in the paper, and runs once per batch of examples: every method starts
from a copy of the same cache (H2O from the prefill's accumulated attention), so a sweep of methods costs one
prefill. A method is given by its name and compression ratio and becomes a `core.nn.decoding` step function here;
with grouped-query attention the g query heads of a KV head share its reads (transfer is counted per KV head).
Scores are in characters of text, so a token-level and a character-level model are scored alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from core.nn.attention import h2o_attention_gqa, h2o_init_scores, local_attention_gqa, sparq_attention_gqa
from core.nn.decoding import KVCache, decode_step, dense_step, prefill

METHODS = ("dense", "sparq", "h2o", "local")
QUESTION = "\nWhat is the secret number? The secret number is"


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
    """The `core.nn.decoding` step attention of a method: q [B, H, d] is grouped as [B, Hkv, g, d] over the cache's
    KV heads (g = 1 without grouped-query attention)."""
    if method.name == "dense":
        return dense_step

    def grouped(fn):
        def step(layer, q, K, V, length, state):
            (B, H, d), Hkv = q.shape, K.shape[1]
            out, transfer, state = fn(q.reshape(B, Hkv, H // Hkv, d), K, V, length, state)
            return out.reshape(B, H, d), transfer, state

        return step

    if method.name == "local":
        return grouped(lambda q, K, V, length, state: (*local_attention_gqa(q, K, V, k=method.k, length=length), state))
    if method.name == "sparq":
        return grouped(
            lambda q, K, V, length, state: (
                *sparq_attention_gqa(q, K, V, r=method.r, k=method.k, local_k=method.local_k, length=length),
                state,
            )
        )
    return grouped(
        lambda q, K, V, length, state: h2o_attention_gqa(
            q, K, V, state, k=method.k, local_k=method.local_k, length=length
        )
    )


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

    def __init__(self, lm: LM, methods: Sequence[Method]):
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
        self._h2o = any(m.name == "h2o" for m in self.methods)

    def _step(self, method: Method):
        if method not in self._steps:
            fn = step_fn(method)
            self._steps[method] = jax.jit(
                lambda params, cache, token: decode_step(self.lm.model, params, cache, token, fn), donate_argnums=1
            )
        return self._steps[method]

    def start(self, ids: np.ndarray, capacity: int):
        """Dense prefill of ids [B, P] into a cache of `capacity` positions: (cache, logits, column sums or None)."""
        return self._prefill(self.lm.params, jnp.asarray(ids, jnp.int32), capacity, self._h2o)

    def extend(self, cache: KVCache, sums, ids: np.ndarray):
        """Dense prefill of ids [B, P] after what the cache holds (a new cache; the given one is left as it was):
        (cache, logits, the column sums `sums` plus these ids' or None)."""
        cache, logits, more = self._extend(self.lm.params, cache, jnp.asarray(ids, jnp.int32), self._h2o)
        return cache, logits, None if sums is None else [a + b for a, b in zip(sums, more, strict=True)]

    def cache_for(self, method: Method, cache: KVCache, sums) -> KVCache:
        """A private copy of the prefill's cache with the method's state (H2O: its kept set from the prefill's
        accumulated attention)."""
        state = None
        if method.name == "h2o":
            state = tuple(h2o_init_scores(s, cache.length, k=method.k, local_k=method.local_k) for s in sums)
        # every array copied: the step donates its cache, and the prefill's must survive for the next method
        return KVCache(jnp.copy(cache.k), jnp.copy(cache.v), jnp.copy(cache.length), state)

    def generate(self, method: Method, cache: KVCache, sums, logits, steps: int) -> tuple[np.ndarray, float]:
        """Greedy: `steps` ids [B, steps] after the prefill's last logits, and the method's mean transfer per KV
        head per step (summed over layers)."""
        step = self._step(method)
        cache = self.cache_for(method, cache, sums)
        token = jnp.argmax(logits[:, -1], -1)
        out, transfers = [np.asarray(token)], []
        for _ in range(steps - 1):
            logits_t, cache, transfer = step(self.lm.params, cache, token)
            transfers.append(int(transfer))
            token = jnp.argmax(logits_t, -1)
            out.append(np.asarray(token))
        return np.stack(out, 1), float(np.mean(transfers)) if transfers else float("nan")

    def score(self, method: Method, cache: KVCache, sums, logits, targets: np.ndarray) -> tuple[np.ndarray, float]:
        """Teacher-forced: nats of each row's targets [B, M] (the first predicted by the dense prefill's last
        logits, the rest by decode steps with the method), summed per row, and the mean transfer per step."""
        step = self._step(method)
        cache = self.cache_for(method, cache, sums)
        targets = jnp.asarray(targets, jnp.int32)
        logp = jax.nn.log_softmax(logits[:, -1])
        nats, transfers = np.zeros(targets.shape[0]), []
        for t in range(targets.shape[1]):
            nats -= np.asarray(jnp.take_along_axis(logp, targets[:, t : t + 1], -1))[:, 0]
            if t + 1 < targets.shape[1]:
                logits_t, cache, transfer = step(self.lm.params, cache, targets[:, t])
                transfers.append(int(transfer))
                logp = jax.nn.log_softmax(logits_t)
        return nats, float(np.mean(transfers)) if transfers else float("nan")


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
    """Contexts [B, C] ids, each continued two ways from one dense prefill: by a prompt [B, P] copied from it (the
    repetition task; `truth`: the text that followed the copied span) and, when the contexts hold a needle line, by
    the question (`answers`: the needles' numbers)."""

    contexts: np.ndarray
    prompts: np.ndarray
    truth: list[str]
    question: np.ndarray | None = None
    answers: list[str] | None = None

    def rows(self, a: int, b: int, size: int) -> ContextBatch:
        """Rows a..b, padded to `size` rows by repeating the first (so every batch has one shape)."""
        pad = size - (b - a)

        def take(x):
            part = x[a:b]
            return part + part[:1] * pad if isinstance(x, list) else np.concatenate([part, np.repeat(part[:1], pad, 0)])

        answers = None if self.answers is None else take(self.answers)
        return ContextBatch(take(self.contexts), take(self.prompts), take(self.truth), self.question, answers)


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
    lm: LM, contexts: np.ndarray, prompt_len: int, generate: int, rng: np.random.Generator, encode=None
) -> ContextBatch:
    """The tasks' examples from contexts [B, C]: with `encode` (a tokenizer's text -> ids) a needle line goes into
    each (`insert_needles`) and the question follows it; then `prompt_len` ids are copied from each context at a
    random position that leaves `generate` ids after it inside the context, and the truth is the text of those."""
    answers = question = None
    if encode is not None:
        contexts, answers = insert_needles(lm, encode, contexts, rng)
        question = np.asarray(encode(QUESTION), np.int32)
    B, C = contexts.shape
    if C < prompt_len + generate:
        raise ValueError(f"repetition: a context of {C} ids cannot hold prompt {prompt_len} + generate {generate}")
    starts = rng.integers(0, C - prompt_len - generate + 1, B)
    prompts = np.stack([contexts[i, s : s + prompt_len] for i, s in enumerate(starts)])
    truth = [lm.text(contexts[i, s + prompt_len : s + prompt_len + generate]) for i, s in enumerate(starts)]
    return ContextBatch(contexts, prompts, truth, question, answers)


def context_tasks(
    decoder: Decoder, batch: ContextBatch, generate: int, needle_generate: int, capacity: int
) -> dict[str, dict[Method, dict]]:
    """One dense prefill of the contexts, continued (chunked prefill) by the prompts and by the question. Repetition:
    each method generates `generate` ids greedily; score = characters of the text equal to the truth before the
    first mismatch (the paper's repetition score). Needle: `needle_generate` ids; a hit is a continuation that
    starts (after spaces) with the answer."""
    cache, _, sums = decoder.start(batch.contexts, capacity)
    continuations = [
        ("repetition", batch.prompts, generate, "scores", lambda text, i: common_prefix(text, batch.truth[i])),
    ]
    if batch.question is not None:
        question = np.broadcast_to(batch.question, (len(batch.contexts), batch.question.size))
        continuations.append(
            (
                "needle",
                question,
                needle_generate,
                "hits",
                lambda text, i: float(text.lstrip().startswith(batch.answers[i])),
            )
        )
    out: dict[str, dict[Method, dict]] = {}
    for task, suffix, steps, key, judge in continuations:
        cache_t, logits, sums_t = decoder.extend(cache, sums, suffix)
        out[task] = {}
        for method in decoder.methods:
            ids, transfer = decoder.generate(method, cache_t, sums_t, logits, steps)
            out[task][method] = {
                key: [judge(decoder.lm.text(row), i) for i, row in enumerate(ids)],
                "transfer": transfer,
            }
    return out


def bits_per_character(decoder: Decoder, windows: np.ndarray, predict: int, capacity: int):
    """Teacher-forced BPC of windows [B, T] over their last `predict` ids (the rest a dense prefill): per window,
    the bits of those ids over the characters of their text."""
    T = windows.shape[1]
    cache, logits, sums = decoder.start(windows[:, : T - predict], capacity)
    chars = np.array([len(decoder.lm.text(w[T - predict :])) for w in windows], np.float64)
    out = {}
    for method in decoder.methods:
        nats, transfer = decoder.score(method, cache, sums, logits, windows[:, T - predict :])
        out[method] = {"bpcs": (nats / math.log(2) / chars).tolist(), "transfer": transfer}
    return out

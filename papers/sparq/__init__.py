"""SparQ Attention: Bandwidth-Efficient LLM Inference (Ribar et al., ICML 2024, arXiv 2312.04985).

A character-level LM trained on Shakespeare (papers.sparq.model) decodes with dense attention, SparQ, H2O and a
local window (papers.sparq.attention) at several compression ratios; the repetition task and held-out BPC measure
what each keeps; decode-step attention time is measured dense vs SparQ at S = 16384 and the claims' compression
(papers.sparq.speed), with both kernels' transfer counted from their traced programs (papers.sparq.transfer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.config import ConfigError, check_choice, check_range
from core.data.shakespeare import evaluation_windows, load_shakespeare
from core.nn.transformer import POSITIONS
from core.progress import progress
from core.report import Report
from core.runner import current_run
from papers.sparq.attention import dense_attention, h2o_attention, local_attention, sparq_attention
from papers.sparq.model import model_key, train_model
from papers.sparq.report import build_report, claims
from papers.sparq.tasks import bits_per_character, make_method, repetition

BASELINES = ("sparq", "h2o", "local")


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
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    methods: list[str] = field(default_factory=lambda: list(BASELINES))
    ratios: list[float] = field(default_factory=lambda: [1 / 2, 1 / 4, 1 / 8, 1 / 16])
    claim_ratio: float = 1 / 8
    min_dense_score: float = 8.0  # the repetition claims need a dense model that copies at least this much
    repetition_examples: int = 32
    prompt_len: int = 128
    generate: int = 64
    bpc_windows: int = 16
    bpc_prefill: int = 256
    speed_seq: int = 16384
    speed_rows: int = 32  # batch x heads of the decode-step timing (head dimension 128, as the paper's models)
    speed_repeat: int = 7  # interleaved timing rounds of dense and SparQ; the claim decides on their spread

    def __post_init__(self) -> None:
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
        check_range("sparq.speed_repeat", self.speed_repeat, ge=2)


def reproduce(cfg) -> Report:
    from papers.sparq.speed import decode_step_times, operating_point

    c = cfg.sparq
    corpus = load_shakespeare()
    run = current_run()
    seed = int(cfg.seed)
    root = Path(cfg.output_root) / "sparq" / "models" / model_key(c, seed)
    model, params, info = train_model(c, corpus, root, seed=seed, resume=run.resume if run else False)
    head_dim = c.model.d_model // c.model.heads
    context = c.model.seq_len - c.prompt_len - c.generate
    texts = evaluation_windows(corpus.test, context, c.repetition_examples)
    windows = evaluation_windows(corpus.valid, c.model.seq_len, c.bpc_windows)
    jobs = [make_method("dense", 1.0, head_dim, context + c.prompt_len)]
    for ratio in c.ratios:
        for name in c.methods:
            jobs.append(make_method(name, float(ratio), head_dim, context + c.prompt_len))
    results = []
    for method in progress(jobs, desc="methods"):
        scores, rep_transfer = repetition(model, params, texts, c.prompt_len, c.generate, method, int(cfg.seed))
        bpcs, bpc_transfer = bits_per_character(model, params, windows, c.bpc_prefill, method)
        results.append(
            {
                "method": method,
                "score": float(scores.mean()),
                "scores": scores.tolist(),
                "bpc": float(bpcs.mean()),
                "bpcs": bpcs.tolist(),
                "transfer": rep_transfer,
                "bpc_transfer": bpc_transfer,
            }
        )
    # timed at the operating point of the quality claims (claim_ratio of the dense transfer), r and k by their rule
    r, k = operating_point(float(c.claim_ratio), c.speed_seq)
    speed = decode_step_times(S=c.speed_seq, d=128, rows=c.speed_rows, r=r, k=k, repeat=c.speed_repeat, seed=seed)
    return build_report(cfg, results, info, speed)


__all__ = ["Config", "claims", "dense_attention", "h2o_attention", "local_attention", "reproduce", "sparq_attention"]

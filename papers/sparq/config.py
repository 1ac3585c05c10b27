"""The `sparq` config section (`Config`, with the SmolLM2 evaluation's `SmolConfig` and the character LM's
`ModelConfig`): its defaults are the default scale's; configs/paper_scale/sparq/<scale>.yaml holds what another scale
changes. Imports no JAX."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from core.nn.decode_methods import whole_pages
from ipu_model.device import PRESETS

IPU_DEVICES = tuple(PRESETS)
BASELINES = ("sparq", "h2o", "local", "streaming", "quest")
LMS = ("smollm2", "charlm")
POSITIONS = ("learned", "rope")  # core.nn.transformer.POSITIONS (which imports JAX); a test checks they agree
SMOLLM2_CONTEXT = 8192  # SmolLM2-135M's context (its GGUF's llama.context_length); a test checks it against the wheel


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
    # the timed kernels at speed_seq x speed_rows, r, k on a simulated IPU (ipu_model; the paper's Section 6.1 point
    # by default), declaring the IPU claims; false: neither
    ipu: bool = True
    ipu_device: str = "bow"

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
        cache = whole_pages(self.smollm2.capacity, self.page)
        if self.lm == "smollm2" and cache > SMOLLM2_CONTEXT:  # said before the weights load, not after
            raise ConfigError(
                f"sparq.smollm2: a cache of {cache} positions (context {self.smollm2.context} and its longest "
                f"continuation, in pages of {self.page}) exceeds SmolLM2's context of {SMOLLM2_CONTEXT}"
            )
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
        check_choice("sparq.ipu_device", self.ipu_device, IPU_DEVICES)

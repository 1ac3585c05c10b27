"""The `packing` config section (`packing.<key>=<value>`): its defaults are the default scale's."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from core.packing import METHODS

HISTOGRAMS = ("wikipedia_512", "squad_1_1_384")


@dataclass
class TableConfig:
    histograms: list[str] = field(default_factory=lambda: list(HISTOGRAMS))
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    max_sequences_per_pack: list[int] = field(default_factory=lambda: [2, 3, 4, 8, 12])
    nnlshp_max_depth: int = 3  # NNLSHP enumerates ~L^(depth-1) strategies: depth 3 at L=512 takes ~20 s

    def __post_init__(self) -> None:
        for h in self.histograms:
            check_choice("packing.table.histograms", h, HISTOGRAMS)
        for m in self.methods:
            check_choice("packing.table.methods", m, METHODS)
        for k in self.max_sequences_per_pack:
            check_range("packing.table.max_sequences_per_pack", k, ge=1, le=64)
        check_range("packing.table.nnlshp_max_depth", self.nnlshp_max_depth, ge=1, le=3)


@dataclass
class ModelConfig:
    d_model: int = 64
    depth: int = 2
    heads: int = 4

    def __post_init__(self) -> None:
        check_range("packing.train.model.d_model", self.d_model, ge=8)
        check_range("packing.train.model.depth", self.depth, ge=1)
        check_range("packing.train.model.heads", self.heads, ge=1)
        if self.d_model % self.heads:
            raise ConfigError(f"packing.train.model.d_model={self.d_model} is not divisible by heads={self.heads}")


@dataclass
class TrainConfig:
    enabled: bool = True
    max_len: int = 256  # characters per row; a sequence is [CLS] + a speech, truncated to this
    max_sequences_per_pack: int = 8
    batch_size: int = 32  # sequences per step when padded (packed: about as many sequences in fewer rows)
    sequences: int = 24_000  # sequences seen by each run
    eval_every: int = 4_000  # sequences
    checkpoint_every: int = 100  # steps
    valid_sequences: int = 512
    lr: float = 1e-3
    warmup: int = 50
    mask_prob: float = 0.15
    contamination_sequences: int = 96
    timing_rounds: int = 6  # interleaved timing rounds of the three arms (train.throughput_rounds)
    timing_seconds: float = 2.0  # per arm and round: enough steps to last about this long
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        check_range("packing.train.max_len", self.max_len, ge=8, le=4096)
        check_range("packing.train.max_sequences_per_pack", self.max_sequences_per_pack, ge=1, le=64)
        check_range("packing.train.batch_size", self.batch_size, ge=1)
        check_range("packing.train.sequences", self.sequences, ge=self.batch_size)
        check_range("packing.train.eval_every", self.eval_every, ge=1)
        check_range("packing.train.checkpoint_every", self.checkpoint_every, ge=1)
        check_range("packing.train.valid_sequences", self.valid_sequences, ge=1)
        check_range("packing.train.lr", self.lr, gt=0)
        check_range("packing.train.warmup", self.warmup, ge=0)
        check_range("packing.train.mask_prob", self.mask_prob, gt=0, lt=1)
        check_range("packing.train.contamination_sequences", self.contamination_sequences, ge=2)
        check_range("packing.train.timing_rounds", self.timing_rounds, ge=5)  # a spread needs rounds to estimate
        check_range("packing.train.timing_seconds", self.timing_seconds, gt=0)


@dataclass
class Config:
    table: TableConfig = field(default_factory=TableConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

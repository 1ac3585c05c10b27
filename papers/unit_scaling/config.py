"""The `unit_scaling` config section (`unit_scaling.<key>=<value>`): its defaults are the default scale's;
configs/paper_scale/unit_scaling/<scale>.yaml holds what another scale changes. Imports no JAX."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from core.fp8casts import FP8Casts
from papers.unit_scaling.arms import ARMS, FP16_STORAGE


@dataclass
class ModelConfig:
    d_model: int = 64
    depth: int = 2
    heads: int = 4
    seq_len: int = 64
    norm: str = "pre"

    def __post_init__(self) -> None:
        check_range("model.d_model", self.d_model, ge=4)
        check_range("model.depth", self.depth, ge=1)
        check_range("model.heads", self.heads, ge=1)
        check_range("model.seq_len", self.seq_len, ge=2)
        check_choice("model.norm", self.norm, ["pre", "post"])
        if self.d_model % self.heads:
            raise ConfigError(f"model.d_model={self.d_model} must be divisible by model.heads={self.heads}")


@dataclass
class Config:
    # every arm but the dynamic-loss-scale one, which is not a column of the paper's table (US-BPC) and would take
    # the default run past 15 minutes; full scale and the smoke tests run all eight
    arms: list[str] = field(default_factory=lambda: [a for a in ARMS if a != "fp16_regular_dynamic"])
    # 6 seeds: the precision claims' 95% t half-width is 1.05 x the per-seed std of the paired gap (claims.py)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4, 5])
    model: ModelConfig = field(default_factory=ModelConfig)
    steps: int = 1000
    batch_size: int = 16
    warmup_steps: int = 100
    weight_decay: float = 0.0
    constraint: str | None = "gmean"
    fp8: FP8Casts = field(default_factory=FP8Casts)  # how the FP8 arms cast: core.fp8casts.SIMULATE_FP8 by default
    # how FP16 arms store weights and Adam state (papers.unit_scaling.arms.FP16_STORAGE): "paper" (weights and
    # Adam's first moment in FP16 with stochastic rounding, second moment FP32: the authors' character-LM code,
    # REFERENCES.md US-STORAGE), "fp16" (weights and both moments in FP16, round-to-nearest: the pure-FP16 arm of
    # 2026-11-24 to 2026-11-26, kept as a labelled extra) or "fp32"
    fp16_storage: str = "paper"
    # tensor scales of the arms in track_arms recorded at initialisation and at these steps (evaluation steps)
    track_arms: list[str] = field(default_factory=lambda: ["fp8_unit", "fp8_regular"])
    track_steps: list[int] = field(default_factory=lambda: [100, 500, 1000])
    # AdamW peak learning rate per arm: FP32 regular, FP32 unit-scaled and FP8 unit-scaled were swept on one grid
    # (2^-8 .. 2^-2, both seeds, best mean validation BPC; papers/unit_scaling/lr_sweep.json, printed in the
    # report); every other arm uses its FP32 twin's rate
    lr: dict[str, float] = field(
        default_factory=lambda: {
            "fp32_regular": 0.0078125,
            "fp16_regular": 0.0078125,
            "fp16_regular_ls2048": 0.0078125,
            "fp16_regular_dynamic": 0.0078125,
            "fp8_regular": 0.0078125,
            "fp32_unit": 0.125,
            "fp16_unit": 0.125,
            "fp8_unit": 0.0625,
        }
    )
    dynamic_initial_scale: float = 2.0**15
    dynamic_growth_interval: int = 200
    eval_every: int = 100
    checkpoint_every: int = 200
    eval_batch_size: int = 64
    valid_windows: int = 64
    test_windows: int = 256
    analysis_batch_size: int = 16

    def __post_init__(self) -> None:
        if not self.arms:
            raise ConfigError("arms is empty: choose some of " + ", ".join(ARMS))
        for arm in self.arms:
            check_choice("arms", arm, ARMS)
        if not self.seeds:
            raise ConfigError("seeds is empty: give at least one seed")
        for name, value in self.lr.items():
            check_choice("lr (key)", name, ARMS)
            check_range(f"lr.{name}", value, gt=0, lt=1)
        missing = [a for a in self.arms if a not in self.lr]
        if missing:
            raise ConfigError(f"lr has no learning rate for arm(s) {', '.join(missing)}")
        check_range("steps", self.steps, ge=1)
        check_range("batch_size", self.batch_size, ge=1)
        check_range("warmup_steps", self.warmup_steps, ge=0)
        check_range("weight_decay", self.weight_decay, ge=0)
        check_choice("fp16_storage", self.fp16_storage, list(FP16_STORAGE))
        check_choice("constraint", self.constraint, ["gmean", "hmean", "to_output_scale", "to_grad_input_scale", None])
        for name in ("eval_every", "checkpoint_every", "eval_batch_size", "valid_windows", "test_windows"):
            check_range(name, getattr(self, name), ge=1)
        for arm in self.track_arms:
            check_choice("track_arms", arm, ARMS)
        for step in self.track_steps:
            check_range("track_steps", step, ge=1, le=self.steps)
            if step % self.eval_every and step != self.steps:
                raise ConfigError(
                    f"track_steps: {step} is not an evaluation step (a multiple of eval_every={self.eval_every})"
                )

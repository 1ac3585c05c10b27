"""The `umup` config section (`umup.<key>=<value>`): its defaults are the default scale's
(configs/paper_scale/umup/<scale>.yaml holds what another scale changes). No JAX: the parametrizations' and
u-muP's hyperparameters' names are written out here (tests/papers/umup/test_reproduce.py checks them against
core.unit_scaling.umup, which imports JAX)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from core.unit_scaling.hparams import MULT_NAMES, PARAMETRIZATIONS


@dataclass
class ModelConfig:
    depth: int = 2
    heads: int = 2
    seq_len: int = 32

    def __post_init__(self) -> None:
        check_range("model.depth", self.depth, ge=1)
        check_range("model.heads", self.heads, ge=1)
        check_range("model.seq_len", self.seq_len, ge=2)


@dataclass
class Config:
    parametrizations: list[str] = field(default_factory=lambda: list(PARAMETRIZATIONS))
    # 16x, the paper's own span in Fig. 1(b) (256 -> 4096); muP's base width (where it equals SP) is the narrowest
    widths: list[int] = field(default_factory=lambda: [16, 32, 64, 128, 256])
    # 4 seeds: 256 ordered resamples for the optima's 95% intervals
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    # the learning-rate grid of each parametrization at the narrowest width, as log2 of the global rate, one octave
    # apart, fixed before the run; each must bracket every width's optimum with two grid points on each side of the
    # best one (the quadratic fit's reach; the report says when a curve does not bracket its optimum)
    log2_lrs: dict[str, list[float]] = field(
        default_factory=lambda: {
            "sp": [-7.0, -6.0, -5.0, -4.0, -3.0, -2.0],
            "mup": [-7.0, -6.0, -5.0, -4.0, -3.0, -2.0],
            "umup": [-5.0, -4.0, -3.0, -2.0, -1.0, 0.0],
        }
    )
    # octaves each doubling of the width moves a parametrization's grid: width w trains log2_lrs[p] + grid_shift[p]
    # * log2(w / narrowest). SP's optimum falls about an octave per doubling under Adam (-4.1 at width 16, -7.4 at
    # 128 in the 2026-11-26 run), so its grid follows it (-11 to -6 at width 256) instead of spanning -11 to -2 at
    # every width; muP and u-muP keep one grid (0)
    grid_shift: dict[str, float] = field(default_factory=lambda: {"sp": -1.0})
    model: ModelConfig = field(default_factory=ModelConfig)
    steps: int = 300
    batch_size: int = 8
    warmup_steps: int = 30
    log_every: int = 50
    checkpoint_every: int = 100
    valid_windows: int = 64
    # u-muP's hyperparameters besides the learning rate, each swept alone over these multiples of its default 1
    # at the narrowest width and u-muP's best learning rate there
    mult_values: list[float] = field(default_factory=lambda: [0.25, 0.5, 2.0, 4.0])
    mults: list[str] = field(default_factory=lambda: list(MULT_NAMES))
    # plain FP8 casts of every linear layer's matmul at the widest width, at the FP32 sweep's best learning rate
    fp8_parametrizations: list[str] = field(default_factory=lambda: ["umup", "sp"])
    # "low": the readout's matmul is cast too (a plain cast of every matmul input, the paper's Fig. 1(c)); "fp32":
    # the readout (and so the logits' gradient) stays FP32, the head policy of the FP8 LLM and unit-scaling papers
    fp8_head: str = "low"

    def __post_init__(self) -> None:
        if not self.parametrizations:
            raise ConfigError("parametrizations is empty: choose some of " + ", ".join(PARAMETRIZATIONS))
        for p in [*self.parametrizations, *self.fp8_parametrizations]:
            check_choice("parametrizations", p, PARAMETRIZATIONS)
        missing = [p for p in self.fp8_parametrizations if p not in self.parametrizations]
        if missing:
            raise ConfigError(f"fp8_parametrizations {missing} need their FP32 sweep: add them to parametrizations")
        if len(set(self.widths)) < 2:
            raise ConfigError(f"widths={self.widths}: give at least two different widths")
        for w in self.widths:
            check_range("widths", w, ge=2)
            if w % self.model.heads:
                raise ConfigError(f"width {w} is not divisible by model.heads={self.model.heads}")
        if not self.seeds:
            raise ConfigError("seeds is empty: give at least one seed")
        for p in self.parametrizations:
            grid = self.log2_lrs.get(p)
            if not grid or len(grid) < 3:
                raise ConfigError(f"log2_lrs.{p}: give at least 3 learning rates (log2), got {grid}")
            if sorted(set(grid)) != list(grid):
                raise ConfigError(f"log2_lrs.{p}={grid}: must be strictly increasing")
        for p, shift in self.grid_shift.items():
            check_choice("grid_shift", p, PARAMETRIZATIONS)
            if not math.isfinite(shift):
                raise ConfigError(f"grid_shift.{p}={shift}: give a finite number of octaves per doubling of width")
        check_choice("fp8_head", self.fp8_head, ["low", "fp32"])
        for name in self.mults:
            check_choice("mults", name, MULT_NAMES)
        for v in self.mult_values:
            check_range("mult_values", v, gt=0)
            if v == 1:
                raise ConfigError("mult_values: 1 is the default, already trained by the learning-rate sweep")
        if self.mults and "umup" not in self.parametrizations:
            raise ConfigError("mults sweeps u-muP's hyperparameters: add umup to parametrizations (or mults=[])")
        check_range("steps", self.steps, ge=1)
        check_range("batch_size", self.batch_size, ge=1)
        check_range("warmup_steps", self.warmup_steps, ge=0)
        for name in ("log_every", "checkpoint_every", "valid_windows"):
            check_range(name, getattr(self, name), ge=1)


def grid(c, parametrization: str, width: int) -> tuple[float, ...]:
    """The learning rates a parametrization's sweep trains at `width`: its declared grid moved by grid_shift
    octaves per doubling of the width over the narrowest."""
    shift = c.grid_shift.get(parametrization, 0.0) * math.log2(width / min(c.widths))
    return tuple(2.0 ** (float(e) + shift) for e in c.log2_lrs[parametrization])

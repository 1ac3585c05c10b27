"""What an FP8 LLM run computes (the Results `run` returns and `decide` and `render` read): every (size, arm)'s
per-seed final validation losses, curves and (for the amax arm) scaling statistics, the post-training FP8 and MX
inference losses of every trained FP32 model, and SmolLM2's per-window losses. No JAX: the compute modules
(train.py, pretrained.py) build these types and import them from here."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

# (amax, bias) of the activations, weights and gradients of one FP8 layer: [[amax_x, b_x], [amax_w, b_w],
# [amax_g, b_g]] (core.nn.fp8.fp8_statistics)
LayerStats = list[list[float]]


@dataclass
class ArmResult:
    """One arm at one size, over its seeds: every per-seed list follows `seeds`."""

    arm: str
    size: str
    seeds: list[int]
    valid_losses: list[float]  # final validation loss per seed (inf where it diverged)
    # (step, train loss per seed, valid loss per seed) at every evaluation
    curve: list[tuple[int, list[float], list[float]]] = field(default_factory=list)
    # (step, seed, {layer: LayerStats}) per recorded step and seed; the run stores them for the amax arm only (what
    # the claim gradients-smallest-amax, the fact and the bias figure read): train_arm returns every arm's
    stats: list[tuple[int, int, dict[str, LayerStats]]] = field(default_factory=list)
    bad_amax: int = 0  # summed over seeds
    parameters: int = 0
    seconds: float = 0.0
    resumed_from: int = 0

    def loss(self, seed: int) -> float:
        return self.valid_losses[self.seeds.index(seed)]


@dataclass
class Inference:
    """Post-training inference of one size's trained FP32 models: one loss per seed of the fp32 arm (its `seeds`, in
    order), on the same validation windows as the arm's own final validation loss."""

    fp8: list[float]  # every block's linear layers cast to FP8 with amax scaling
    stats: dict[str, LayerStats]  # the first seed's model at FP8 inference: {layer: LayerStats} (no gradient)
    mx: dict[str, list[float]] = field(default_factory=dict)  # MX variant (config.MX_VARIANTS) -> loss per seed


@dataclass
class PretrainedResult:
    """SmolLM2's post-training FP8 and MX inference (papers.fp8_llm.pretrained)."""

    tokens_per_window: int
    characters: int  # characters the scored tokens cover (all windows)
    nats: dict[str, list[float]]  # "fp32" and each policy: mean nats per token of every window
    biases: dict[str, dict[str, dict[str, float]]]  # "amax" -> layer type -> {"x": median bias, "w": ...}
    bias_values: dict[str, dict[str, list[int]]]  # policy -> "x"/"w" -> every layer's bias (histograms)
    seconds: float

    def to_json(self) -> dict:
        """As the checkpoint of a finished evaluation keeps it (papers.fp8_llm.run)."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> PretrainedResult:
        return cls(**d)

    def perplexity(self, arm: str) -> float:
        return math.exp(float(np.mean(self.nats[arm])))

    def bpc(self, arm: str) -> float:
        """Bits per character: every scored token's nats over the characters they cover."""
        return float(np.sum(self.nats[arm])) * self.tokens_per_window / math.log(2) / self.characters


@dataclass
class Results:
    arms: dict[str, dict[str, ArmResult]]  # size -> arm -> result, in the config's order
    inference: dict[str, Inference]  # size -> post-training inference of its FP32 models
    pretrained: PretrainedResult | None = None  # None where fp8_llm.pretrained.windows is 0

    def arm(self, size: str, arm: str) -> ArmResult:
        return self.arms[size][arm]

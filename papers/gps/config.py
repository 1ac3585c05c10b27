"""The `gps` config section (`gps.<key>=<value>`: `Config`, whose defaults are the default scale's) and the arms of
the ablation. No JAX: the declarations, the decision and the report read it, and the config is validated before a
run starts. The model's presets are papers.gps.model.PRESETS (flax); their names are repeated here (PRESET_NAMES,
tested equal) so that validating `gps.model.preset` loads no model code."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range

# The default design's training seeds (issue 45): every arm from the same 6 seeds, paired; how the number was chosen
# (a pilot's paired spread): papers/gps/claims.py (PILOT).
SEEDS = 6
PRESET_NAMES = ("gps++_44m", "gps++_22m", "gps++_11m", "small")  # papers.gps.model.PRESETS, in its order


@dataclass(frozen=True)
class Arm:
    """One arm of the ablation: what it changes in the model, and whether its training uses grouped input masking.

    Masking chooses per molecule (1:3:1) between dropping the 3D features, dropping the shortest-path features and
    keeping both. A model without 3D features has nothing in the first group to drop: masked, it would lose its
    shortest paths on 3 training molecules in 5 (validation keeps them) and gain nothing, so the no-3D arm trains
    unmasked and removes the 3D features alone. Its comparator must then train unmasked too, or the 3D contrast
    would also carry the effect of masking: `full_unmasked` is full GPS++ trained so, and the cost of 3D is no 3D
    against it (both unmasked), the cost of attention MPNN only against full (both masked, the paper's recipe).
    `comparator` names the arm each ablation is measured against."""

    model: dict = field(default_factory=dict)
    masking: bool = True
    comparator: str | None = None


ARMS = {
    "full": Arm(),
    "mpnn_only": Arm({"attention": False}, comparator="full"),  # no global self-attention
    "full_unmasked": Arm(masking=False, comparator="full"),  # the no-3D arm's comparator: masking the only change
    "no_3d": Arm({"use_3d": False}, masking=False, comparator="full_unmasked"),  # no 3D features at all
}


@dataclass
class TrainConfig:
    """How GPS++ trains (the config's gps.train section; papers.gps.train trains by it)."""

    # the default scale: 6 seeds x 4 arms within the 45-minute CPU budget, 1500 steps (~3.7 epochs of 20,000
    # molecules; the design and its power: papers/gps/claims.py)
    steps: int = 1500
    packs_per_batch: int = 8
    lr: float = 1e-3
    warmup: int = 50
    grad_clip: float = 5.0
    # noisy nodes / edges probability, loss weights 1 : 1.2 : 1.2, grouped input masking 1:3:1 (REFERENCES.md
    # [regularisers])
    noise: float = 0.01
    noisy_weight: float = 1.2
    masking: bool = True
    eval_every: int = 150  # a tenth of the run: the curve, and its fall over the last 10% of steps
    checkpoint_every: int = 250

    def __post_init__(self) -> None:
        check_range("gps.train.steps", self.steps, ge=1)
        check_range("gps.train.packs_per_batch", self.packs_per_batch, ge=1)
        check_range("gps.train.lr", self.lr, gt=0)
        check_range("gps.train.warmup", self.warmup, ge=0, lt=self.steps)
        check_range("gps.train.grad_clip", self.grad_clip, gt=0)
        check_range("gps.train.noise", self.noise, ge=0, lt=1)
        check_range("gps.train.noisy_weight", self.noisy_weight, ge=0)
        check_range("gps.train.eval_every", self.eval_every, ge=1)
        check_range("gps.train.checkpoint_every", self.checkpoint_every, ge=1)


@dataclass
class DataConfig:
    train: int = 20000  # molecules drawn at random from QM9 for training
    valid: int = 2000  # and, disjoint from them, for validation
    max_spd: int = 20

    def __post_init__(self) -> None:
        check_range("gps.data.train", self.train, ge=8)
        check_range("gps.data.valid", self.valid, ge=8)
        check_range("gps.data.max_spd", self.max_spd, ge=1, le=254)
        if self.train + self.valid > 130_831:
            raise ConfigError(
                f"gps.data.train + gps.data.valid = {self.train + self.valid} exceeds QM9's 130,831 molecules"
            )


@dataclass
class LimitsConfig:
    nodes: int = 60
    edges: int = 120
    graphs: int = 8

    def __post_init__(self) -> None:
        check_range("gps.limits.nodes", self.nodes, ge=9)  # QM9 molecules have up to 9 heavy atoms
        check_range("gps.limits.edges", self.edges, ge=1)
        check_range("gps.limits.graphs", self.graphs, ge=1)


@dataclass
class ModelConfig:
    preset: str = "small"
    layers: int | None = None  # override the preset's depth

    def __post_init__(self) -> None:
        check_choice("gps.model.preset", self.preset, PRESET_NAMES)
        if self.layers is not None:
            check_range("gps.model.layers", self.layers, ge=1)


@dataclass
class Config:
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    # training seeds of every arm, trained together; the ablation claims need at least 2 (a spread to decide on).
    # Each seed fixes the initialisation, dropout, packing order, masking and noise of every arm alike (paired arms);
    # the data split follows the run's `seed`, the same for every training seed. How many: SEEDS above.
    seeds: list[int] = field(default_factory=lambda: list(range(SEEDS)))
    data: DataConfig = field(default_factory=DataConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        if not self.arms:
            raise ConfigError(f"gps.arms is empty; choose from {', '.join(ARMS)}")
        for arm in self.arms:
            check_choice("gps.arms", arm, tuple(ARMS))
        if len(set(self.arms)) != len(self.arms):
            raise ConfigError(f"gps.arms={list(self.arms)} names an arm twice; each arm trains once")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"gps.seeds={list(self.seeds)} must be one or more distinct integers")
        bad = [s for s in self.seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
        if bad:
            raise ConfigError(f"gps.seeds={list(self.seeds)}: {bad} not allowed; seeds are non-negative integers")


__all__ = ["ARMS", "PRESET_NAMES", "SEEDS", "Arm", "Config", "DataConfig", "LimitsConfig", "ModelConfig", "TrainConfig"]

"""The `bess` config section (`bess.<key>=<value>`): its defaults are the default scale's; configs/paper_scale/bess/
<scale>.yaml holds what another scale changes. No JAX: the runner validates a config, and `make claims` declares
the claims, without it.

The scoring functions and losses are named here (MODELS, LOSSES) so that a config is checked without loading them;
papers.bess.scoring and papers.bess.losses implement them under these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from papers.bess.kg import BUILTIN

MODELS = ("transe", "distmult", "complex", "rotate")  # papers.bess.scoring
LOSSES = ("log_sigmoid", "margin", "softmax")  # papers.bess.losses


@dataclass
class ModelConfig:
    """One scoring function's hyperparameters. `gammas`: margins tried on each graph's validation split (the best
    is kept); empty: `gamma` alone."""

    dim: int = 200
    gamma: float = 12.0
    gammas: list[float] = field(default_factory=list)
    loss: str = "softmax"
    adversarial: float = 0.0
    margin: float = 1.0
    lr: float = 0.01
    weight_decay: float = 0.0
    init_scale: float = 0.1

    def _check(self, key: str) -> None:
        check_range(f"{key}.dim", self.dim, ge=2)
        check_range(f"{key}.gamma", self.gamma, gt=0)
        for g in self.gammas:
            check_range(f"{key}.gammas", g, gt=0)
        if len(set(self.gammas)) != len(self.gammas):
            raise ConfigError(f"{key}.gammas={list(self.gammas)} repeats a margin")
        check_choice(f"{key}.loss", self.loss, LOSSES)
        check_range(f"{key}.adversarial", self.adversarial, ge=0)
        check_range(f"{key}.margin", self.margin, gt=0)
        check_range(f"{key}.lr", self.lr, gt=0)
        check_range(f"{key}.weight_decay", self.weight_decay, ge=0)
        check_range(f"{key}.init_scale", self.init_scale, gt=0)


@dataclass
class TrainRunConfig:
    """How every scoring function trains (the config's bess.train section)."""

    steps: int = 1000
    batch: int = 512  # triples per step over all devices
    negatives: int = 32  # per (head shard, tail shard) block: each triple sees devices * negatives
    eval_every: int = 100  # validation MRR cadence: the best evaluation's parameters are kept
    checkpoint_every: int = 500

    def __post_init__(self) -> None:
        check_range("bess.train.steps", self.steps, ge=1)
        check_range("bess.train.batch", self.batch, ge=1)
        check_range("bess.train.negatives", self.negatives, ge=1)
        check_range("bess.train.eval_every", self.eval_every, ge=0)
        check_range("bess.train.checkpoint_every", self.checkpoint_every, ge=1)


@dataclass
class ModelsConfig:
    transe: ModelConfig = field(default_factory=lambda: ModelConfig(dim=100))
    distmult: ModelConfig = field(default_factory=lambda: ModelConfig(lr=0.003, init_scale=0.01))
    complex: ModelConfig = field(default_factory=lambda: ModelConfig(lr=0.003, init_scale=0.01))
    # RotatE's own recipe (papers/bess/REFERENCES.md, R1): log-sigmoid with self-adversarial negatives (alpha = 1),
    # the margin chosen on each graph's validation split from a small grid
    rotate: ModelConfig = field(
        default_factory=lambda: ModelConfig(dim=100, loss="log_sigmoid", adversarial=1.0, gammas=[3.0, 6.0, 12.0])
    )

    def __post_init__(self) -> None:
        for name in MODELS:
            cfg = getattr(self, name)
            cfg._check(f"bess.hyper.{name}")
            if name in ("complex", "rotate") and cfg.dim % 2:
                raise ConfigError(f"bess.hyper.{name}.dim={cfg.dim}: complex embeddings need an even width")


@dataclass
class ScalingConfig:
    enabled: bool = True
    devices: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    entities: int = 100_000  # a synthetic graph, large enough for the table to dominate memory
    dim: int = 64
    steps: int = 30

    def __post_init__(self) -> None:
        if not self.devices:
            raise ConfigError("bess.scaling.devices is empty")
        for n in self.devices:
            check_range("bess.scaling.devices", n, ge=1, le=64)
            if 1024 % (n * n) or 64 % n:
                raise ConfigError(
                    f"bess.scaling.devices: {n} devices do not divide the scaling batch (1024 triples into n^2 "
                    "blocks, 64 negatives per triple into n shards); use powers of two up to 16"
                )
        check_range("bess.scaling.entities", self.entities, ge=max(self.devices))
        check_range("bess.scaling.dim", self.dim, ge=2)
        check_range("bess.scaling.steps", self.steps, ge=1)


@dataclass
class Config:
    datasets: list[str] = field(default_factory=lambda: list(BUILTIN))
    models: list[str] = field(default_factory=lambda: list(MODELS))
    devices: int = 4  # the BESS mesh the models train on (simulated CPU devices)
    # training seeds of every (graph, model): the run's seed, seed + 1, ...; the MRR claims are decided on the t
    # interval over them, so at least 2 (the power computation behind 5: papers/bess/README.md)
    seeds: int = 5
    # the least number of seeds of particular (graph, model)s, {graph: {model: seeds}}: more than bess.seeds where a
    # claim's power computation asks for them and the 45-minute default has room (issue 62). RotatE on Nations sat
    # 1.0 half-width from its bound over 5 seeds (sd 0.026); 8 seeds give ~85% power to clear it if the 5 seeds'
    # mean and sd are the truth (papers/bess/README.md); RotatE's margin search makes each seed ~2 minutes
    seeds_for: dict[str, dict[str, int]] = field(default_factory=lambda: {"nations": {"rotate": 8}})
    train: TrainRunConfig = field(default_factory=TrainRunConfig)
    hyper: ModelsConfig = field(default_factory=ModelsConfig)
    scaling: ScalingConfig = field(default_factory=ScalingConfig)

    def __post_init__(self) -> None:
        if not self.datasets:
            raise ConfigError(f"bess.datasets is empty; choose from {', '.join(BUILTIN)}")
        if not self.models:
            raise ConfigError(f"bess.models is empty; choose from {', '.join(MODELS)}")
        for d in self.datasets:
            check_choice("bess.datasets", d, BUILTIN)
        for m in self.models:
            check_choice("bess.models", m, MODELS)
        check_range("bess.devices", self.devices, ge=1, le=64)
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 2:
            raise ConfigError(
                f"bess.seeds={self.seeds!r}: the MRR claims are decided on a t interval over training seeds, so give "
                "an integer of at least 2"
            )
        for graph, per_model in self.seeds_for.items():
            check_choice("bess.seeds_for", graph, BUILTIN)
            for model, n in per_model.items():
                check_choice(f"bess.seeds_for.{graph}", model, MODELS)
                if isinstance(n, bool) or not isinstance(n, int) or n < 2:
                    raise ConfigError(
                        f"bess.seeds_for.{graph}.{model}={n!r}: give an integer of at least 2 (the least number of "
                        "seeds that graph and model train; every model trains at least bess.seeds)"
                    )
        if self.train.batch % (self.devices * self.devices):
            raise ConfigError(
                f"bess.train.batch={self.train.batch} must split evenly into the {self.devices}^2 "
                f"(head shard, tail shard) blocks of bess.devices={self.devices}"
            )


def seed_count(c: Config, graph: str, model: str) -> int:
    """How many seeds (graph, model) trains: bess.seeds, or more where bess.seeds_for asks for more."""
    return max(c.seeds, int(c.seeds_for.get(graph, {}).get(model, 0)))


def training_seeds(c: Config, seed: int, graph: str | None = None, model: str | None = None) -> list[int]:
    """The seeds a (graph, model) trains from: the run's seed and the next seed_count - 1 (bess.seeds where no graph
    and model are named). The first bess.seeds are every model's: the ensembles are built from them."""
    n = c.seeds if graph is None or model is None else seed_count(c, graph, model)
    return [seed + i for i in range(n)]

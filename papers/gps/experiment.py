"""The GPS++ reproduction on QM9: featurise a random split, train full GPS++ and its ablations (MPNN only, no 3D
features, and full GPS++ trained unmasked as the no-3D arm's comparator) on packed batches, every arm from the same
training seeds (each arm's seeds at once), and compare validation MAE of the HOMO-LUMO gap seed by seed.

PCQM4Mv2 cannot be downloaded here; QM9 (qm9pack) has the same target (HOMO-LUMO gap, though at B3LYP/6-31G(2df,p)
rather than PCQM4Mv2's B3LYP/6-31G*) on smaller molecules (at most 9 heavy atoms) and, unlike PCQM4Mv2's validation
set, a DFT geometry for every molecule: the 3D features are available at validation time here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from core.config import ConfigError, check_choice, check_range
from core.progress import progress
from core.report import Report
from core.runner import RunContext
from papers.gps.batching import PackLimits, fitting
from papers.gps.claims import SEEDS
from papers.gps.model import PRESETS, parameter_breakdown, preset
from papers.gps.train import TrainConfig


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
        check_choice("gps.model.preset", self.preset, tuple(PRESETS))
        if self.layers is not None:
            check_range("gps.model.layers", self.layers, ge=1)


@dataclass
class Config:
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    # training seeds of every arm, trained together; the ablation claims need at least 2 (a spread to decide on).
    # Each seed fixes the initialisation, dropout, packing order, masking and noise of every arm alike (paired arms);
    # the data split follows the run's `seed`, the same for every training seed. How many: papers/gps/claims.py (SEEDS).
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


def split(seed: int, train: int, valid: int, total: int = 130_831) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint random QM9 positions (load_qm9 order) for training and validation."""
    order = np.random.default_rng([seed, 11]).permutation(total)
    return np.sort(order[:train]), np.sort(order[train : train + valid])


def arm_config(c, arm: str):
    overrides = dict(ARMS[arm].model)
    if c.model.layers is not None:
        overrides["layers"] = c.model.layers
    return preset(c.model.preset, **overrides)


def arm_training(c, arm: str) -> TrainConfig:
    return replace(c.train, masking=c.train.masking and ARMS[arm].masking)


def reproduce(cfg, run: RunContext) -> Report:
    from papers.gps.cache import featurise_qm9
    from papers.gps.graphs import GraphSet
    from papers.gps.report import build_report
    from papers.gps.train import train_gps

    c = cfg.gps
    seed = int(cfg.seed)
    limits = PackLimits(c.limits.nodes, c.limits.edges, c.limits.graphs)
    t0 = time.perf_counter()
    train_pos, valid_pos = split(seed, c.data.train, c.data.valid)
    cache = Path(cfg.output_root) / "gps" / "features"
    parts = [featurise_qm9(pos, cache, max_spd=c.data.max_spd) for pos in (train_pos, valid_pos)]
    graphs = GraphSet.concatenate(parts)
    featurise_seconds = time.perf_counter() - t0
    is_valid = np.arange(len(graphs)) >= len(parts[0])
    usable, over = fitting(graphs, limits)
    train_index = usable[~is_valid[usable]]
    valid_index = usable[is_valid[usable]]

    results = {}
    bar = progress(total=len(c.arms) * c.train.steps, desc=f"GPS++ arms x {len(c.seeds)} seeds", unit="step")
    for arm in c.arms:
        model_cfg = arm_config(c, arm)
        t = time.perf_counter()
        _, info = train_gps(
            model_cfg,
            graphs,
            train_index,
            valid_index,
            arm_training(c, arm),
            limits,
            checkpoint_dir=run.checkpoint_path(arm),
            resume=run.resume,
            progress_bar=bar,
            seeds=c.seeds,
            name=arm,
        )
        info["seconds"] = time.perf_counter() - t
        info["parameters"] = parameter_breakdown(model_cfg)["total"]
        info["masking"] = arm_training(c, arm).masking
        results[arm] = info
    bar.close()
    mean_mae = float(np.abs(graphs.target[valid_index] - graphs.target[train_index].mean()).mean() * 1000)
    data = {
        "train": len(train_index),
        "valid": len(valid_index),
        "skipped": {**graphs.skipped, **over},
        "missing_3d": int((~graphs.has_3d).sum()),
        "featurise_seconds": featurise_seconds,
        "mean_mae": mean_mae,
    }
    return build_report(cfg, results, data, {name: parameter_breakdown(name) for name in PRESETS})


__all__ = ["ARMS", "Arm", "Config", "arm_config", "arm_training", "reproduce", "split"]

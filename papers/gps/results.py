"""What a GPS++ run computes (the Results `run` returns and `decide` and `render` read): per arm, every training
seed's validation and training MAE, the validation curve, the packing of its training batches and its timings; the
data the arms trained on; the parameter counts of the presets. No JAX: stored as JSON (core.results) and read back.

At the default scale (4 arms x 6 seeds, 10 evaluations) the Results are ~13 kB of JSON; at scale=full (17 seeds, 60
evaluations) ~170 kB."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Packing:
    """Share of the node, edge and molecule slots of the packs that hold real data (papers.gps.batching.efficiency),
    and molecules per pack: the training batches' packing (the last epoch planned for the first seed)."""

    nodes: float
    edges: float
    graphs: float
    graphs_per_pack: float


@dataclass
class ArmResult:
    """One arm trained from every seed of the run (vmapped): values per seed are in the order of `seeds`, which every
    arm shares (the arms are paired by seed)."""

    seeds: list[int]
    valid_mae: list[float]  # meV, per seed, after the last step (the curve's last evaluation)
    train_mae: list[float]  # meV, per seed, on a training subset as large as the validation set, without dropout
    # (step, training loss per seed, validation MAE per seed in meV) at every evaluation
    curve: list[tuple[int, list[float], list[float]]]
    packing: Packing
    parameters: int  # the arm's model
    masking: bool  # trained with grouped input masking
    graphs_per_second: float  # training molecules per second over all seeds, compilation excluded (a timing)
    seconds: float  # wall time of the arm's training and evaluation (a timing)
    traces: int  # compilations of the training step
    devices: int
    resumed_from: int = 0  # the step training resumed from (0: a fresh start; steps: it was already done)


@dataclass
class Data:
    """The molecules the arms trained and were validated on (a random split of QM9 by the run's seed)."""

    train: int  # training molecules that fit a pack
    valid: int  # validation molecules that fit a pack
    skipped: dict[str, int]  # molecules left out, by reason (featurisation failures, over the pack limits)
    missing_3d: int  # molecules without a usable geometry (3D masked)
    mean_mae: float  # meV: validation MAE of predicting the training molecules' mean target
    featurise_seconds: float  # featurisation, or reading it back from the cache (a timing)


@dataclass
class Results:
    arms: dict[str, ArmResult]  # in the config's order of arms
    data: Data
    # parameters per part (node, edge, global, attention, ffn, encoder, decoder, total) of every preset
    breakdowns: dict[str, dict[str, int]] = field(default_factory=dict)


__all__ = ["ArmResult", "Data", "Packing", "Results"]

"""What a BESS run computes (the Results `run` returns and `decide` and `render` read): per graph its sizes and
random-ranker floors, per (graph, model) every training seed's best-validation checkpoint ranked on the test split
(the per-query filtered ranks that the bootstraps and the test-split standard error resample), the ensembles, BESS
against the single-device computation, and the scaling sweep read from the compiled programs. No JAX.

Size at the default scale: the test ranks dominate, 2 x (201 + 1074 + 661) ranks per model and seed (4 models, 5
seeds, 3 more RotatE seeds on Nations) and per ensemble (1 selected and 9 of fixed composition per graph), about
120,000 numbers: some 0.8 MB of JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Graph:
    """One knowledge graph as the run used it, with the baselines the report sets beside the models."""

    entities: int
    relations: int
    test_triples: int
    filtered_floor: float  # exact expected filtered MRR of a uniformly random ranking on the test split
    unfiltered_floor: float  # H_N / N
    untrained: dict[str, float]  # filtered test MRR and hits@1/3/10 of the untrained (random) DistMult embeddings


@dataclass
class SeedRun:
    """One training seed of one (graph, model): the parameters of its best validation MRR, ranked. Where a margin
    grid was searched, the margin with the best validation MRR."""

    seed: int
    gamma: float  # the margin kept
    grid: dict[float, float]  # every margin trained -> its best validation MRR (one entry where none was searched)
    best_step: int  # the step of the kept parameters
    best_valid_mrr: float
    triples_per_second: float  # the kept margin's training rate
    search_seconds: float  # training and validation time of every margin of the grid
    resumed_from: int  # the kept margin's training resumed from this step (0: from scratch)
    test: dict[str, float]  # filtered MRR and hits@1/3/10 on the test split
    valid: dict[str, float]  # the same on the validation split
    test_ranks: np.ndarray  # [2 x test triples] filtered rank of every tail query, then every head query


@dataclass
class Ensemble:
    """A graph's ensemble of the first seed's models (members and weights chosen on the validation split)."""

    weights: dict[str, int]  # model -> times chosen
    test: dict[str, float]  # filtered MRR and hits@1/3/10 on the test split
    test_ranks: np.ndarray  # [2 x test triples], as SeedRun.test_ranks


@dataclass
class Composition:
    """An ensemble of fixed members and equal weights (log-probabilities averaged), ranked: papers.bess.run.compose."""

    members: list[str]  # "<model>/seed_<s>" of each member
    valid_mrr: float  # filtered MRR on the validation split (what chooses between compositions)
    test: dict[str, float]  # filtered MRR and hits@1/3/10 on the test split
    test_ranks: np.ndarray  # [2 x test triples], as SeedRun.test_ranks


@dataclass
class Equivalence:
    """One scorer's BESS step on the training mesh against the single-device reference, same batch: the largest
    relative error of each output."""

    loss: float
    scores: float
    d_entities: float
    d_relations: float


@dataclass
class ScalingRow:
    """BESS at a fixed global batch on one mesh (papers.bess.scaling.measure): speed, per-device memory from XLA's
    analysis of the compiled step, and the bytes the collectives of the compiled BESS and all-gather steps move."""

    devices: int
    steps_per_second: float
    triples_per_second: float
    entity_table_bytes_per_device: int
    state_bytes_per_device: int
    step_bytes_per_device: int
    temp_bytes_per_device: int
    entity_bytes_per_device: int  # what `entities_measured` more entities add per device (arguments + outputs)
    entity_temp_bytes_per_device: int
    entities_measured: int
    bess_bytes_per_step: int
    bess_all_to_all_bytes_per_step: int
    all_gather_bytes_per_step: int
    analytic_all_to_all_bytes_per_step: int
    all_gather_temp_bytes_per_device: int
    loss: float


@dataclass
class Results:
    graphs: dict[str, Graph]  # in the config's order
    runs: dict[tuple[str, str], list[SeedRun]]  # (graph, model) -> its seeds, the run's seed first
    ensembles: dict[str, Ensemble]  # graph -> its ensemble, where the config trains two or more models
    equivalence: dict[str, Equivalence]  # scorer -> BESS against one device, on the first graph
    scaling: list[ScalingRow]  # one per mesh of bess.scaling.devices; empty where scaling is off
    # graph -> its ensembles of fixed composition ("diverse", "one:<model>", "without:<model>"), where the config trains
    # two or more models; empty in runs made before issue 62 kept them
    compositions: dict[str, dict[str, Composition]] = field(default_factory=dict)

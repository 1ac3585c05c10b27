"""The GPS++ run on QM9: featurise a random split (kept in the memo store, papers/gps/cache.py), train full GPS++
and its ablations (MPNN only, no 3D features, and full GPS++ trained unmasked as the no-3D arm's comparator) on
packed batches, every arm from the same training seeds (each arm's seeds at once, papers/gps/train.py), and return
each seed's validation MAE of the HOMO-LUMO gap with the curves, packing and timings (the Results,
papers/gps/results.py). Each arm checkpoints under the run's checkpoint directory (`<arm>/`) and resumes from it.

PCQM4Mv2 cannot be downloaded here; QM9 (qm9pack) has the same target (HOMO-LUMO gap, though at B3LYP/6-31G(2df,p)
rather than PCQM4Mv2's B3LYP/6-31G*) on smaller molecules (at most 9 heavy atoms) and, unlike PCQM4Mv2's validation
set, a DFT geometry for every molecule: the 3D features are available at validation time here.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from core.context import RunContext
from core.progress import progress
from papers.gps.batching import PackLimits, fitting
from papers.gps.cache import featurise_qm9
from papers.gps.config import ARMS, TrainConfig
from papers.gps.graphs import GraphSet
from papers.gps.model import PRESETS, parameter_breakdown, preset
from papers.gps.results import ArmResult, Data, Packing, Results
from papers.gps.train import train_gps


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


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.gps
    seed = int(cfg.seed)
    limits = PackLimits(c.limits.nodes, c.limits.edges, c.limits.graphs)
    t0 = time.perf_counter()
    train_pos, valid_pos = split(seed, c.data.train, c.data.valid)
    # shared by every run of the featurisation code, whatever `resume` says (papers/gps/cache.py)
    parts = [featurise_qm9(pos, ctx.memo_dir, max_spd=c.data.max_spd) for pos in (train_pos, valid_pos)]
    graphs = GraphSet.concatenate(parts)
    featurise_seconds = time.perf_counter() - t0
    is_valid = np.arange(len(graphs)) >= len(parts[0])
    usable, over = fitting(graphs, limits)
    train_index = usable[~is_valid[usable]]
    valid_index = usable[is_valid[usable]]

    arms = {}
    bar = progress(total=len(c.arms) * c.train.steps, desc=f"GPS++ arms x {len(c.seeds)} seeds", unit="step")
    for arm in c.arms:
        model_cfg = arm_config(c, arm)
        training = arm_training(c, arm)
        t = time.perf_counter()
        _, info = train_gps(
            model_cfg,
            graphs,
            train_index,
            valid_index,
            training,
            limits,
            checkpoint_dir=ctx.checkpoint_path(arm),
            resume=ctx.resume,
            progress_bar=bar,
            seeds=c.seeds,
            name=arm,
        )
        seconds = time.perf_counter() - t
        arms[arm] = ArmResult(
            seeds=[int(s) for s in info["seeds"]],
            valid_mae=[float(v) for v in info["valid_mae"]],
            train_mae=[float(v) for v in info["train_mae"]],
            curve=[(int(k), [float(v) for v in loss], [float(v) for v in mae]) for k, loss, mae in info["curve"]],
            packing=Packing(**{k: float(v) for k, v in info["packing"].items()}),
            parameters=int(parameter_breakdown(model_cfg)["total"]),
            masking=bool(training.masking),
            graphs_per_second=float(info["graphs_per_second"]),
            seconds=seconds,
            traces=int(info["traces"]),
            devices=int(info["devices"]),
            resumed_from=int(info["resumed_from"]),
        )
    bar.close()
    mean_mae = float(np.abs(graphs.target[valid_index] - graphs.target[train_index].mean()).mean() * 1000)
    data = Data(
        train=len(train_index),
        valid=len(valid_index),
        skipped={k: int(v) for k, v in {**graphs.skipped, **over}.items()},
        missing_3d=int((~graphs.has_3d).sum()),
        mean_mae=mean_mae,
        featurise_seconds=featurise_seconds,
    )
    return Results(arms, data, {name: parameter_breakdown(name) for name in PRESETS})


__all__ = ["arm_config", "arm_training", "run", "split"]


IPU_PACKS = 2  # packs of the micro-batch the simulated IPU costs a step on


def ipu_steps(cfg) -> list:
    """The training step of full GPS++ and of the MPNN-only ablation (`train.seed_step`, one seed, with the run's
    dropout) at the run's model preset and pack limits, for the simulated IPU (ipu_model.steps): a micro-batch of
    IPU_PACKS packs, as an IPU replica takes a few packs a step."""
    import jax

    from ipu_model.steps import Step
    from papers.gps.model import example_batch
    from papers.gps.train import seed_step

    c = cfg.gps
    limits = c.limits
    batch = example_batch(IPU_PACKS, limits.nodes, limits.edges, limits.graphs)
    batch.update(atoms_clean=batch["atoms"], bonds_clean=batch["bonds"])
    batch["target"] = np.zeros((IPU_PACKS, limits.graphs), np.float32)
    item = {"seed": np.int32(0), "step": np.int32(0), "batch": batch, "mean": np.float32(0), "std": np.float32(1)}
    steps = []
    for arm in (a for a in ("full", "mpnn_only") if a in c.arms):
        init, step = seed_step(arm_config(c, arm), arm_training(c, arm))
        steps.append(
            Step(
                f"{arm} training step",
                jax.jit(step),
                (jax.eval_shape(init, np.int32(0)), item),  # arrays: only their shapes are read
                f"preset {c.model.preset}; {IPU_PACKS} packs of at most {limits.nodes} nodes, {limits.edges} edges, "
                f"{limits.graphs} molecules",
            )
        )
    return steps

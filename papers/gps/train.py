"""Data-parallel training of GPS++ on packed batches, several seeds at once.

The seeds of one arm train together (`core.train.fit_seeds` under `jax.vmap`): parameters, optimiser state and
batches carry a leading seed axis, and each seed draws its own initialisation, dropout, packing order, masking and
noise. Arms trained from the same seed share them (the ablations are paired by seed): flax derives each module's
initialisation and dropout keys from the seed's key and the module's name, so a module two arms have in common starts
from the same weights and drops the same units, and the batches (packing order, masking groups, noise) depend on the
seed and epoch alone (`Epochs`).

The batch's pack axis is sharded over a one-dimensional device mesh ("data"), parameters and optimiser state are
replicated, and the gradient mean over packs becomes an all-reduce that XLA inserts: the same code runs on one CPU,
on `XLA_FLAGS=--xla_force_host_platform_device_count=N` simulated devices, or on several accelerators.

Loss (GPS++): L1 on the standardised target over the real molecules, plus `noisy_weight` x (cross-entropy of the
noisy-node head on the clean atom features + cross-entropy of the noisy-edge head on the clean bond features).
Adam with gradient clipping by global norm, linear warm-up then linear decay to zero (the paper's schedule).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from core.devices import to_host
from core.train import fit_seeds
from papers.gps.batching import MODEL_KEYS, PackLimits, assemble, batches, efficiency, plan
from papers.gps.config import TrainConfig  # the config's gps.train section (no JAX), trained by here
from papers.gps.features import ATOM_VOCAB, BOND_VOCAB
from papers.gps.graphs import GraphSet
from papers.gps.model import GPSConfig, GPSPlusPlus, example_batch


def data_mesh(devices=None) -> Mesh:
    return Mesh(np.asarray(devices if devices is not None else jax.devices()), ("data",))


def _categorical_ce(logits: jax.Array, labels: jax.Array, vocab: tuple[int, ...], mask: jax.Array) -> jax.Array:
    """Mean over the real items and features of -log p(clean category); logits hold the features side by side."""
    total, start = 0.0, 0
    for k, v in enumerate(vocab):
        logp = jax.nn.log_softmax(logits[..., start : start + v], -1)
        total = total - jnp.take_along_axis(logp, labels[..., k : k + 1], -1)[..., 0]
        start += v
    return jnp.sum(total * mask) / (len(vocab) * jnp.maximum(mask.sum(), 1))


@dataclass(frozen=True)
class _Compiled:
    model: GPSPlusPlus
    opt: optax.GradientTransformation
    step: Callable  # one seed's (state, item) -> (state, metrics); fit_seeds vmaps and jits it
    predict: Callable  # jitted (stacked params, batch, mean, std) -> [S, B, G] predictions in target units
    traces: list[int]  # [number of times `step` was traced]
    init: Callable  # jitted seed -> one seed's (params, optimiser state) (op by op, flax's init compiles every op)


@functools.lru_cache(maxsize=8)
def _compiled(cfg: GPSConfig, lr: float, steps: int, warmup: int, grad_clip: float, noisy_weight: float) -> _Compiled:
    """The step, prediction and initialisation of one model and optimiser, shared by every Trainer with the same
    settings (so an evaluation or a second mesh reuses the compiled prediction; the standardisation of the target is
    an argument, not a constant). jit specialises on the input shardings, so one function serves every mesh."""
    model = GPSPlusPlus(cfg)
    schedule = optax.join_schedules(
        [optax.linear_schedule(0.0, lr, max(warmup, 1)), optax.linear_schedule(lr, 0.0, steps - warmup)], [warmup]
    )
    opt = optax.chain(optax.clip_by_global_norm(grad_clip), optax.adam(schedule))
    traces = [0]

    def loss(params, batch, key, mean, std):
        out = model.apply({"params": params}, batch, deterministic=False, rngs={"dropout": key})
        gm = batch["graph_mask"].astype(jnp.float32)
        y = (batch["target"] - mean) / std
        l1 = jnp.sum(jnp.abs(out["target"] - y) * gm) / jnp.maximum(gm.sum(), 1.0)
        nodes = _categorical_ce(out["atoms"], batch["atoms_clean"], ATOM_VOCAB, batch["node_mask"])
        edges = _categorical_ce(out["bonds"], batch["bonds_clean"], BOND_VOCAB, batch["edge_mask"])
        total = l1 + noisy_weight * (nodes + edges)
        return total, {"l1": l1, "noisy_nodes": nodes, "noisy_edges": edges}

    def step(state, item):
        traces[0] += 1
        params, opt_state = state
        key = jax.random.fold_in(_keys(item["seed"])[1], item["step"])  # the step's dropout
        grads_of = jax.value_and_grad(loss, has_aux=True)
        (value, parts), grads = grads_of(params, item["batch"], key, item["mean"], item["std"])
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {"loss": value, **parts}

    def predict(params, batch, mean, std):
        return model.apply({"params": params}, batch, deterministic=True)["target"] * std + mean

    def init(seed):  # flax folds each module's name into the key: shared modules start alike in every arm
        params = model.init(_keys(seed)[0], example_batch(1), deterministic=True)["params"]
        return params, opt.init(params)

    predict_seeds = jax.jit(jax.vmap(predict, in_axes=(0, None, None, None)))
    return _Compiled(model, opt, step, predict_seeds, traces, jax.jit(init))


def _keys(seed) -> jax.Array:
    """A seed's two streams: [0] initialisation, [1] dropout (folded with the step number)."""
    return jax.random.split(jax.random.key(seed))


def seed_step(cfg: GPSConfig, tc: TrainConfig) -> tuple[Callable, Callable]:
    """(init, step) of one seed, as the Trainer fits them: `init(seed)` the parameters and optimiser state, `step(state,
    item)` one training step on `item` (Trainer.item: seed, step number, batch, target standardisation)."""
    c = _compiled(cfg, tc.lr, tc.steps, tc.warmup, tc.grad_clip, tc.noisy_weight)
    return c.init, c.step


class Trainer:
    """The step, initialisation and evaluation of one model for a group of seeds on one mesh."""

    def __init__(
        self,
        cfg: GPSConfig,
        tc: TrainConfig,
        limits: PackLimits,
        mean: float,
        std: float,
        mesh=None,
        seeds: Sequence[int] = (0,),
    ):
        self.cfg, self.tc, self.limits, self.seeds = cfg, tc, limits, [int(s) for s in seeds]
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds={list(seeds)} must be distinct and at least one")
        self.mean, self.std = np.float32(mean), np.float32(std)
        self.mesh = mesh or data_mesh()
        n_dev = self.mesh.devices.size
        if tc.packs_per_batch % n_dev:
            raise ValueError(
                f"packs_per_batch={tc.packs_per_batch} must be a multiple of the {n_dev} devices of the mesh"
            )
        self.compiled = _compiled(cfg, tc.lr, tc.steps, tc.warmup, tc.grad_clip, tc.noisy_weight)
        self.model, self.opt = self.compiled.model, self.compiled.opt
        self.replicated = NamedSharding(self.mesh, P())
        self.sharded = NamedSharding(self.mesh, P("data"))
        self._traces_before = self.compiled.traces[0]

    @property
    def traces(self) -> int:
        """How many times the train step was traced (compiled) since this trainer was made."""
        return self.compiled.traces[0] - self._traces_before

    def init(self, seed):
        """One seed's (params, optimiser state), replicated over the mesh (fit_seeds vmaps it over the seeds)."""
        return jax.device_put(self.compiled.init(seed), self.replicated)

    def step(self, state: tuple, item: dict) -> tuple[tuple, dict]:
        """One seed's training step on `item` (seed, step number, batch, target standardisation); fit_seeds vmaps
        and jits it. The batch's packs are sharded over the mesh (XLA lays the stacked host batch out so)."""
        item = dict(item, batch=jax.lax.with_sharding_constraint(item["batch"], self.sharded))
        return self.compiled.step(state, item)

    def item(self, seed: int, k: int, batch: dict) -> dict:
        return {"seed": np.int32(seed), "step": np.int32(k), "batch": batch, "mean": self.mean, "std": self.std}

    def put(self, batch: dict) -> dict:
        return jax.device_put(batch, self.sharded)

    def predict(self, params, graphs: GraphSet, index: np.ndarray) -> np.ndarray:
        """Predictions [seeds, molecules] (target units) of the stacked `params` for graphs[index], in that order."""
        packs = plan(graphs, index, self.limits, None)
        arrays = assemble(graphs, packs, self.limits)
        pred = np.zeros((len(self.seeds), len(graphs)), np.float64)
        for batch in batches(arrays, self.tc.packs_per_batch, self.limits, (*MODEL_KEYS, "ids")):
            ids = batch.pop("ids")
            out = np.asarray(to_host(self.compiled.predict(params, self.put(batch), self.mean, self.std)))
            real = ids >= 0
            pred[:, ids[real]] = out[:, real]
        return pred[:, np.asarray(index)]

    def mae_mev(self, params, graphs: GraphSet, index: np.ndarray) -> list[float]:
        """Each seed's mean absolute error (meV) on graphs[index]."""
        error = np.abs(self.predict(params, graphs, index) - graphs.target[index]).mean(axis=1) * 1000
        return [float(v) for v in error]


def train_gps(
    cfg: GPSConfig,
    graphs: GraphSet,
    train_index: np.ndarray,
    valid_index: np.ndarray,
    tc: TrainConfig,
    limits: PackLimits | None = None,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = True,
    progress_bar=None,
    mesh=None,
    seeds: Sequence[int] = (0,),
    name: str = "gps",
) -> tuple[dict, dict]:
    """Train every seed of `seeds` on graphs[train_index] for tc.steps batches, together; validation MAE (meV)
    every eval_every steps. With `checkpoint_dir` the run saves every checkpoint_every steps and, when `resume`,
    continues from the newest checkpoint there.
    Returns (params stacked over the seeds, info) with per-seed MAEs and curves, graphs/s after compilation (all
    seeds), packing efficiency and trace count."""
    limits = limits or PackLimits()
    train_index, valid_index = np.asarray(train_index), np.asarray(valid_index)
    if len(train_index) == 0 or len(valid_index) == 0:
        raise ValueError("train_gps needs non-empty training and validation sets")
    target = graphs.target[train_index]
    trainer = Trainer(cfg, tc, limits, target.mean(), target.std() + 1e-6, mesh, seeds)
    epochs = {s: Epochs(graphs, train_index, limits, tc, s) for s in trainer.seeds}
    run = fit_seeds(
        trainer.seeds,
        trainer.init,
        trainer.step,
        lambda s, k: trainer.item(s, k, epochs[s].batch(k)),
        evaluate=lambda state: {"valid/mae": trainer.mae_mev(state[0], graphs, valid_index)},
        steps=tc.steps,
        eval_every=tc.eval_every,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=tc.checkpoint_every,
        resume=resume,
        name=name,
        bar=progress_bar,
        count=lambda item: {"graphs": int(item["batch"]["graph_mask"].sum())},
        untimed=3,  # compilation, and the first steps after it
    )
    params = run.state[0]
    steps, losses = run.history.series("train/loss")
    maes = run.history.series("valid/mae")[1]
    curve = [
        (int(k), [float(v) for v in loss], [float(m) for m in mae])
        for k, loss, mae in zip(steps, losses, maes, strict=True)
    ]
    first = epochs[trainer.seeds[0]]
    packs = first.last_packs if first.last_packs is not None else plan(graphs, train_index, limits, None)
    info = {
        "seeds": trainer.seeds,
        "valid_mae": curve[-1][2],
        "train_mae": trainer.mae_mev(params, graphs, train_index[: len(valid_index)]),
        "curve": curve,
        "graphs_per_second": run.rate("graphs"),
        "resumed_from": run.resumed_from,
        "packing": efficiency(graphs, packs, limits),
        "traces": trainer.traces,
        "devices": int(trainer.mesh.devices.size),
    }
    return params, info


class Epochs:
    """The training batches, step by step: epoch e packs the training molecules, masks inputs and adds noise with
    the generator seeded (seed, e), and cuts the packs into batches; step k is a batch of the epoch it falls in, so
    any step can be replayed (a resumed run plans the earlier epochs again to find where it stands). Nothing else
    enters the draws: every arm trained from `seed` sees the same packs, masking groups and noise (an unmasked arm
    the same groups, unapplied)."""

    def __init__(self, graphs: GraphSet, index: np.ndarray, limits: PackLimits, tc: TrainConfig, seed: int = 0):
        self.graphs, self.index, self.limits, self.tc, self.seed = graphs, index, limits, tc, seed
        self.first: list[int] = [0]  # global step of each planned epoch's first batch
        self.current: tuple[int, list[dict]] | None = None
        self.last_packs = None

    def batch(self, k: int) -> dict:
        epoch = 0
        while True:
            if epoch == len(self.first) - 1:  # the epoch's length is not known yet: plan it
                rng, packs = self._plan(epoch)
                self.first.append(self.first[epoch] + -(-len(packs) // self.tc.packs_per_batch))
                if k < self.first[epoch + 1]:
                    self._assemble(epoch, rng, packs)
            if k < self.first[epoch + 1]:
                if self.current is None or self.current[0] != epoch:
                    self._assemble(epoch, *self._plan(epoch))
                return self.current[1][k - self.first[epoch]]
            epoch += 1

    def _plan(self, epoch: int):
        rng = np.random.default_rng([self.seed, epoch])  # the epoch's packing, masking and noise
        return rng, plan(self.graphs, self.index, self.limits, rng)

    def _assemble(self, epoch: int, rng, packs) -> None:
        arrays = assemble(self.graphs, packs, self.limits, rng=rng, noise=self.tc.noise, masking=self.tc.masking)
        self.current = (epoch, list(batches(arrays, self.tc.packs_per_batch, self.limits)))
        self.last_packs = packs

"""Training knowledge-graph embeddings with BESS, and their filtered evaluation.

Training uses reciprocal relations (Lacroix et al. 2018): every training triple (h, r, t) also enters as
(t, r + R, h), so that predicting a head is predicting the tail of the inverse relation and BESS's tail-only
negatives train both directions. Evaluation ranks, for every valid or test triple, the true tail of (h, r, ?) and
the true head of (?, r, t) -- the latter scored as (t, r + R, ?) -- among all N entities, with the other known
answers (from every split) filtered out and ties averaged (papers.bess.scoring).

`train_kge` runs the BESS step (papers.bess.bess) on a 1-D mesh of n devices with optax's AdamW; the entity table
stays sharded over the mesh for the whole run, relations are replicated. Checkpoints every `checkpoint_every` steps;
since the batch of step s depends only on (seed, s), a resumed run continues exactly where the killed one stopped.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from core.checkpoint import Checkpointer
from core.devices import require_devices
from papers.bess.bess import AXIS, BalancedSampler, bess_loss_fn, shard_entities
from papers.bess.kg import KGDataset
from papers.bess.losses import Loss
from papers.bess.scoring import (
    check_model,
    filtered_ranks,
    known_answers,
    ranking_metrics,
    relation_width,
    score_candidates,
)


@dataclass(frozen=True)
class KGEConfig:
    """One model's training: the scorer and its hyperparameters, and the BESS batch shape."""

    model: str = "distmult"
    dim: int = 200  # entity width in reals (complex models: dim/2 complex entries)
    gamma: float = 12.0  # TransE and RotatE margin (their scores are gamma - distance)
    loss: str = "softmax"
    adversarial: float = 0.0  # self-adversarial temperature of the log-sigmoid loss
    margin: float = 1.0
    lr: float = 0.01
    weight_decay: float = 0.0
    init_scale: float = 0.1
    steps: int = 1000
    batch: int = 512  # triples per step over all devices: b = batch / n^2 per block
    negatives: int = 32  # per block: each triple sees n * negatives
    devices: int = 4
    seed: int = 0
    eval_every: int = 0  # 0: validate only at the end
    checkpoint_every: int = 500

    def __post_init__(self) -> None:
        check_model(self.model)
        relation_width(self.model, self.dim)
        Loss(self.loss, self.adversarial, self.margin, 2)
        if self.batch % (self.devices * self.devices):
            raise ValueError(
                f"the batch of {self.batch} triples must split evenly into the {self.devices}^2 blocks of "
                f"{self.devices} devices"
            )


def with_reciprocals(triples: np.ndarray, num_relations: int) -> np.ndarray:
    """Triples plus their inverses (t, r + R, h)."""
    t = np.asarray(triples)
    return np.concatenate([t, np.stack([t[:, 2], t[:, 1] + num_relations, t[:, 0]], 1)])


def make_mesh(devices: int) -> Mesh:
    """A 1-D mesh of `devices` devices (simulated CPU devices when the machine has fewer; core.devices)."""
    return Mesh(np.array(require_devices(devices)), (AXIS,))


def init_tables(cfg: KGEConfig, num_entities: int, num_relations: int) -> tuple[np.ndarray, np.ndarray]:
    """Entities N(0, init_scale^2); relations the same, or RotatE's phases uniform in [-pi, pi)."""
    rng = np.random.default_rng([cfg.seed, 5])
    entities = (cfg.init_scale * rng.standard_normal((num_entities, cfg.dim))).astype(np.float32)
    width = relation_width(cfg.model, cfg.dim)
    if cfg.model == "rotate":
        relations = rng.uniform(-np.pi, np.pi, (2 * num_relations, width)).astype(np.float32)
    else:
        relations = (cfg.init_scale * rng.standard_normal((2 * num_relations, width))).astype(np.float32)
    return entities, relations


def place_tables(mesh: Mesh, sharding, entities: np.ndarray, relations: np.ndarray) -> dict:
    """The trainable tables on the mesh: entities [N, d] as the sharded [n, S, d] table, relations replicated."""
    return {
        "entities": jax.device_put(sharding.to_shards(entities), NamedSharding(mesh, P(AXIS))),
        "relations": jax.device_put(relations, NamedSharding(mesh, P())),
    }


@lru_cache(maxsize=32)
def _compiled_step(mesh: Mesh, model: str, gamma: float, loss: Loss, optimiser_key: tuple):
    lr, weight_decay = optimiser_key
    optimiser = optax.adamw(lr, weight_decay=weight_decay)
    bess = bess_loss_fn(mesh, model, gamma, loss)

    def mean_loss(params, arrays):
        total, _ = bess(params["entities"], params["relations"], arrays)
        return total / arrays.head_row.size

    @jax.jit
    def step(params, opt_state, arrays):
        value, grads = jax.value_and_grad(mean_loss)(params, arrays)
        updates, opt_state = optimiser.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return optimiser, step


def train_kge(
    kg: KGDataset,
    cfg: KGEConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = True,
    progress_bar=None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train cfg.model on kg.train with BESS on cfg.devices devices. Returns (entities [N, d], relations [2R, d_r]
    as numpy in global id order, info with the loss/validation curve and the training rate)."""
    mesh = make_mesh(cfg.devices)
    sharding = shard_entities(kg.num_entities, cfg.devices, cfg.seed)
    sampler = BalancedSampler(
        with_reciprocals(kg.train, kg.num_relations),
        sharding,
        b=cfg.batch // cfg.devices**2,
        n_neg=cfg.negatives,
        seed=cfg.seed,
    )
    loss = Loss(cfg.loss, cfg.adversarial, cfg.margin, kg.num_entities)
    optimiser, step_fn = _compiled_step(mesh, cfg.model, float(cfg.gamma), loss, (cfg.lr, cfg.weight_decay))
    entities, relations = init_tables(cfg, kg.num_entities, kg.num_relations)
    params = place_tables(mesh, sharding, entities, relations)
    opt_state = optimiser.init(params)
    done, curve, measured, spent = 0, [], (0, 0.0), 0.0
    ckpt = Checkpointer(checkpoint_dir) if checkpoint_dir is not None else None
    if ckpt is not None and resume and ckpt.latest_step() is not None:
        like = (params, opt_state)
        done, state, meta = ckpt.restore(like)
        params, opt_state = jax.tree.map(lambda ref, x: jax.device_put(x, ref.sharding), like, state)
        curve = [tuple(c) for c in meta["curve"]]
        measured = tuple(meta["measured"])
        spent = meta.get("seconds", 0.0)
        if progress_bar is not None:
            progress_bar.update(done)
    known = known_answers(kg.all_triples())
    triples, seconds = measured
    recent, started = [], time.perf_counter()
    for step in range(done, cfg.steps):
        batch = sampler.sample(step)
        t = time.perf_counter()
        params, opt_state, value = step_fn(params, opt_state, batch)
        recent.append(value)
        if step > done + 2:  # after compilation
            value.block_until_ready()
            seconds += time.perf_counter() - t
            triples += cfg.batch
        if progress_bar is not None:
            progress_bar.update(1)
        last = step + 1 == cfg.steps
        if (cfg.eval_every and (step + 1) % cfg.eval_every == 0) or last:
            mean = float(np.mean([float(v) for v in recent]))
            recent = []
            valid = evaluate(kg, *_global(params, sharding), cfg, "valid", known)["mrr"]
            curve.append((step + 1, mean, valid))
        if ckpt is not None and ((step + 1) % cfg.checkpoint_every == 0 or last):
            meta = {"curve": curve, "measured": [triples, seconds], "seconds": spent + time.perf_counter() - started}
            ckpt.save(step + 1, (params, opt_state), meta)
    entities, relations = _global(params, sharding)
    info = {
        "curve": curve,
        "triples_per_second": triples / seconds if seconds else float("nan"),
        "resumed_from": done,
        "seconds": spent + time.perf_counter() - started,  # training and validation, over every (resumed) run
        "config": asdict(cfg),
    }
    return entities, relations, info


def _global(params, sharding) -> tuple[np.ndarray, np.ndarray]:
    return sharding.to_global(np.asarray(params["entities"])), np.asarray(params["relations"])


@lru_cache(maxsize=16)
def _candidate_fn(model: str, gamma: float):
    @jax.jit
    def candidates(entities, query_entity, query_relation):
        return score_candidates(model, query_entity, query_relation, entities, gamma)

    return candidates


def candidate_scores(
    entities: np.ndarray, relations: np.ndarray, cfg: KGEConfig, triples: np.ndarray, chunk: int = 512
) -> np.ndarray:
    """Scores [2B, N] of every entity as the answer to the tail queries (h, r, ?) of `triples`, then to their head
    queries, asked as (t, r + R, ?)."""
    num_relations = len(relations) // 2
    q_entity = np.concatenate([triples[:, 0], triples[:, 2]])
    q_relation = np.concatenate([triples[:, 1], triples[:, 1] + num_relations])
    fn = _candidate_fn(cfg.model, float(cfg.gamma))
    E, R = jnp.asarray(entities), jnp.asarray(relations)
    out = []
    for s in range(0, len(q_entity), chunk):
        e, r = q_entity[s : s + chunk], q_relation[s : s + chunk]
        pad = chunk - len(e)  # every chunk has the same shape: one compilation per model
        e, r = np.pad(e, (0, pad)), np.pad(r, (0, pad))
        out.append(np.asarray(fn(E, E[e], R[r]))[: chunk - pad])
    return np.concatenate(out)


def query_answers(triples: np.ndarray, known) -> tuple[np.ndarray, list[set]]:
    """The true answer and the known answers (for filtering) of each tail query, then each head query."""
    tails, heads = known
    answers = np.concatenate([triples[:, 2], triples[:, 0]])
    sets = [tails[(h, r)] for h, r, _ in triples.tolist()] + [heads[(r, t)] for _, r, t in triples.tolist()]
    return answers, sets


def rank_scores(scores: np.ndarray, triples: np.ndarray, known) -> np.ndarray:
    answers, sets = query_answers(triples, known)
    return filtered_ranks(scores, answers, sets)


def evaluate(kg: KGDataset, entities, relations, cfg: KGEConfig, split: str = "test", known=None) -> dict:
    """Filtered MRR and hits@1/3/10 over both directions of kg.<split>."""
    triples = getattr(kg, split)
    known = known if known is not None else known_answers(kg.all_triples())
    return ranking_metrics(rank_scores(candidate_scores(entities, relations, cfg, triples), triples, known))


def ensemble_scores(members: list[np.ndarray], weights=None) -> np.ndarray:
    """The ensemble's score of a candidate: the weighted mean over members of its log-probability under each
    member's softmax over the N candidates (a product of experts). Raw scores of different scorers live on
    different scales; log-probabilities are comparable, and unlike averaged probabilities they do not let the
    sharpest member decide alone."""
    weights = np.ones(len(members)) if weights is None else np.asarray(weights, np.float64)
    logp = [np.asarray(jax.nn.log_softmax(jnp.asarray(s, jnp.float32), -1), np.float64) for s in members]
    return np.tensordot(weights / weights.sum(), np.stack(logp), 1)


def select_ensemble(valid_scores: dict[str, np.ndarray], triples: np.ndarray, known, rounds: int = 10) -> dict:
    """Greedy forward selection with replacement on the validation split (Caruana et al. 2004): start from the
    best single model and, for `rounds` rounds, add (again) the member that most raises the ensemble's validation
    MRR, stopping when none does. Returns {member: weight (times chosen)}; the test split is never looked at."""

    def mrr(counts):
        names = [m for m in counts if counts[m]]
        scores = ensemble_scores([valid_scores[m] for m in names], [counts[m] for m in names])
        return ranking_metrics(rank_scores(scores, triples, known))["mrr"]

    counts = dict.fromkeys(valid_scores, 0)
    singles = {m: ranking_metrics(rank_scores(s, triples, known))["mrr"] for m, s in valid_scores.items()}
    counts[max(singles, key=singles.get)] = 1
    best = max(singles.values())
    for _ in range(rounds):
        trials = {m: mrr({**counts, m: counts[m] + 1}) for m in valid_scores}
        pick = max(trials, key=trials.get)
        if trials[pick] <= best:
            break
        counts[pick] += 1
        best = trials[pick]
    return {m: k for m, k in counts.items() if k}


__all__ = [
    "KGEConfig",
    "candidate_scores",
    "ensemble_scores",
    "evaluate",
    "init_tables",
    "make_mesh",
    "place_tables",
    "rank_scores",
    "select_ensemble",
    "train_kge",
    "with_reciprocals",
]

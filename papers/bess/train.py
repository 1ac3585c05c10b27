"""Training knowledge-graph embeddings with BESS, and their filtered evaluation.

Training uses reciprocal relations (Lacroix et al. 2018): every training triple (h, r, t) also enters as
(t, r + R, h), so that predicting a head is predicting the tail of the inverse relation and BESS's tail-only
negatives train both directions. Evaluation ranks, for every valid or test triple, the true tail of (h, r, ?) and
the true head of (?, r, t) -- the latter scored as (t, r + R, ?) -- among all N entities, with the other known
answers (from every split) filtered out and ties averaged (papers.bess.ranking).

`train_kge` runs the BESS step (papers.bess.bess) on a 1-D mesh of n devices with optax's AdamW; the entity table
stays sharded over the mesh for the whole run, relations are replicated. It evaluates the validation MRR every
`eval_every` steps and returns the parameters of the best evaluation, not the last (early stopping on validation;
the test split is never looked at). Checkpoints every `checkpoint_every` steps, the best parameters whenever they
change; since the batch of step s depends only on (seed, s), a resumed run continues exactly where the killed one
stopped.

RotatE follows its own paper's recipe (Sun et al. 2019, papers/bess/REFERENCES.md): log-sigmoid loss with
self-adversarial negatives at temperature alpha, score gamma - distance with the margin gamma chosen on the
validation split from a small grid (`gammas`), entities initialised uniformly in +-(gamma + 2) / (dim / 2).
"""

from __future__ import annotations

import math
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
from core.devices import is_main_process, require_devices, to_host
from core.train import fit, init_state, optimizer_step
from papers.bess.bess import AXIS, BalancedSampler, bess_loss_fn, shard_entities
from papers.bess.config import ModelConfig, TrainRunConfig
from papers.bess.kg import KGDataset
from papers.bess.losses import Loss
from papers.bess.ranking import known_answers, rank_scores, ranking_metrics
from papers.bess.scoring import check_model, relation_width, score_candidates


@dataclass
class KGEConfig(ModelConfig, TrainRunConfig):
    """One model's training: the scorer, its hyperparameters (ModelConfig), the training settings and BESS batch
    shape (TrainRunConfig), the mesh and the seed."""

    model: str = "distmult"
    devices: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        check_model(self.model)
        TrainRunConfig.__post_init__(self)
        self._check(f"bess.hyper.{self.model}")
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


def rotate_init_range(gamma: float, dim: int) -> float:
    """RotatE's entity initialisation range (gamma + epsilon) / k, epsilon = 2, k = dim / 2 complex entries (Sun et
    al. 2019, the authors' code)."""
    return (gamma + 2.0) / (dim // 2)


def init_tables(cfg: KGEConfig, num_entities: int, num_relations: int) -> tuple[np.ndarray, np.ndarray]:
    """Entities N(0, init_scale^2) (RotatE: uniform in +-rotate_init_range); relations N(0, init_scale^2), or
    RotatE's phases uniform in [-pi, pi)."""
    rng = np.random.default_rng([cfg.seed, 5])
    if cfg.model == "rotate":
        bound = rotate_init_range(cfg.gamma, cfg.dim)
        entities = rng.uniform(-bound, bound, (num_entities, cfg.dim)).astype(np.float32)
    else:
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
def compiled_step(mesh: Mesh, model: str, gamma: float, loss: Loss, optimiser_key: tuple):
    lr, weight_decay = optimiser_key
    optimiser = optax.adamw(lr, weight_decay=weight_decay)
    bess = bess_loss_fn(mesh, model, gamma, loss)

    def mean_loss(params, arrays):
        total, _ = bess(params["entities"], params["relations"], arrays)
        return total / arrays.head_row.size

    return optimiser, jax.jit(optimizer_step(mean_loss, optimiser))


def train_kge(
    kg: KGDataset,
    cfg: KGEConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = True,
    progress_bar=None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train cfg.model on kg.train with BESS on cfg.devices devices. Returns (entities [N, d], relations [2R, d_r]
    as numpy in global id order, at the evaluation with the best validation MRR; info with the loss/validation
    curve, the best step and the training rate)."""
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
    optimiser, step_fn = compiled_step(mesh, cfg.model, float(cfg.gamma), loss, (cfg.lr, cfg.weight_decay))
    entities, relations = init_tables(cfg, kg.num_entities, kg.num_relations)
    known = known_answers(kg.all_triples())
    best = _BestParams(checkpoint_dir, resume, entities, relations)
    done = {"step": 0}

    def validate(state) -> dict:
        E, R = _global(state["params"], sharding)
        mrr = evaluate(kg, E, R, cfg, "valid", known)["mrr"]
        best.offer(done["step"], mrr, E, R)
        return {"valid/mrr": mrr}

    replicated = NamedSharding(mesh, P())

    def batch_of(k: int):
        batch = sampler.sample(k)
        # a mesh over several processes takes global arrays: every process holds the same batch
        return jax.device_put(batch, replicated) if jax.process_count() > 1 else batch

    run = fit(
        step_fn,
        init_state(place_tables(mesh, sharding, entities, relations), optimiser),
        batch_of,
        steps=cfg.steps,
        evaluate=validate,
        eval_every=cfg.eval_every,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        name=f"{kg.name}/{cfg.model}",
        bar=progress_bar,
        count=lambda batch: {"triples": cfg.batch},
        on_step=lambda k, *_: done.update(step=k),
        untimed=3,  # compilation, and the first steps after it
    )
    if best.entities is None:  # a finished run resumed from checkpoints written before the best was kept
        done["step"] = cfg.steps
        validate(run.state)
    steps, losses = run.history.series("train/loss")
    valid = run.history.series("valid/mrr")[1]
    info = {
        "curve": [(int(k), float(v), float(m)) for k, v, m in zip(steps, losses, valid, strict=True)],
        "best_step": best.step,
        "best_valid_mrr": best.mrr,
        "final_valid_mrr": float(valid[-1]) if len(valid) else math.nan,
        "triples_per_second": run.rate("triples"),
        "resumed_from": run.resumed_from,
        "seconds": run.wall_seconds,  # training and validation, over every (resumed) run
        "config": asdict(cfg),
    }
    return best.entities, best.relations, info


class _BestParams:
    """The parameters of the best validation MRR so far (strictly better replaces: the earliest of equals stays),
    saved under `checkpoint_dir/best` when they change so that a resumed run keeps them; a fresh start clears them
    with the run's other checkpoints."""

    def __init__(self, checkpoint_dir, resume: bool, entities: np.ndarray, relations: np.ndarray):
        self.step, self.mrr, self.entities, self.relations = 0, -math.inf, None, None
        self.store = Checkpointer(Path(checkpoint_dir) / "best", keep=1) if checkpoint_dir is not None else None
        if self.store is None:
            return
        resuming = resume and Checkpointer(checkpoint_dir).latest_step() is not None
        if resuming and self.store.latest_step() is not None:
            like = {"entities": entities, "relations": relations}
            self.step, saved, meta = self.store.restore(like)
            self.entities, self.relations, self.mrr = saved["entities"], saved["relations"], float(meta["mrr"])
        elif is_main_process():
            self.store.clear()

    def offer(self, step: int, mrr: float, entities: np.ndarray, relations: np.ndarray) -> None:
        if not mrr > self.mrr:
            return
        self.step, self.mrr, self.entities, self.relations = step, float(mrr), entities, relations
        if self.store is not None and is_main_process():
            self.store.save(step, {"entities": entities, "relations": relations}, {"mrr": float(mrr)})


def _global(params, sharding) -> tuple[np.ndarray, np.ndarray]:
    host = to_host(params)  # gathered from every process when the mesh spans several
    return sharding.to_global(np.asarray(host["entities"])), np.asarray(host["relations"])


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
    "select_ensemble",
    "train_kge",
    "with_reciprocals",
]

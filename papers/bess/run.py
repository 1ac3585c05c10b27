"""The BESS run: train every scoring function on Nations, Kinships and UMLS with BESS on n simulated devices, rank
the test triples, ensemble the models of each graph, check BESS against the single-device computation, and measure
scaling over 1, 2, 4, 8 devices. Everything the claims, tables and figures read is in the Results it returns
(papers/bess/results.py); nothing here decides.

The paper's own experiment (WikiKG90Mv2, 91M entities, 16 IPUs) cannot run here; these small graphs exercise the
same method end to end, and `scale=full` widens the models and runs longer.

Every (graph, model) trains from `bess.seeds` seeds or more (the run's seed, seed + 1, ...), each a full replicate
of its recipe: initialisation, entity sharding, batches and, for RotatE, the margin search. Every model keeps the
parameters of its best validation MRR (evaluated every `bess.train.eval_every` steps); RotatE trains once per margin
of `bess.hyper.rotate.gammas` on each graph and seed and keeps the margin with the best validation MRR. The ensemble
is built from the first seed's models: its members and weights are chosen on the validation split, and its test
ranks are kept for the paired bootstrap against its best member (papers/bess/claims.py); beside it, ensembles of
fixed composition and equal weights (`compose`): one model of every scorer against as many seeds of one scorer, and
the diverse ensemble less each scorer in turn. RotatE on Nations trains more seeds than the rest (`bess.seeds_for`);
the ensembles take the first `bess.seeds` of every model. Each training keeps its checkpoints under
`<checkpoint dir>/<graph>/<model>/seed_<s>[/gamma_<g>]`, and a resumed run continues from them.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from functools import partial

import numpy as np

from core.config import ConfigError
from core.context import RunContext
from core.progress import progress
from papers.bess.config import Config, training_seeds
from papers.bess.results import Composition, Ensemble, Equivalence, Graph, Results, ScalingRow, SeedRun


def kge_config(c: Config, model: str, seed: int):
    """What one scorer trains with (a papers.bess.train.KGEConfig): its hyperparameters, the shared training
    settings, the mesh and the seed."""
    from papers.bess.train import KGEConfig

    return KGEConfig(model=model, **asdict(getattr(c.hyper, model)), **asdict(c.train), devices=c.devices, seed=seed)


def margins(kcfg) -> list[float]:
    """The margins a model trains with on each graph: its grid, or its one gamma."""
    return [float(g) for g in kcfg.gammas] or [float(kcfg.gamma)]


def run(cfg, ctx: RunContext) -> Results:
    from core.devices import require_devices

    c = cfg.bess
    seed = int(cfg.seed)
    needed = max([c.devices, *(c.scaling.devices if c.scaling.enabled else [])])
    require_devices(needed)  # before any JAX work: the simulated CPU devices are fixed when JAX starts

    from papers.bess.bess import BalancedSampler, shard_entities
    from papers.bess.kg import load_builtin
    from papers.bess.ranking import (
        known_answers,
        query_answers,
        random_filtered_mrr,
        random_floor,
        rank_scores,
        ranking_metrics,
    )
    from papers.bess.scaling import scaling
    from papers.bess.train import (
        candidate_scores,
        ensemble_scores,
        evaluate,
        init_tables,
        select_ensemble,
        train_kge,
        with_reciprocals,
    )

    kgs = {name: load_builtin(name) for name in c.datasets}
    for kg in kgs.values():  # before any training: every graph must shard into balanced blocks
        if c.devices > kg.num_entities:
            raise ConfigError(f"bess.devices={c.devices} exceeds {kg.name}'s {kg.num_entities} entities")
        try:
            BalancedSampler(
                with_reciprocals(kg.train, kg.num_relations),
                shard_entities(kg.num_entities, c.devices, seed),
                1,
                1,
                seed,
            )
        except ValueError as e:
            raise ConfigError(f"bess.devices={c.devices} on {kg.name}: {e}") from None
    graphs: dict[str, Graph] = {}
    runs: dict[tuple[str, str], list[SeedRun]] = {}
    ensembles: dict[str, Ensemble] = {}
    compositions: dict[str, dict[str, Composition]] = {}
    seeds = training_seeds(c, seed)  # every model's: the ensembles' members
    trainings = sum(
        len(margins(kge_config(c, m, seed))) * len(training_seeds(c, seed, g, m)) for g in kgs for m in c.models
    )
    bar = progress(total=trainings * c.train.steps, desc="BESS training", unit="step")
    for name, kg in kgs.items():
        known = known_answers(kg.all_triples())
        base = kge_config(c, "distmult", seed)
        graphs[name] = Graph(
            entities=kg.num_entities,
            relations=kg.num_relations,
            test_triples=len(kg.test),
            filtered_floor=random_filtered_mrr(*query_answers(kg.test, known), kg.num_entities),
            unfiltered_floor=random_floor(kg.num_entities),
            untrained=evaluate(kg, *init_tables(base, kg.num_entities, kg.num_relations), base, "test", known),
        )
        kept: dict[tuple[str, int], dict[str, np.ndarray]] = {}  # (model, seed) -> its valid and test scores
        for model in c.models:
            runs[(name, model)] = []
            for s in training_seeds(c, seed, name, model):
                trials, grid = {}, margins(kge_config(c, model, s))
                for gamma in grid:
                    kcfg = replace(kge_config(c, model, s), gamma=gamma, gammas=[])
                    ckpt = ctx.checkpoint_path(
                        name, model, f"seed_{s}", *([f"gamma_{gamma:g}"] if len(grid) > 1 else [])
                    )
                    trials[gamma] = (
                        kcfg,
                        *train_kge(kg, kcfg, checkpoint_dir=ckpt, resume=ctx.resume, progress_bar=bar),
                    )
                kcfg, E, R, info = max(trials.values(), key=lambda t: t[3]["best_valid_mrr"])
                scores = {split: candidate_scores(E, R, kcfg, getattr(kg, split)) for split in ("valid", "test")}
                if s in seeds:
                    kept[(model, s)] = scores
                test_ranks = rank_scores(scores["test"], kg.test, known)
                runs[(name, model)].append(
                    SeedRun(
                        seed=s,
                        gamma=float(kcfg.gamma),
                        grid={g: float(t[3]["best_valid_mrr"]) for g, t in trials.items()},
                        best_step=int(info["best_step"]),
                        best_valid_mrr=float(info["best_valid_mrr"]),
                        triples_per_second=float(info["triples_per_second"]),
                        search_seconds=float(sum(t[3]["seconds"] for t in trials.values())),  # every margin's
                        resumed_from=int(info["resumed_from"]),
                        test=ranking_metrics(test_ranks),
                        valid=ranking_metrics(rank_scores(scores["valid"], kg.valid, known)),
                        test_ranks=test_ranks,
                    )
                )
        if len(c.models) > 1:  # the ensemble's candidates: every model's first seed
            firsts = {m: kept[(m, seeds[0])] for m in c.models}
            weights = select_ensemble({m: sc["valid"] for m, sc in firsts.items()}, kg.valid, known)
            test = ensemble_scores([firsts[m]["test"] for m in weights], list(weights.values()))
            ranks = rank_scores(test, kg.test, known)
            ensembles[name] = Ensemble(
                weights={m: int(k) for m, k in weights.items()}, test=ranking_metrics(ranks), test_ranks=ranks
            )
            compositions[name] = compose(kg, known, kept, list(c.models), seeds)
    bar.close()

    equivalence = check_equivalence(kgs[c.datasets[0]], c, seed)
    rows = []
    if c.scaling.enabled:
        sbar = progress(total=len(c.scaling.devices), desc="BESS scaling", unit="mesh")
        rows = scaling(
            tuple(c.scaling.devices),
            num_entities=c.scaling.entities,
            dim=c.scaling.dim,
            steps=c.scaling.steps,
            seed=seed,
            progress_bar=sbar,
        )
        sbar.close()
    return Results(graphs, runs, ensembles, equivalence, [ScalingRow(**r) for r in rows], compositions)


def compose(kg, known, kept: dict, models: list[str], seeds: list[int]) -> dict[str, Composition]:
    """Ensembles of fixed composition on one graph, each of equal weights (papers.bess.train.ensemble_scores) and
    ranked on the validation and test splits: the comparisons by composition of the authors' technical report (P3
    Figure 3). `diverse`: one model of every scorer, the first seed's; `one:<model>`: as many models of one scorer,
    its first seeds (where it has that many); `without:<model>`: the diverse ensemble less one scorer (three or more
    scorers). `kept`: (model, seed) -> {"valid", "test"} candidate scores."""
    from papers.bess.ranking import rank_scores, ranking_metrics
    from papers.bess.train import ensemble_scores

    size = len(models)
    plans = {"diverse": [(m, seeds[0]) for m in models]}
    if size <= len(seeds):
        plans |= {f"one:{m}": [(m, s) for s in seeds[:size]] for m in models}
    if size >= 3:
        plans |= {f"without:{m}": [(o, seeds[0]) for o in models if o != m] for m in models}
    out = {}
    for key, members in plans.items():
        ranks = {
            split: rank_scores(ensemble_scores([kept[k][split] for k in members]), getattr(kg, split), known)
            for split in ("valid", "test")
        }
        out[key] = Composition(
            members=[f"{m}/seed_{s}" for m, s in members],
            valid_mrr=float(ranking_metrics(ranks["valid"])["mrr"]),
            test=ranking_metrics(ranks["test"]),
            test_ranks=ranks["test"],
        )
    return out


def check_equivalence(kg, c: Config, seed: int) -> dict[str, Equivalence]:
    """For one balanced batch of `kg`, BESS on c.devices devices against the single-device reference, per
    scoring function: the largest relative error of the loss, the scores and both gradients."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from core.devices import to_host
    from papers.bess.bess import AXIS, BalancedSampler, bess_loss_fn, reference_loss, shard_entities
    from papers.bess.losses import Loss
    from papers.bess.train import init_tables, make_mesh, with_reciprocals

    mesh = make_mesh(c.devices)
    sharding = shard_entities(kg.num_entities, c.devices, seed)
    triples = with_reciprocals(kg.train, kg.num_relations)
    batch = BalancedSampler(triples, sharding, c.train.batch // c.devices**2, c.train.negatives, seed).sample(0)
    out = {}
    for model in c.models:
        kcfg = replace(kge_config(c, model, seed), gamma=margins(kge_config(c, model, seed))[0])
        loss = Loss(kcfg.loss, kcfg.adversarial, kcfg.margin, kg.num_entities)
        E, R = init_tables(kcfg, kg.num_entities, kg.num_relations)
        bess = bess_loss_fn(mesh, model, kcfg.gamma, loss)
        grad = jax.jit(jax.value_and_grad(bess, argnums=(0, 1), has_aux=True))
        shards, rel, placed = jnp.asarray(sharding.to_shards(E)), jnp.asarray(R), batch
        if jax.process_count() > 1:  # a mesh over several processes takes global arrays
            shards = jax.device_put(sharding.to_shards(E), NamedSharding(mesh, P(AXIS)))
            rel, placed = jax.device_put((R, batch), NamedSharding(mesh, P()))
        (value, (pos, neg)), (dE, dR) = to_host(grad(shards, rel, placed))
        ref = jax.jit(
            jax.value_and_grad(
                partial(reference_loss, batch=batch, model=model, gamma=kcfg.gamma, loss=loss),
                argnums=(0, 1),
                has_aux=True,
            )
        )
        (rvalue, (rpos, rneg)), (rdE, rdR) = ref(jnp.asarray(E), jnp.asarray(R))

        def err(a, b):
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
            return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))

        out[model] = Equivalence(
            loss=err(value, rvalue),
            scores=max(err(pos, rpos), err(neg, rneg)),
            d_entities=err(sharding.to_global(np.asarray(dE)), rdE),
            d_relations=err(dR, rdR),
        )
    return out


__all__ = ["check_equivalence", "compose", "kge_config", "margins", "run"]


def _int32(dtype):
    return np.dtype(np.int32) if dtype == np.int64 else dtype


def ipu_steps(cfg) -> list:
    """The BESS training step of each scorer (`train.compiled_step`: shard_map over the mesh, the balanced batch's
    all-to-all of embeddings) on the first dataset at the run's hyperparameters, for the simulated IPU
    (ipu_model.steps): one IPU's program, a mesh of one device with the run's per-device batch (each IPU of the
    paper's Pod16 runs this program on its share)."""
    import jax

    from core.train import init_state
    from ipu_model.steps import Step
    from papers.bess.bess import BalancedSampler, shard_entities
    from papers.bess.kg import load_builtin
    from papers.bess.losses import Loss
    from papers.bess.train import compiled_step, init_tables, make_mesh, place_tables, with_reciprocals

    c = cfg.bess
    kg = load_builtin(c.datasets[0])
    mesh, sharding = make_mesh(1), shard_entities(kg.num_entities, 1, 0)
    steps = []
    for model in c.models:
        k = replace(kge_config(c, model, 0), devices=1)
        per_device = k.batch // c.devices**2
        sampler = BalancedSampler(with_reciprocals(kg.train, kg.num_relations), sharding, per_device, k.negatives, 0)
        loss = Loss(k.loss, k.adversarial, k.margin, kg.num_entities)
        optimiser, step = compiled_step(mesh, model, float(k.gamma), loss, (k.lr, k.weight_decay))
        state = init_state(place_tables(mesh, sharding, *init_tables(k, kg.num_entities, kg.num_relations)), optimiser)
        shapes = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(np.shape(x), _int32(np.asarray(x).dtype)), sampler.sample(0)
        )
        steps.append(
            Step(
                f"{model} training step",
                step,
                (jax.eval_shape(lambda s=state: s), shapes),
                f"{c.datasets[0]}: {kg.num_entities} entities, dim {k.dim}; {per_device} triples x {k.negatives} "
                f"negatives, one device of {c.devices}",
            )
        )
    return steps

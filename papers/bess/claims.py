"""The BESS claims, declared from the config alone before any run, and their decision: a pure function of the
stored Results (`decide`), with the functions that measure each claim from them (numpy and scipy only).

Literature values are entries of papers/bess/REFERENCES.md (L1-L8, F1, P1, P2), held in papers/bess/literature.py.
The report module (papers/bess/report.py) builds the tables and figures from the Results and this decision; the
history of these claims is papers/bess/ledger.py, their fingerprints papers/bess/claims.lock.json.

The MRR claims are decided on the t interval over training seeds (`bess.seeds`, each a full replicate of the model's
recipe). The test split is fixed and is the one the literature's figures were measured on, so its sampling error
is common to both sides and is not in the interval; the report gives it beside (`split_se`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from core.claims import Claim, Decided, Fact, Interval, at_least, at_most, interval_above, is_true, printed
from core.stats import paired_bootstrap, seed_mean, seeds_for_half_width, t_half_width
from papers.bess.literature import LITERATURE_LABEL, LITERATURE_MRR, LITERATURE_PRINTED, NAMES, TEST_TRIPLES, UNVERIFIED
from papers.bess.results import Ensemble, Equivalence, Graph, Results, ScalingRow, SeedRun

LITERATURE_SLACK = 0.05  # issue 12: within 0.05 of the literature MRR, or better
# The power computation's a-priori seed-to-seed sd of a model's test MRR: Nations' test-split standard error
# (per-triple reciprocal rank sd ~0.35 / sqrt(201) = 0.025), rounded down; the report gives the measured sd
SEED_SD_ASSUMED = 0.02
CONFIDENCE = 0.95
EQUIVALENCE_TOL = 1e-5  # float32
BOOTSTRAP = {"n_resamples": 2000, "confidence": 0.95}
# The ensembles' 95% paired-bootstrap half-widths in the README's recorded default run (2026-11-24): Nations
# +0.033 [0.017, 0.049], Kinships +0.011 [0.004, 0.017], UMLS +0.008 [0.002, 0.014]
ENSEMBLE_HALF_WIDTH = {"nations": 0.016, "kinships": 0.0065, "umls": 0.006}


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


# ---------------------------------------------------------------------------------------------- measuring


def seed_interval(runs: list[SeedRun]) -> Interval:
    """The mean over seeds of the test MRR with its t interval (core.stats.seed_mean)."""
    return seed_mean([r.test["mrr"] for r in runs], confidence=CONFIDENCE)


def split_ses(runs: list[SeedRun]) -> list[float]:
    """Each seed's test-split standard error of the MRR: sd of the per-triple reciprocal rank / sqrt(triples)."""
    rr = [per_triple_rr(r.test_ranks) for r in runs]
    return [float(np.std(x, ddof=1) / np.sqrt(len(x))) for x in rr]


def split_se(runs: list[SeedRun]) -> float:
    """The test split's standard error of the MRR, averaged over seeds: what resampling the test triples would add,
    shown beside the seed interval."""
    return float(np.mean(split_ses(runs)))


def measure_floor(runs: dict[tuple[str, str], list[SeedRun]], graphs: dict[str, Graph]) -> tuple[Interval, str]:
    """`beats-random-floor-as-literature`: the smallest ratio over every trained (graph, model) of the test MRR to
    the filtered random floor, as an interval: each pair's t interval over seeds divided by its graph's floor, and
    the smallest estimate, smallest low and smallest high over the pairs (the whole interval clears the bound only
    where every pair's does; it falls short only where some pair's whole interval does)."""
    floors = {name: g.filtered_floor for name, g in graphs.items()}
    ratios = {}
    for (name, model), seeds in runs.items():
        mrr = seed_interval(seeds)
        ratios[(name, model)] = (mrr, Interval(*(v / floors[name] for v in (mrr.estimate, mrr.low, mrr.high))))
    (wname, wmodel), (wmrr, wratio) = min(ratios.items(), key=lambda kv: kv[1][1].estimate)
    lowest = min(ratios, key=lambda k: ratios[k][1].low)
    value = Interval(
        min(r.estimate for _, r in ratios.values()),
        min(r.low for _, r in ratios.values()),
        min(r.high for _, r in ratios.values()),
        CONFIDENCE,
        f"smallest over {len(ratios)} (graph, model) pairs of each pair's t interval over seeds / floor",
    )
    unfiltered = graphs[wname].unfiltered_floor
    return value, (
        f"weakest: {NAMES[wmodel]} on {wname}, {wmrr.estimate:.3f} vs filtered floor {floors[wname]:.3f} "
        f"({wratio.estimate:.2f}x; against the unfiltered H_N/N = {unfiltered:.3f}: {wmrr.estimate / unfiltered:.2f}x)"
        f"; lowest interval: {NAMES[lowest[1]]} on {lowest[0]}"
    )


def measure_mrr(runs: list[SeedRun], bound: float) -> tuple[Interval, str]:
    """`mrr-<graph>-<model>`: the mean over seeds of the filtered test MRR of each seed's best-validation checkpoint,
    with its t interval; the detail gives each seed, the spread, the seeds that would resolve the distance from the
    bound at the measured spread, and the test split's standard error."""
    mrr = seed_interval(runs)
    values = [r.test["mrr"] for r in runs]
    sd = float(np.std(values, ddof=1))
    distance = abs(mrr.estimate - bound)
    needed = seeds_for_half_width(sd, distance, confidence=CONFIDENCE)
    return mrr, (
        f"{len(values)} seeds: {', '.join(f'{v:.3f}' for v in values)}; sd {sd:.3f}, half-width "
        f"{(mrr.high - mrr.low) / 2:.3f}, mean {mrr.estimate - bound:+.3f} from the bound; "
        f"{needed if needed is not None else 'no feasible number of'} seeds for a half-width below that at this sd; "
        f"test-split SE {split_se(runs):.3f} (not in the interval); "
        f"hits@10 {np.mean([r.test['hits@10'] for r in runs]):.3f}"
    )


def per_triple_rr(ranks: np.ndarray) -> np.ndarray:
    """Reciprocal rank of each test triple: the mean of its tail query's and its head query's (ranks [2B]: tails
    first), so that the mean over triples is the MRR and a bootstrap resamples triples, not correlated queries."""
    ranks = np.asarray(ranks, np.float64)
    half = len(ranks) // 2
    return (1.0 / ranks[:half] + 1.0 / ranks[half:]) / 2


def ensemble_gain(ens: Ensemble, first: dict[tuple[str, str], SeedRun], name: str, seed: int = 0) -> tuple[Any, str]:
    """Our figure for `ensemble-<name>`: the paired-bootstrap interval of the test MRR gain over the best single
    member (the best by test MRR, the strongest comparison) among the first seed's models (`first`), or a sentence
    when selection kept one model only."""
    members = {m: first[(g, m)] for (g, m) in first if g == name}
    best = max(members, key=lambda m: members[m].test["mrr"])
    chosen = ", ".join(f"{NAMES[m]} x{k}" for m, k in ens.weights.items())
    detail = f"{ens.test['mrr']:.3f} vs {NAMES[best]} {members[best].test['mrr']:.3f}; chose {chosen}"
    if len(ens.weights) < 2:
        return f"one member ({chosen}): not an ensemble", detail
    gain = paired_bootstrap(
        per_triple_rr(ens.test_ranks), per_triple_rr(members[best].test_ranks), seed=seed, **BOOTSTRAP
    )
    return gain, detail


def measure_equivalence(equivalence: dict[str, Equivalence]) -> tuple[float, str]:
    """`bess-equals-single-device`: the largest relative error over the scoring functions."""
    worst = {m: max(e.loss, e.scores, e.d_entities, e.d_relations) for m, e in equivalence.items()}
    return max(worst.values()), ", ".join(f"{NAMES[m]} {v:.1e}" for m, v in worst.items())


def measure_memory(scaling_rows: list[ScalingRow]) -> tuple[float, str]:
    """The fact `table-memory-1-over-n`: the largest relative deviation of n x (per-device entity-table bytes) from
    one device's."""
    first = scaling_rows[0]
    whole = first.entity_bytes_per_device * first.devices
    return (
        max(abs(r.entity_bytes_per_device * r.devices / whole - 1) for r in scaling_rows),
        f"{first.entities_measured:,} more entities cost per device: "
        + " / ".join(f"n={r.devices} {format_bytes(r.entity_bytes_per_device)}" for r in scaling_rows),
    )


def measure_moves(multi: list[ScalingRow]) -> tuple[bool, str]:
    """`bess-moves-less`: whether the compiled BESS step moves fewer bytes than the all-gather step at every n >= 2."""
    return (
        all(r.bess_bytes_per_step < r.all_gather_bytes_per_step for r in multi),
        ", ".join(
            f"n={r.devices}: {format_bytes(r.bess_bytes_per_step)} vs {format_bytes(r.all_gather_bytes_per_step)}"
            for r in multi
        ),
    )


# ---------------------------------------------------------------------------------------------- claims

CLAIMS = {
    "bess-moves-less": Claim(
        "bess-moves-less",
        "BESS moves fewer bytes per step than all-gathering the entity table, for every n >= 2: the bytes the "
        "collectives of the compiled BESS step deliver, against those of the compiled all-gather step",
        "yes",
        is_true("BESS bytes < all-gather bytes at every n >= 2"),
        measure=measure_moves,
        source="P2 (REFERENCES.md)",
        statistic="bytes the collectives of the compiled BESS and all-gather steps deliver per step, every n >= 2",
        unit="deterministic (compiled programs)",
        resolution="exact",
    ),
}


def literature_bound(name: str, model: str) -> float:
    """The least MRR that is within LITERATURE_SLACK of the literature value as printed (its lowest reading)."""
    return round(printed(LITERATURE_PRINTED[(name, model)]).low - LITERATURE_SLACK, 6)


def half_width(seeds: int) -> float:
    """The design's t interval half-width over `seeds` seeds at the assumed seed sd (SEED_SD_ASSUMED)."""
    return t_half_width(SEED_SD_ASSUMED, seeds, confidence=CONFIDENCE)


def _literature_claim(name: str, model: str, seeds: int) -> Claim:
    return Claim(
        f"mrr-{name}-{model}",
        f"{NAMES[model]} on {name}: filtered test MRR within {LITERATURE_SLACK} of the literature, or better (the "
        f"{CONFIDENCE:.0%} t interval over training seeds)",
        printed(LITERATURE_PRINTED[(name, model)]),
        at_least(literature_bound(name, model), kind="non-inferiority"),
        measure=measure_mrr,
        source=f"{LITERATURE_LABEL[(name, model)]} (REFERENCES.md)",
        statistic="mean over training seeds of the filtered test MRR (tail and head queries, ties averaged) of each "
        "seed's best-validation checkpoint; t interval over seeds (the test split, the literature's own, is fixed)",
        confidence=CONFIDENCE,
        unit=f"{seeds} training seeds (full replicates: initialisation, sharding, batches, margin search); "
        f"{TEST_TRIPLES[name]} test triples",
        resolution=f"t half-width {half_width(seeds):.3f} MRR at {seeds} seeds for an assumed seed sd of "
        f"{SEED_SD_ASSUMED} (power computation: a mean closer than that to the bound is expected undecided; the "
        "report gives the measured sd and the seeds it would take)",
        unverified=UNVERIFIED.get((name, model), ""),
    )


@cache
def filtered_floor(name: str) -> float:
    """The exact expected filtered MRR of a uniformly random ranker on a built-in graph's test split (arithmetic on
    the split: papers.bess.ranking.random_filtered_mrr)."""
    from papers.bess.kg import load_builtin
    from papers.bess.ranking import known_answers, query_answers, random_filtered_mrr

    kg = load_builtin(name)
    return random_filtered_mrr(*query_answers(kg.test, known_answers(kg.all_triples())), kg.num_entities)


def floor_target(datasets: list[str], models: list[str]) -> tuple[tuple[str, str], float, float] | None:
    """The literature's weakest margin over the random floor among the verified figures the config trains: the pair,
    its ratio (the printed value / floor) and the bound (the printed value's lowest reading less LITERATURE_SLACK,
    / floor); None when the config trains no (graph, model) with a verified literature figure."""
    pairs = [k for k in LITERATURE_PRINTED if k[0] in datasets and k[1] in models and k not in UNVERIFIED]
    if not pairs:
        return None
    ratio = {k: LITERATURE_MRR[k] / filtered_floor(k[0]) for k in pairs}
    weakest = min(ratio, key=ratio.get)
    return weakest, ratio[weakest], round(literature_bound(*weakest) / filtered_floor(weakest[0]), 6)


def _floor_claim(weakest: tuple[str, str], ratio: float, bound: float, seeds: int) -> Claim:
    name, model = weakest
    return Claim(
        "beats-random-floor-as-literature",
        "Every model beats a uniformly random ranker by at least the margin the literature's models do: the smallest "
        "ratio over every trained (graph, model) of our test MRR to the exact expected filtered MRR of a random "
        f"ranking, at least the literature's smallest such ratio ({NAMES[model]} on {name}, "
        f"{LITERATURE_PRINTED[weakest]} / {filtered_floor(name):.4f} = {ratio:.3f}) with its MRR less the "
        f"{LITERATURE_SLACK} slack of the MRR claims",
        round(ratio, 4),
        at_least(bound, kind="non-inferiority"),
        measure=measure_floor,
        source=f"{LITERATURE_LABEL[weakest]} and F1 (REFERENCES.md)",
        statistic="min over (graph, model) of (mean over seeds of the filtered test MRR) / exact expected filtered "
        f"MRR of a random ranking; its interval: the smallest low and high of the pairs' {CONFIDENCE:.0%} t "
        "intervals over seeds",
        confidence=CONFIDENCE,
        unit=f"{seeds} training seeds per (graph, model); every test query",
        resolution=f"on Nations (floor {filtered_floor('nations'):.3f}) a t half-width of {half_width(seeds):.3f} "
        f"MRR (assumed seed sd {SEED_SD_ASSUMED}, {seeds} seeds) is "
        f"{half_width(seeds) / filtered_floor('nations'):.3f} in the ratio",
    )


def _ensemble_claim(name: str, members: int) -> Claim:
    return Claim(
        f"ensemble-{name}",
        f"On {name}, an ensemble of at least two distinct models out of {members} (members and weights chosen on "
        "the validation split, log-probabilities averaged) beats its best member on the test split: test MRR gain "
        f"over the best single model, {BOOTSTRAP['confidence']:.0%} paired-bootstrap interval over test triples",
        None,
        interval_above(0.0),
        measure=ensemble_gain,
        source="P1 (REFERENCES.md: the paper's submission is an ensemble of 85 models)",
        statistic="test MRR of the ensemble - test MRR of its best member, paired bootstrap over per-triple RR "
        f"({BOOTSTRAP['n_resamples']} resamples)",
        confidence=BOOTSTRAP["confidence"],
        unit=f"{TEST_TRIPLES.get(name, 'the')} test triples (paired bootstrap), 1 training seed",
        resolution=(
            f"bootstrap half-width ~{ENSEMBLE_HALF_WIDTH[name]:g} MRR (README run of 2026-11-24)"
            if name in ENSEMBLE_HALF_WIDTH
            else "not recorded for this graph"
        ),
    )


def _equivalence_claim(devices: int) -> Claim:
    return Claim(
        "bess-equals-single-device",
        f"BESS on {devices} devices equals the single-device computation for the same batch: largest relative "
        "error of loss, scores and gradients over the scoring functions",
        None,
        at_most(EQUIVALENCE_TOL, kind="equivalence"),
        measure=measure_equivalence,
        source="P2 (REFERENCES.md)",
        statistic="largest relative error of loss, scores and gradients, BESS against one device, over the scorers",
        unit="deterministic (one batch per scoring function, float32)",
        resolution="float32 rounding (~1e-7)",
    )


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run: the literature MRR of every (graph, model) the config trains that the
    literature reports, the margin over the random floor against the literature's where the config trains a
    verified literature figure, an ensemble per graph when it trains several models, the scaling claims when it
    measures scaling (moving fewer bytes needs a mesh of two or more). The entity table's 1/n memory per device is a
    fact (`facts`): arithmetic on shapes, not a claim."""
    c = cfg.bess
    datasets, models = list(dict.fromkeys(c.datasets)), list(dict.fromkeys(c.models))
    target = floor_target(datasets, models)
    out = [_floor_claim(*target, c.seeds)] if target else []
    out += [_literature_claim(g, m, c.seeds) for g, m in LITERATURE_MRR if g in datasets and m in models]
    if len(models) > 1:
        out += [_ensemble_claim(name, len(models)) for name in datasets]
    out.append(_equivalence_claim(c.devices))
    if c.scaling.enabled:
        if any(n >= 2 for n in c.scaling.devices):
            out.append(CLAIMS["bess-moves-less"])
    return out


def facts(scaling_rows: list[ScalingRow]) -> list[Fact]:
    """Rows that are not claims: the entity table's memory per device against 1/n, arithmetic on shapes (each
    device holds N/n rows of the table and its optimiser state: the compiled step's argument and output bytes are
    the table's shape / n), shown when the run compiled two or more meshes."""
    if len(scaling_rows) < 2:
        return []
    value, detail = measure_memory(scaling_rows)
    return [
        Fact(
            "table-memory-1-over-n",
            "Entity-table memory per device falls as 1/n (XLA's memory analysis of the compiled step: n x the "
            "per-device bytes that more entities add, against one device's; largest relative deviation)",
            value,
            "analytic",
            detail,
        )
    ]


# ---------------------------------------------------------------------------------------------- the decision


def estimates(results: Results) -> dict[str, Any]:
    """The figures the report's tables and figures show beside the claims, by name: each (graph, model)'s test MRR
    and test-split standard error with their t intervals over seeds, the random floors (exact arithmetic on the
    splits) and the bytes and memory read from the compiled scaling programs (deterministic)."""
    out: dict[str, Any] = {}
    for (name, model), runs in results.runs.items():
        out[f"mrr/{name}/{model}"] = seed_interval(runs)
        out[f"split_se/{name}/{model}"] = seed_mean(split_ses(runs), confidence=CONFIDENCE)
    for name, graph in results.graphs.items():
        out[f"floor/{name}/filtered"] = graph.filtered_floor
        out[f"floor/{name}/unfiltered"] = graph.unfiltered_floor
    for r in results.scaling:
        out[f"scaling/{r.devices}/bess_bytes_per_step"] = r.bess_bytes_per_step
        out[f"scaling/{r.devices}/all_gather_bytes_per_step"] = r.all_gather_bytes_per_step
        out[f"scaling/{r.devices}/entity_bytes_per_device"] = r.entity_bytes_per_device
    return out


def decide(cfg, results: Results) -> Decided:
    """Every declared claim decided from the stored Results (one the run did not measure stays unmeasured), the
    facts and the estimates. Each (graph, model) holds its runs, one per training seed, the run's seed first; the
    ensembles are built from the first seed's models."""
    ours: dict[str, tuple[Any, str]] = {"beats-random-floor-as-literature": measure_floor(results.runs, results.graphs)}
    for key, runs in results.runs.items():
        if key in LITERATURE_PRINTED:
            ours[f"mrr-{key[0]}-{key[1]}"] = measure_mrr(runs, literature_bound(*key))
    first = {key: runs[0] for key, runs in results.runs.items()}
    for name, ens in results.ensembles.items():
        ours[f"ensemble-{name}"] = ensemble_gain(ens, first, name, int(cfg.seed))
    ours["bess-equals-single-device"] = measure_equivalence(results.equivalence)
    multi = [r for r in results.scaling if r.devices >= 2]
    if multi:
        ours["bess-moves-less"] = measure_moves(multi)
    decided = [claim.measured(*ours[claim.id]) if claim.id in ours else claim for claim in claims(cfg)]
    return Decided(decided, facts(results.scaling), estimates(results))


__all__ = [
    "claims",
    "decide",
    "ensemble_gain",
    "estimates",
    "facts",
    "filtered_floor",
    "floor_target",
    "literature_bound",
    "per_triple_rr",
    "seed_interval",
    "split_se",
]

"""The BESS claims' declarations and their decision from hand-made Results: literature MRRs compared as printed on t
intervals over seeds, unverified figures given their own verdict, every figure and margin labelled by its source,
the seeds a distance needs, the ensemble's paired bootstrap, what BESS computes (1/n memory, bytes moved, equality
with one device) facts and never claims, the ledger's old rules shown beside the new verdicts, and the report made
from a decision (intervals from scipy, written here). Nothing here trains or loads JAX."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from core.claims import Decided, Interval, Verdict
from core.report import Report
from core.stats import seeds_for_half_width
from papers.bess import PAPER
from papers.bess.claims import (
    _ensemble_claim,
    claims,
    decide,
    diversity_gain,
    ensemble_gain,
    facts,
    literature_bound,
    measure_mrr,
    per_triple_rr,
)
from papers.bess.config import Config, ScalingConfig
from papers.bess.kg import load_builtin
from papers.bess.ledger import LEDGER
from papers.bess.ranking import known_answers, query_answers, random_filtered_mrr, ranking_metrics
from papers.bess.report import render
from papers.bess.results import Composition, Ensemble, Equivalence, Graph, Results, ScalingRow, SeedRun

DECLARED = {c.id: c for c in claims(SimpleNamespace(bess=Config()))}
UNVERIFIED = ("mrr-kinships-distmult", "mrr-kinships-complex", "mrr-umls-distmult", "mrr-umls-complex")


def filtered_floor(name: str) -> float:
    """The exact expected filtered MRR of a uniformly random ranker on a built-in graph's test split."""
    kg = load_builtin(name)
    return random_filtered_mrr(*query_answers(kg.test, known_answers(kg.all_triples())), kg.num_entities)


def t_interval(values) -> tuple[float, float, float]:
    """(low, mean, high) of the 95% t interval, written out: mean -+ t_{0.975, n-1} sd / sqrt(n)."""
    v = np.asarray(values, np.float64)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return v.mean() - half, v.mean(), v.mean() + half


def seed_run(mrr: float, ranks: np.ndarray, seed: int = 0) -> SeedRun:
    """A hand-made seed: its test MRR as given (the claims read it), its test ranks as given (the test-split SE and
    the bootstrap read them)."""
    return SeedRun(
        seed=seed,
        gamma=12.0,
        grid={12.0: mrr},
        best_step=10,
        best_valid_mrr=mrr,
        triples_per_second=1000.0,
        search_seconds=1.0,
        resumed_from=0,
        test={"mrr": mrr, "hits@1": mrr / 2, "hits@3": mrr, "hits@10": 0.9},
        valid={"mrr": mrr, "hits@1": mrr / 2, "hits@3": mrr, "hits@10": 0.9},
        test_ranks=np.asarray(ranks, np.float64),
    )


def seed_runs(mrrs, triples: int = 40, seed: int = 0) -> list[SeedRun]:
    """Hand-made runs with the given test MRRs; their test ranks (tail queries, then head queries) only feed the
    test-split SE, so they are drawn at random."""
    rng = np.random.default_rng(seed)
    return [seed_run(m, rng.integers(1, 10, 2 * triples).astype(float), i) for i, m in enumerate(mrrs)]


def graph(floor: float, entities: int = 14) -> Graph:
    untrained = {"mrr": floor, "hits@1": 0.1, "hits@3": 0.3, "hits@10": 0.9}
    return Graph(entities, 55, 201, floor, 0.2322, untrained)


def row(devices: int, entity_bytes: int, bess: int = 10, gather: int = 100) -> ScalingRow:
    return ScalingRow(
        devices=devices,
        steps_per_second=100.0 / devices,
        triples_per_second=1e5 / devices,
        entity_table_bytes_per_device=entity_bytes,
        state_bytes_per_device=3 * entity_bytes,
        step_bytes_per_device=4 * entity_bytes,
        temp_bytes_per_device=entity_bytes,
        entity_bytes_per_device=entity_bytes,
        entity_temp_bytes_per_device=0,
        entities_measured=100_000,
        bess_bytes_per_step=bess,
        bess_all_to_all_bytes_per_step=bess,
        all_gather_bytes_per_step=gather,
        analytic_all_to_all_bytes_per_step=bess,
        all_gather_temp_bytes_per_device=entity_bytes,
        loss=1.0,
    )


@pytest.mark.parametrize(
    ("claim", "text", "bound"),
    [  # REFERENCES.md L1-L8 as printed; the bound is the lowest value that rounds to it, less 0.05
        ("mrr-nations-transe", "0.4813", 0.43125),
        ("mrr-nations-rotate", "0.7155", 0.66545),
        ("mrr-kinships-distmult", "0.640", 0.5895),
        ("mrr-kinships-complex", "0.823", 0.7725),
        ("mrr-umls-distmult", "0.878", 0.8275),
        ("mrr-umls-complex", "0.838", 0.7875),
    ],
)
def test_literature_targets_are_compared_as_printed_on_the_seed_interval(claim, text, bound):
    c = DECLARED[claim]
    assert c.paper.estimate == float(text) and c.paper.method == f"printed as {text}"
    above = c.measured(Interval(bound + 0.01, bound + 1e-9, bound + 0.02))
    below = c.measured(Interval(bound - 0.01, bound - 0.02, bound - 1e-6))
    straddling = c.measured(Interval(bound, bound - 0.01, bound + 0.01))
    assert [x.rule_verdict for x in (above, below, straddling)] == [Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED]
    # a figure with no primary table never counts as holding or failing, whatever its rule says
    want = Verdict.UNVERIFIED if claim in UNVERIFIED else None
    assert {x.verdict for x in (above, below, straddling)} == (
        {want} if want else {Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED}
    )
    assert bool(c.unverified) == (claim in UNVERIFIED)


def test_only_the_four_compiled_figures_are_unverified():
    assert sorted(k for k, c in DECLARED.items() if c.unverified) == sorted(UNVERIFIED)
    # the figure-source labels say the same (issue 62): a compilation's row (secondary) or no source (none)
    assert sorted(k for k, c in DECLARED.items() if c.figure_source.split(":")[0] in ("secondary", "none")) == sorted(
        UNVERIFIED
    )


def test_every_claim_says_where_its_figure_and_margin_come_from_and_its_sample():
    kinds = {k: c.figure_source.split(":")[0] for k, c in DECLARED.items()}
    assert kinds == {
        **{f"mrr-nations-{m}": "paper" for m in ("transe", "distmult", "complex", "rotate")},  # L1-L4, Pu et al.
        "mrr-kinships-distmult": "none",  # L5: no source located
        "mrr-kinships-complex": "secondary",  # L6-L8: a compilation's rows
        "mrr-umls-distmult": "secondary",
        "mrr-umls-complex": "secondary",
        **{f"ensemble-{g}": "authors" for g in ("nations", "kinships", "umls")},  # the technical report (P3, A1)
        **{f"ensemble-diverse-{g}": "authors" for g in ("nations", "kinships", "umls")},  # P3 section 7, Figure 3
    }
    assert all(c.margin_source.startswith("ours:") for c in DECLARED.values())  # the 0.05 slack, zero gain
    for k, c in DECLARED.items():
        triples = {"nations": 201, "kinships": 1074, "umls": 661}[k.split("-")[1 if k.startswith("mrr-") else -1]]
        want = (
            (8 if k == "mrr-nations-rotate" else 5, "training seeds")  # the power computation's 8 (bess.seeds_for)
            if k.startswith("mrr-")
            else (triples, "test triples (paired bootstrap; the first seeds' models)")
            if k.startswith("ensemble-diverse-")
            else (triples, "test triples (paired bootstrap; one training seed's models)")
        )
        assert (c.n, c.n_of) == want, k


def test_what_bess_computes_is_never_a_claim():
    # issue 62: its equality with one device is an implementation check (test_bess.py), the bytes it moves and the
    # table's memory are arithmetic on shapes; the floor ratio was mrr-nations-transe over a constant
    gone = ("bess-equals-single-device", "bess-moves-less", "beats-random-floor-as-literature", "table-memory-1-over-n")
    assert not set(gone) & set(DECLARED)
    floor = filtered_floor("nations")  # 7x Kinships' and UMLS's: the smallest ratio was always a Nations model's
    assert floor > 6 * max(filtered_floor("kinships"), filtered_floor("umls"))
    assert round((0.48125 - 0.05) / floor, 3) == 1.122  # its bound, x the floor: mrr-nations-transe's
    assert literature_bound("nations", "transe") == pytest.approx(1.122 * floor, abs=1e-4)


def test_an_mrr_claim_is_decided_on_the_t_interval_over_seeds():
    runs = seed_runs([0.668, 0.655, 0.671, 0.662, 0.676])
    value, detail = measure_mrr(runs, 0.66545)
    low, mean, high = t_interval([0.668, 0.655, 0.671, 0.662, 0.676])
    assert (value.low, value.estimate, value.high) == pytest.approx((low, mean, high), rel=1e-12)
    assert DECLARED["mrr-nations-rotate"].measured(value, detail).verdict is Verdict.UNDECIDED  # straddles 0.66545
    sd = np.std([0.668, 0.655, 0.671, 0.662, 0.676], ddof=1)
    assert f"sd {sd:.3f}" in detail and f"{seeds_for_half_width(sd, abs(mean - 0.66545))} seeds" in detail
    rr = [(1 / r[:40] + 1 / r[40:]) / 2 for r in (run.test_ranks for run in runs)]  # tails first, then heads
    assert f"test-split SE {np.mean([x.std(ddof=1) / np.sqrt(40) for x in rr]):.3f}" in detail


def test_the_filtered_floor_is_the_expected_reciprocal_rank_of_a_random_ranking():
    kg = load_builtin("nations")
    # the expected filtered reciprocal rank written out: H_C / C over each test query's C candidates left
    tails, heads = {}, {}
    for h, r, t in kg.all_triples().tolist():
        tails.setdefault((h, r), set()).add(t)
        heads.setdefault((r, t), set()).add(h)
    counts = [kg.num_entities - len(tails[(h, r)]) + 1 for h, r, _ in kg.test.tolist()]
    counts += [kg.num_entities - len(heads[(r, t)]) + 1 for _, r, t in kg.test.tolist()]
    floor = np.mean([sum(1 / k for k in range(1, c + 1)) / c for c in counts])
    assert filtered_floor("nations") == pytest.approx(floor, rel=1e-12)
    assert 0.4813 / floor == pytest.approx(1.252, abs=1e-3)  # the literature's TransE (L1): 1.25x, not 2x


def test_ensemble_claim_needs_two_members_and_a_gain_above_its_bootstrap_interval():
    rng = np.random.default_rng(0)
    B = 300
    a = rng.integers(1, 10, 2 * B).astype(float)  # ranks of the tail queries, then of the head queries
    better = np.maximum(1.0, a - rng.integers(0, 3, 2 * B))
    np.testing.assert_allclose(per_triple_rr(a).mean(), ranking_metrics(a)["mrr"])
    first = {("g", "distmult"): seed_run(ranking_metrics(a)["mrr"], a)}
    first[("g", "complex")] = seed_run(ranking_metrics(a + 1)["mrr"], a + 1)
    claim = _ensemble_claim("g", 2)
    ens = Ensemble({"distmult": 1, "complex": 2}, ranking_metrics(better), better)
    gain, _ = ensemble_gain(ens, first, "g")
    assert isinstance(gain, Interval) and gain.low > 0 and claim.measured(gain).verdict is Verdict.HOLDS
    same = Ensemble({"distmult": 1, "complex": 1}, ranking_metrics(a), a)
    gain, _ = ensemble_gain(same, first, "g")
    assert gain.estimate == gain.low == gain.high == 0  # identical ranks: no gain, the interval is [0, 0]
    assert claim.measured(gain).verdict is Verdict.FAILS  # none of it lies above 0
    alone = Ensemble({"distmult": 3}, ranking_metrics(a), a)
    gain, _ = ensemble_gain(alone, first, "g")
    assert gain == "one member (DistMult x3): not an ensemble" and claim.measured(gain).verdict is Verdict.FAILS


def test_the_diverse_ensemble_meets_the_one_scorer_ensemble_chosen_on_validation():
    rng = np.random.default_rng(1)
    B = 300
    a = rng.integers(1, 10, 2 * B).astype(float)
    better = np.maximum(1.0, a - rng.integers(0, 3, 2 * B))
    best_on_test = np.ones(2 * B)  # RotatE's seeds rank every answer first on test, but DistMult's lead on validation
    claim = DECLARED["ensemble-diverse-nations"]
    gain, detail = diversity_gain(compositions(better, a, best_on_test, valid=(0.7, 0.8, 0.6)))
    diff = per_triple_rr(better) - per_triple_rr(a)  # against DistMult's: the comparator is chosen on validation
    assert (
        gain.estimate == pytest.approx(diff.mean()) and gain.low > 0 and claim.measured(gain).verdict is Verdict.HOLDS
    )
    assert "vs DistMult x2" in detail and "RotatE 1.000" in detail
    # a bootstrap interval near the normal one for a mean of paired differences (2000 resamples)
    half = 1.96 * diff.std(ddof=1) / np.sqrt(B)
    assert (gain.high - gain.low) / 2 == pytest.approx(half, rel=0.15)
    # chosen the other way, on validation, the one-scorer ensemble that ranks everything first wins: fails
    gain, detail = diversity_gain(compositions(better, a, best_on_test, valid=(0.7, 0.6, 0.8)))
    assert gain.high < 0 and claim.measured(gain).verdict is Verdict.FAILS and "vs RotatE x2" in detail
    # an equal one: the interval is [0, 0] and none of it lies above zero
    gain, _ = diversity_gain(compositions(a, a, a))
    assert gain.low == gain.high == 0 and claim.measured(gain).verdict is Verdict.FAILS
    # no one-scorer ensemble (fewer seeds than scorers): not measured as a gain
    gain, _ = diversity_gain({"diverse": composition(a, 0.7, ["distmult/seed_0", "rotate/seed_0"])})
    assert isinstance(gain, str) and claim.measured(gain).verdict is Verdict.FAILS


def test_the_diverse_claims_need_as_many_seeds_as_scorers():
    few = {c.id for c in claims(SimpleNamespace(bess=Config(seeds=3)))}  # 4 scorers, 3 seeds: no one-scorer ensemble
    assert "ensemble-nations" in few and not any(c.startswith("ensemble-diverse-") for c in few)
    two = {c.id for c in claims(SimpleNamespace(bess=Config(models=["distmult", "rotate"], seeds=2)))}
    assert {"ensemble-diverse-nations", "ensemble-diverse-kinships", "ensemble-diverse-umls"} <= two


def test_the_old_rules_verdicts_beside_the_new():
    report = Report("bess", "t", ledger=LEDGER)
    # 0.5897 is within 0.05 of a printed 0.640 (>= 0.5895) but not of the point 0.640 (>= 0.59); the figure itself
    # is unverified, so the claim's verdict is that, with the rule's beside
    kinships = DECLARED["mrr-kinships-distmult"].measured(Interval(0.5897, 0.5896, 0.5898))
    assert kinships.verdict is Verdict.UNVERIFIED and kinships.rule_verdict is Verdict.HOLDS
    assert report.original_verdict(kinships).endswith(": fails on this run")
    # UMLS DistMult's target moved from 0.739 to 0.878 in issue 23: 0.80 held the old rule, fails the new one
    umls = DECLARED["mrr-umls-distmult"].measured(Interval(0.80, 0.79, 0.81))
    assert umls.rule_verdict is Verdict.FAILS and report.original_verdict(umls).endswith(": holds on this run")
    # RotatE's recipe changed after it failed: the verdict last recorded under the old recipe is shown
    rotate = DECLARED["mrr-nations-rotate"].measured(Interval(0.70, 0.69, 0.71))
    assert rotate.verdict is Verdict.HOLDS
    assert "fails (0.615) (last recorded: commit fdd5b22" in report.original_verdict(rotate)
    # issue 45: every MRR claim's one-seed point rule and the 2x floor claim, with the verdicts last recorded
    latest = [e for e in LEDGER if e.date == "2026-11-26"]
    assert {e.claim for e in latest if e.kind == "respecified"} == {c for c in DECLARED if c.startswith("mrr-")}
    assert all(e.old_verdict.startswith("holds (") and e.commit for e in latest if e.kind == "respecified")
    removed = [e for e in LEDGER if e.kind == "removed"]
    assert [(e.claim, e.moved_to.split(";")[0].split(" (")[0]) for e in removed] == [
        ("table-memory-1-over-n", "fact table-memory-1-over-n"),
        ("beats-random-floor", "claim beats-random-floor-as-literature"),
        (
            "bess-equals-single-device",
            "test tests/papers/bess/test_bess.py::test_bess_and_all_gather_equal_the_single_device_reference_on_1_2_4_"
            "devices",
        ),
        ("bess-moves-less", "fact bess-moves-less"),
        ("beats-random-floor-as-literature", "claim mrr-nations-transe"),
    ]
    assert removed[1].old_verdict == "fails (1.291)"
    assert all(e.old_verdict.startswith("holds (") and e.commit == "54b68c7" for e in removed[2:])
    assert not {e.claim for e in removed} & set(DECLARED)


def test_table_memory_and_bytes_moved_are_analytic_facts():
    assert facts([row(1, 8000)]) == []  # one mesh: nothing to compare, nothing moved
    memory, moves = facts([row(1, 8000), row(2, 4000, 10, 100), row(4, 2100, 30, 200)])
    assert memory.id == "table-memory-1-over-n" and memory.kind == "analytic"
    assert memory.value == pytest.approx(4 * 2100 / 8000 - 1)  # the largest deviation from 1/n: 5% at n=4
    assert "n=4" in memory.detail
    assert moves.id == "bess-moves-less" and moves.kind == "analytic"
    assert moves.value == pytest.approx(30 / 200)  # the largest ratio of BESS's bytes to the all-gather's
    assert "n=2: 10 B vs 100 B" in moves.detail


def test_equality_with_one_device_is_a_fact_beside_its_test():
    (fact,) = facts([], {"distmult": Equivalence(1e-7, 2e-7, 1e-7, 3e-8), "rotate": Equivalence(0, 5e-8, 0, 0)}, 4)
    assert fact.id == "bess-equals-single-device" and fact.kind == "construction"
    assert fact.value == 2e-7 and "on 4 devices" in fact.statement
    assert "DistMult 2.0e-07, RotatE 5.0e-08" in fact.detail and "tests/papers/bess/test_bess.py::" in fact.detail


# ---------------------------------------------------------------------------------------------- decide and render


def nations_config() -> SimpleNamespace:
    c = Config(
        datasets=["nations"],
        models=["distmult", "rotate"],
        seeds=3,
        seeds_for={},
        scaling=ScalingConfig(devices=[1, 2]),
    )
    return SimpleNamespace(bess=c, seed=0, scale=SimpleNamespace(name=SimpleNamespace(value="smoke")))


def nations_results(*, bess_bytes: int = 10, rotate=(0.40, 0.41, 0.39)) -> Results:
    """Hand-made Results whose verdicts are known: DistMult well above its bound (0.7131's lowest reading - 0.05 =
    0.66305), RotatE well below, an ensemble of both clearly better than DistMult on every third query, BESS equal to
    one device, and a scaling sweep where BESS moves `bess_bytes` against the all-gather step's 100."""
    rng = np.random.default_rng(3)
    ranks = rng.integers(1, 4, 402).astype(float)
    better = np.maximum(1.0, ranks - (np.arange(402) % 3 == 0))
    runs = {
        ("nations", "distmult"): [seed_run(m, ranks, s) for s, m in enumerate((0.80, 0.81, 0.79))],
        ("nations", "rotate"): [seed_run(m, ranks + 1, s) for s, m in enumerate(rotate)],
    }
    return Results(
        graphs={"nations": graph(filtered_floor("nations"))},
        runs=runs,
        ensembles={"nations": Ensemble({"distmult": 2, "rotate": 1}, ranking_metrics(better), better)},
        equivalence={m: Equivalence(1e-7, 2e-7, 1e-7, 3e-8) for m in ("distmult", "rotate")},
        scaling=[row(1, 8000, 0, 0), row(2, 4000, bess_bytes, 100)],
        compositions={"nations": compositions(better, ranks, ranks + 1)},
    )


def composition(ranks, valid_mrr: float, members) -> Composition:
    return Composition(list(members), valid_mrr, ranking_metrics(ranks), np.asarray(ranks, np.float64))


def compositions(diverse, distmult, rotate, valid=(0.7, 0.8, 0.6)) -> dict[str, Composition]:
    """A graph's ensembles of fixed composition over DistMult and RotatE: the diverse one and each scorer's two
    seeds, with their validation MRRs as given (those choose the one-scorer comparator)."""
    return {
        "diverse": composition(diverse, valid[0], ["distmult/seed_0", "rotate/seed_0"]),
        "one:distmult": composition(distmult, valid[1], ["distmult/seed_0", "distmult/seed_1"]),
        "one:rotate": composition(rotate, valid[2], ["rotate/seed_0", "rotate/seed_1"]),
    }


def test_decide_gives_the_known_verdicts_of_hand_made_results():
    cfg, results = nations_config(), nations_results()
    decided = decide(cfg, results)
    assert isinstance(decided, Decided)
    verdicts = {c.id: c.verdict for c in decided.claims}
    assert verdicts == {
        "mrr-nations-distmult": Verdict.HOLDS,
        "mrr-nations-rotate": Verdict.FAILS,
        "ensemble-nations": Verdict.HOLDS,
        "ensemble-diverse-nations": Verdict.HOLDS,
    }
    # the decision keeps the declarations, in order
    assert [c.declaration() for c in decided.claims] == [c.declaration() for c in PAPER.declare(cfg)]
    by_id = {c.id: c for c in decided.claims}
    distmult = by_id["mrr-nations-distmult"].ours
    assert (distmult.low, distmult.estimate, distmult.high) == pytest.approx(t_interval([0.80, 0.81, 0.79]))
    fact = {f.id: f for f in decided.facts}
    assert list(fact) == ["table-memory-1-over-n", "bess-moves-less", "bess-equals-single-device"]
    assert (
        fact["bess-equals-single-device"].value == 2e-7 and "RotatE 2.0e-07" in fact["bess-equals-single-device"].detail
    )
    assert fact["table-memory-1-over-n"].value == 0 and fact["bess-moves-less"].value == 10 / 100
    # the ensemble's gain: the paired bootstrap of its per-triple RR over DistMult's (the best member by test MRR)
    gain = by_id["ensemble-nations"].ours
    diff = per_triple_rr(results.ensembles["nations"].test_ranks) - per_triple_rr(
        results.runs["nations", "distmult"][0].test_ranks
    )
    assert gain.estimate == pytest.approx(diff.mean()) and gain.low > 0
    est = decided.estimates
    assert est["mrr/nations/distmult"] == by_id["mrr-nations-distmult"].ours
    assert est["floor/nations/filtered"] == filtered_floor("nations")
    assert est["scaling/2/bess_bytes_per_step"] == 10 and est["scaling/2/all_gather_bytes_per_step"] == 100
    ses = [np.std(per_triple_rr(r.test_ranks), ddof=1) / np.sqrt(201) for r in results.runs["nations", "rotate"]]
    assert est["split_se/nations/rotate"].estimate == pytest.approx(np.mean(ses))
    # moving as many bytes as the all-gather step shows as a ratio of 1 (a fact: shown, never failing); a RotatE at
    # the bound is undecided, with the seeds that would decide it at the observed spread
    worse = decide(cfg, nations_results(bess_bytes=100, rotate=(0.62, 0.66, 0.70)))
    rotate = next(c for c in worse.claims if c.id == "mrr-nations-rotate")
    assert rotate.verdict is Verdict.UNDECIDED and "training seeds at the observed spread (now 3;" in rotate.to_decide
    assert next(f for f in worse.facts if f.id == "bess-moves-less").value == 1.0


def test_a_claim_the_run_did_not_measure_stays_unmeasured():
    cfg = nations_config()
    results = nations_results()
    del results.runs["nations", "rotate"]
    results.ensembles, results.compositions = {}, {}  # a run made before issue 62 kept no compositions
    results.scaling = [row(1, 8000, 0, 0)]  # one mesh: nothing moved, and no memory fact to state
    decided = decide(cfg, results)
    verdicts = {c.id: c.verdict for c in decided.claims}
    assert (
        verdicts["mrr-nations-rotate"] is Verdict.NOT_MEASURED and verdicts["ensemble-nations"] is Verdict.NOT_MEASURED
    )
    assert verdicts["ensemble-diverse-nations"] is Verdict.NOT_MEASURED
    assert [f.id for f in decided.facts] == ["bess-equals-single-device"]


def test_the_report_shows_the_decided_figures():
    cfg, results = nations_config(), nations_results()
    decided = decide(cfg, results)
    report = render(cfg, results, decided)
    assert report.claims == [] and report.facts == []  # render never decides
    tables = {t.name: t for t in report.tables}
    assert list(tables) == ["link_prediction", "seeds", "ensembles", "compositions", "scaling"]  # no margin grid
    diverse = next(c for c in decided.claims if c.id == "ensemble-diverse-nations").ours
    assert [r[1] for r in tables["compositions"].rows] == [
        "every scorer", "DistMult only", "RotatE only", "every scorer - best one-scorer (test)"
    ]  # fmt: skip
    assert tables["compositions"].rows[-1][-1] == f"{diverse.estimate:+.4f} [{diverse.low:+.4f}, {diverse.high:+.4f}]"
    mrr = decided.estimates["mrr/nations/distmult"]
    distmult = tables["link_prediction"].rows[0]
    assert distmult[:5] == ["nations", "DistMult", f"{mrr.estimate:.3f}", f"[{mrr.low:.3f}, {mrr.high:.3f}]", "0.713"]
    gain = next(c for c in decided.claims if c.id == "ensemble-nations").ours
    assert tables["ensembles"].rows[0][2:] == [f"{gain.estimate:+.4f}", f"[{gain.low:+.4f}, {gain.high:+.4f}]"]
    se = decided.estimates["split_se/nations/rotate"].estimate
    assert tables["seeds"].rows[1][4] == f"{se:.4f}"
    assert [f.name for f in report.figures] == ["mrr", "scaling"]
    assert report.metrics["nations/distmult/test_mrr"] == mrr.estimate
    assert report.metrics["nations/rotate/seed_2/test_mrr"] == 0.39

"""The BESS report: the claims (declared from the config alone, before any run), the tables (filtered MRR and hits@k
of every scoring function on Nations, Kinships and UMLS beside the literature, the random floor and the ensembles;
scaling over simulated devices, read from the compiled programs) and the figures (MRR per graph, steps/s and memory
per device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from core import plots
from core.report import Claim, Figure, Interval, Report, Table, at_least, at_most, interval_above, is_true

# Literature filtered test MRR: the strongest value found for each (graph, model); sources, tables and pages in
# papers/bess/REFERENCES.md (entries L1-L8)
LITERATURE_MRR = {
    ("nations", "transe"): 0.4813,  # L1
    ("nations", "distmult"): 0.7131,  # L2
    ("nations", "complex"): 0.6677,  # L3
    ("nations", "rotate"): 0.7155,  # L4
    ("kinships", "distmult"): 0.640,  # L5
    ("kinships", "complex"): 0.823,  # L6
    ("umls", "distmult"): 0.878,  # L7
    ("umls", "complex"): 0.838,  # L8
}
LITERATURE_SLACK = 0.05  # issue 12: within 0.05 of the literature MRR, or better
WIDE = 2.0  # issue 12: "beats the random floor by a wide margin": at least twice the floor's MRR
EQUIVALENCE_TOL = 1e-5  # float32
MEMORY_TOL = 0.01  # n x (per-device bytes the entity table costs) against one device's
BOOTSTRAP = {"n_resamples": 2000, "confidence": 0.95}
NAMES = {"transe": "TransE", "distmult": "DistMult", "complex": "ComplEx", "rotate": "RotatE"}


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


# ---------------------------------------------------------------------------------------------- claims

CLAIMS = {
    "beats-random-floor": Claim(
        "beats-random-floor",
        f"Every model beats a random ranker by a wide margin: the smallest ratio of test MRR to the expected "
        f"filtered MRR of a uniformly random ranking (exact, from each test query's filtered candidate count; at "
        f"least {WIDE:g}x)",
        None,
        at_least(WIDE),
    ),
    "table-memory-1-over-n": Claim(
        "table-memory-1-over-n",
        "Entity-table memory per device falls as 1/n: from XLA's memory analysis of the compiled training step, "
        "the per-device bytes (arguments + outputs) that doubling the entity count adds, times n, against one "
        "device's; largest relative deviation over the meshes",
        None,
        at_most(MEMORY_TOL),
    ),
    "bess-moves-less": Claim(
        "bess-moves-less",
        "BESS moves fewer bytes per step than all-gathering the entity table, for every n >= 2: the bytes the "
        "collectives of the compiled BESS step deliver, against those of the compiled all-gather step",
        "yes",
        is_true("BESS bytes < all-gather bytes at every n >= 2"),
    ),
}


def _literature_claim(name: str, model: str) -> Claim:
    lit = LITERATURE_MRR[(name, model)]
    return Claim(
        f"mrr-{name}-{model}",
        f"{NAMES[model]} on {name}: filtered test MRR within {LITERATURE_SLACK} of the literature, or better",
        lit,
        at_least(round(lit - LITERATURE_SLACK, 6)),
    )


def _ensemble_claim(name: str, members: int) -> Claim:
    return Claim(
        f"ensemble-{name}",
        f"On {name}, an ensemble of at least two distinct models out of {members} (members and weights chosen on "
        "the validation split, log-probabilities averaged) beats its best member on the test split: test MRR gain "
        f"over the best single model, {BOOTSTRAP['confidence']:.0%} paired-bootstrap interval over test triples",
        None,
        interval_above(0.0),
    )


def _equivalence_claim(devices: int) -> Claim:
    return Claim(
        "bess-equals-single-device",
        f"BESS on {devices} devices equals the single-device computation for the same batch: largest relative "
        "error of loss, scores and gradients over the scoring functions",
        None,
        at_most(EQUIVALENCE_TOL),
    )


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run: the literature MRR of every (graph, model) the config trains that the
    literature reports, an ensemble per graph when it trains several models, the scaling claims when it measures
    scaling (moving fewer bytes needs a mesh of two or more, 1/n needs two meshes)."""
    c = cfg.bess
    datasets, models = list(dict.fromkeys(c.datasets)), list(dict.fromkeys(c.models))
    out = [CLAIMS["beats-random-floor"]]
    out += [_literature_claim(g, m) for g, m in LITERATURE_MRR if g in datasets and m in models]
    if len(models) > 1:
        out += [_ensemble_claim(name, len(models)) for name in datasets]
    out.append(_equivalence_claim(c.devices))
    if c.scaling.enabled:
        if len(set(c.scaling.devices)) > 1:
            out.append(CLAIMS["table-memory-1-over-n"])
        if any(n >= 2 for n in c.scaling.devices):
            out.append(CLAIMS["bess-moves-less"])
    return out


def per_triple_rr(ranks: np.ndarray) -> np.ndarray:
    """Reciprocal rank of each test triple: the mean of its tail query's and its head query's (ranks [2B]: tails
    first), so that the mean over triples is the MRR and a bootstrap resamples triples, not correlated queries."""
    ranks = np.asarray(ranks, np.float64)
    half = len(ranks) // 2
    return (1.0 / ranks[:half] + 1.0 / ranks[half:]) / 2


def ensemble_gain(ens: dict, results: dict, name: str, seed: int = 0) -> tuple[Any, str]:
    """Our figure for `ensemble-<name>`: the paired-bootstrap interval of the test MRR gain over the best single
    member (the best by test MRR, the strongest comparison), or a sentence when selection kept one model only."""
    from core.stats import paired_bootstrap

    members = {m: results[(g, m)] for (g, m) in results if g == name}
    best = max(members, key=lambda m: members[m]["test"]["mrr"])
    chosen = ", ".join(f"{NAMES[m]} x{k}" for m, k in ens["weights"].items())
    detail = f"{ens['mrr']:.3f} vs {NAMES[best]} {members[best]['test']['mrr']:.3f}; chose {chosen}"
    if len(ens["weights"]) < 2:
        return f"one member ({chosen}): not an ensemble", detail
    gain = paired_bootstrap(
        per_triple_rr(ens["test_ranks"]), per_triple_rr(members[best]["test_ranks"]), seed=seed, **BOOTSTRAP
    )
    return gain, detail


def measure(cfg, results, ensembles, floors, equivalence, scaling_rows, graphs=None) -> list[Claim]:
    """Our figure for every declared claim (one the run did not measure stays unmeasured)."""
    from papers.bess.scoring import random_floor

    ours: dict[str, tuple[Any, str]] = {}
    (wname, wmodel), winfo = min(results.items(), key=lambda kv: kv[1]["test"]["mrr"] / floors[kv[0][0]])
    mrr = winfo["test"]["mrr"]
    unfiltered = random_floor(graphs[wname].num_entities) if graphs else float("nan")
    ours["beats-random-floor"] = (
        mrr / floors[wname],
        f"{NAMES[wmodel]} on {wname}: {mrr:.3f} vs filtered floor {floors[wname]:.3f} "
        f"(against the unfiltered H_N/N = {unfiltered:.3f}: {mrr / unfiltered:.2f}x)",
    )
    for (name, model), info in results.items():
        ours[f"mrr-{name}-{model}"] = (info["test"]["mrr"], f"hits@10 {info['test']['hits@10']:.3f}")
    for name, ens in ensembles.items():
        ours[f"ensemble-{name}"] = ensemble_gain(ens, results, name, int(cfg.seed))
    ours["bess-equals-single-device"] = (
        max(max(v.values()) for v in equivalence.values()),
        ", ".join(f"{NAMES[m]} {max(v.values()):.1e}" for m, v in equivalence.items()),
    )
    if len(scaling_rows) > 1:
        first = scaling_rows[0]
        whole = first["entity_bytes_per_device"] * first["devices"]
        ours["table-memory-1-over-n"] = (
            max(abs(r["entity_bytes_per_device"] * r["devices"] / whole - 1) for r in scaling_rows),
            f"{first['entities_measured']:,} more entities cost per device: "
            + " / ".join(f"n={r['devices']} {_bytes(r['entity_bytes_per_device'])}" for r in scaling_rows),
        )
    multi = [r for r in scaling_rows if r["devices"] >= 2]
    if multi:
        ours["bess-moves-less"] = (
            all(r["bess_bytes_per_step"] < r["all_gather_bytes_per_step"] for r in multi),
            ", ".join(
                f"n={r['devices']}: {_bytes(r['bess_bytes_per_step'])} vs {_bytes(r['all_gather_bytes_per_step'])}"
                for r in multi
            ),
        )
    return [claim.measured(*ours[claim.id]) if claim.id in ours else claim for claim in claims(cfg)]


# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, graphs, results, ensembles, floors, untrained, scaling_rows) -> list[Table]:
    from papers.bess.scoring import random_floor

    c = cfg.bess
    rows = []
    for (name, model), info in results.items():
        t = info["test"]
        rows.append(
            [
                name,
                NAMES[model],
                f"{t['mrr']:.3f}",
                f"{LITERATURE_MRR[(name, model)]:.3f}" if (name, model) in LITERATURE_MRR else "-",
                f"{t['hits@1']:.3f}",
                f"{t['hits@3']:.3f}",
                f"{t['hits@10']:.3f}",
                f"{info['valid']['mrr']:.3f}",
                f"{info['best_step']} / {c.train.steps}",
                f"{info['gamma']:g}" if model in ("transe", "rotate") else "-",
                f"{info['triples_per_second']:.0f}",
                f"{info['seconds']:.0f}",
            ]
        )
    for name, ens in ensembles.items():
        hits = [f"{ens[k]:.3f}" for k in ("hits@1", "hits@3", "hits@10")]
        rows.append([name, "ensemble", f"{ens['mrr']:.3f}", "-", *hits, *["-"] * 5])
    for name, kg in graphs.items():
        rows.append([name, "random ranking, filtered (exact)", f"{floors[name]:.3f}", "-", *["-"] * 8])
        rows.append(
            [name, "random ranking, unfiltered (H_N/N)", f"{random_floor(kg.num_entities):.3f}", "-", *["-"] * 8]
        )
        u = untrained[name]
        hits = [f"{u[k]:.3f}" for k in ("hits@1", "hits@3", "hits@10")]
        rows.append([name, "untrained (random embeddings)", f"{u['mrr']:.3f}", "-", *hits, *["-"] * 5])
    out = [
        Table(
            "link_prediction",
            "Filtered link prediction on the test split (both directions, ties averaged)",
            [
                "graph",
                "model",
                "MRR",
                "literature MRR",
                "hits@1",
                "hits@3",
                "hits@10",
                "valid MRR",
                "kept at step",
                "gamma",
                "train triples/s",
                "time (s)",
            ],
            rows,
            caption=f"BESS on {c.devices} simulated devices, {c.train.steps} steps of {c.train.batch} triples "
            f"(reciprocal relations; every triple weighted by its block's share of the training set), "
            f"{c.train.negatives} negatives per block ({c.devices * c.train.negatives} per triple), seed {cfg.seed}. "
            f"Each model keeps the parameters of its best validation MRR (evaluated every {c.train.eval_every} "
            "steps); RotatE's margin gamma is chosen per graph on validation. Literature sources: "
            "papers/bess/REFERENCES.md.",
        )
    ]
    grids = [(name, model, info) for (name, model), info in results.items() if len(info["grid"]) > 1]
    if grids:
        out.append(
            Table(
                "margins",
                "Margin gamma chosen on the validation split (best validation MRR over each run's evaluations)",
                ["graph", "model", *[f"gamma = {g:g}" for g in grids[0][2]["grid"]], "chosen"],
                [
                    [name, NAMES[model], *[f"{v:.3f}" for v in info["grid"].values()], f"{info['gamma']:g}"]
                    for name, model, info in grids
                ],
            )
        )
    if ensembles:
        ens_rows = []
        for name, ens in ensembles.items():
            gain, detail = ensemble_gain(ens, results, name, int(cfg.seed))
            cells = (
                [f"{gain.estimate:+.4f}", f"[{gain.low:+.4f}, {gain.high:+.4f}]"]
                if isinstance(gain, Interval)
                else [gain, "-"]
            )
            ens_rows.append([name, detail, *cells])
        out.append(
            Table(
                "ensembles",
                "Ensembles against their best single member on the test split",
                ["graph", "ensemble vs best member; members (weight)", "MRR gain", "95% interval"],
                ens_rows,
                caption="Members and weights chosen on the validation split by greedy forward selection; the "
                "interval is a paired bootstrap (2000 resamples) over test triples of the per-triple reciprocal "
                "rank (the mean of the tail and the head query).",
            )
        )
    if scaling_rows:
        out.append(
            Table(
                "scaling",
                "BESS at a fixed global batch on 1..n simulated devices (synthetic graph), memory and traffic read "
                "from the compiled programs",
                [
                    "devices",
                    "steps/s",
                    "triples/s",
                    "step memory / device (MiB)",
                    "entity-table cost / device (MiB)",
                    "step temporaries / device (MiB)",
                    "BESS bytes/step",
                    "of which all-to-all",
                    "all-to-all, analytic",
                    "all-gather step bytes/step",
                    "all-gather step temporaries / device (MiB)",
                ],
                [
                    [
                        r["devices"],
                        f"{r['steps_per_second']:.1f}",
                        f"{r['triples_per_second']:.0f}",
                        f"{r['step_bytes_per_device'] / 2**20:.2f}",
                        f"{r['entity_bytes_per_device'] / 2**20:.2f}",
                        f"{r['temp_bytes_per_device'] / 2**20:.2f}",
                        f"{r['bess_bytes_per_step']:,}",
                        f"{r['bess_all_to_all_bytes_per_step']:,}",
                        f"{r['analytic_all_to_all_bytes_per_step']:,}",
                        f"{r['all_gather_bytes_per_step']:,}",
                        f"{r['all_gather_temp_bytes_per_device'] / 2**20:.2f}",
                    ]
                    for r in scaling_rows
                ],
                caption=f"{c.scaling.entities:,} entities, DistMult of width {c.scaling.dim}, 1024 triples per step, "
                "64 negatives per triple, sampled softmax, AdamW. Step memory: XLA's memory analysis of the compiled "
                "step per device (arguments + outputs + temporaries). Entity-table cost: what compiling the same step "
                f"for {c.scaling.entities:,} more entities adds per device (arguments + outputs). Bytes/step: what "
                "the collectives of the compiled step deliver to all devices from others (all-to-all and "
                "all-gather (n-1)/n of their result, reduce-scatter (n-1) x its result, all-reduce 2(n-1)/n of it); "
                "both steps also all-reduce the replicated relations' gradient. The analytic column "
                "(2 n(n-1)(b + n_neg) d x 4 bytes) is a cross-check, not a measurement. The simulated devices share "
                "this machine's cores, so steps/s shows the method's overheads, not a cluster's speed-up.",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- figures


def figures(graphs, results, ensembles, floors, scaling_rows) -> list[Figure]:
    out = [
        Figure(
            "mrr",
            _mrr_figure(graphs, results, ensembles, floors),
            "Filtered test MRR: ours beside the literature and the expected MRR of a random ranking (filtered).",
        )
    ]
    if scaling_rows:
        out.append(
            Figure(
                "scaling",
                _scaling_figure(scaling_rows),
                "Steps/s and per-device memory (XLA's analysis of the compiled step) against the number of "
                "simulated devices.",
            )
        )
    return out


def build_report(cfg, graphs, results, ensembles, floors, untrained, equivalence, scaling_rows) -> Report:
    notes = [
        "The paper's experiment (WikiKG90Mv2: 91M entities, an 85-model ensemble, 16 IPUs) cannot run on a CPU "
        "without the data; Nations, Kinships and UMLS run the same method (sharding, balanced blocks, shared "
        "negatives, one all_to_all per step) end to end. Head prediction uses reciprocal relations (a common "
        "protocol; the literature figures come from varied protocols and tuning).",
        "The random floor is the exact expected filtered MRR of a uniformly random ranking: a test query with C "
        "candidates left after filtering has E[1/rank] = H_C / C, averaged over the test split's tail and head "
        "queries. It lies well above the unfiltered H_N/N, most on Nations, whose 14 entities leave few candidates.",
        "Hyperparameters are per scoring function and shared by the three graphs (bess.hyper.*), except RotatE's "
        "margin gamma, chosen per graph on the validation split (the 'margins' table). TransE's gamma is inert under "
        "the sampled softmax (shift-invariant).",
    ]
    metrics = {f"{name}/{model}/test_mrr": info["test"]["mrr"] for (name, model), info in results.items()}
    metrics |= {f"{name}/ensemble/test_mrr": e["mrr"] for name, e in ensembles.items()}
    metrics |= {f"{name}/random_filtered_mrr": f for name, f in floors.items()}
    metrics |= {f"scaling/{r['devices']}/steps_per_second": r["steps_per_second"] for r in scaling_rows}
    return Report(
        "bess",
        "BESS: balanced entity sampling and sharing for knowledge-graph completion",
        measure(cfg, results, ensembles, floors, equivalence, scaling_rows, graphs),
        tables(cfg, graphs, results, ensembles, floors, untrained, scaling_rows),
        figures(graphs, results, ensembles, floors, scaling_rows),
        metrics,
        notes,
    )


def _mrr_figure(graphs, results, ensembles, floors):
    names = list(graphs)
    models = sorted({m for _, m in results}, key=list(NAMES).index)
    fig, axes = plots.figure(len(names), panel=(4, 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        trained = [m for m in models if (name, m) in results]
        ensemble = name in ensembles
        ours = [results[(name, m)]["test"]["mrr"] for m in trained] + ([ensembles[name]["mrr"]] if ensemble else [])
        lit = [LITERATURE_MRR.get((name, m), np.nan) for m in trained] + ([np.nan] if ensemble else [])
        labels = [NAMES[m] for m in trained] + (["ensemble"] if ensemble else [])
        plots.bars(
            ax,
            labels,
            {"ours (BESS)": ours, "literature": lit},
            ylabel="filtered test MRR",
            rotation=30,
            legend=False,
        )
        ax.axhline(floors[name], color="k", ls="--", lw=1, label="random ranking (filtered)")
        ax.set_ylim(0, 1)
        ax.set_title(name)
    axes[0][0].legend(fontsize=8)
    return fig


def _scaling_figure(rows):
    n = [r["devices"] for r in rows]
    fig, (speed, memory) = plots.figure(2, panel=(4.5, 3.6))
    plots.curves(
        speed,
        {"steps/s": (n, [r["steps_per_second"] for r in rows])},
        xlabel="devices (simulated on one CPU)",
        ylabel="training steps/s (fixed global batch)",
        legend=False,
    )
    speed.set_xscale("log", base=2)
    whole = rows[0]["step_bytes_per_device"] * rows[0]["devices"]
    plots.curves(
        memory,
        {
            "compiled step (XLA)": (n, [r["step_bytes_per_device"] / 2**20 for r in rows]),
            "its entity-table part": (n, [r["entity_bytes_per_device"] / 2**20 for r in rows]),
            "all-gather step's temporaries": (n, [r["all_gather_temp_bytes_per_device"] / 2**20 for r in rows]),
            "1/n": (n, [whole / k / 2**20 for k in n]),
        },
        xlabel="devices",
        ylabel="MiB per device",
        styles={"its entity-table part": {"marker": "s"}, "1/n": {"color": "k", "ls": ":", "marker": None}},
        logy=True,
    )
    memory.set_xscale("log", base=2)
    return fig


__all__ = ["LITERATURE_MRR", "build_report", "claims", "ensemble_gain", "measure", "per_triple_rr"]

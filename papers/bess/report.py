"""The BESS report: the claims (declared from the config alone, before any run), the tables (filtered MRR and hits@k
of every scoring function on Nations, Kinships and UMLS beside the literature, the random floor and the ensembles;
scaling over simulated devices) and the figures (MRR per graph, steps/s and memory per device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from core import plots
from core.report import Claim, Figure, Report, Table, at_least, at_most, is_true

# refs/PAPERS.md: literature filtered MRR on the small graphs
LITERATURE_MRR = {
    ("nations", "transe"): 0.481,
    ("nations", "distmult"): 0.713,
    ("nations", "complex"): 0.668,
    ("nations", "rotate"): 0.716,
    ("kinships", "distmult"): 0.640,
    ("kinships", "complex"): 0.762,
    ("umls", "distmult"): 0.739,
    ("umls", "complex"): 0.749,
}
PAPER_FLOOR = {"nations": 0.232, "kinships": 0.050, "umls": 0.041}
LITERATURE_SLACK = 0.05  # the issue: within 0.05 of the literature MRR, or better
WIDE = 2.0  # "beats the random floor by a wide margin": at least twice the floor's MRR
EQUIVALENCE_TOL = 1e-5  # float32
MEMORY_TOL = 0.01  # n x (entity-table bytes on a device) vs the whole table: shards are padded to the largest
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
        f"Every model beats the random floor H_N/N by a wide margin: the smallest ratio of test MRR to the floor "
        f"(at least {WIDE:g}x)",
        None,
        at_least(WIDE),
    ),
    "table-memory-1-over-n": Claim(
        "table-memory-1-over-n",
        "Entity-table memory per device falls as 1/n: largest relative deviation of n x (bytes on a "
        "device) from the whole table",
        None,
        at_most(MEMORY_TOL),
    ),
    "bess-moves-less": Claim(
        "bess-moves-less",
        "BESS moves fewer bytes per step than all-gathering the entity table, for every n >= 2",
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
        f"On {name}, an ensemble of the {members} models (members and weights chosen on the validation "
        "split, log-probabilities averaged) beats its best member on the test split: ensemble MRR minus the "
        "best member's",
        None,
        at_least(0.0),
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
    scaling (moving fewer bytes needs a mesh of two or more)."""
    c = cfg.bess
    datasets, models = list(dict.fromkeys(c.datasets)), list(dict.fromkeys(c.models))
    out = [CLAIMS["beats-random-floor"]]
    out += [_literature_claim(g, m) for g, m in LITERATURE_MRR if g in datasets and m in models]
    if len(models) > 1:
        out += [_ensemble_claim(name, len(models)) for name in datasets]
    out.append(_equivalence_claim(c.devices))
    if c.scaling.enabled:
        out.append(CLAIMS["table-memory-1-over-n"])
        if any(n >= 2 for n in c.scaling.devices):
            out.append(CLAIMS["bess-moves-less"])
    return out


def measure(cfg, results, ensembles, floors, equivalence, scaling_rows) -> list[Claim]:
    """Our figure for every declared claim (one the run did not measure stays unmeasured)."""
    ours: dict[str, tuple[Any, str]] = {}
    (wname, wmodel), winfo = min(results.items(), key=lambda kv: kv[1]["test"]["mrr"] / floors[kv[0][0]])
    ours["beats-random-floor"] = (
        winfo["test"]["mrr"] / floors[wname],
        f"{NAMES[wmodel]} on {wname}: {winfo['test']['mrr']:.3f} vs floor {floors[wname]:.3f}",
    )
    for (name, model), info in results.items():
        ours[f"mrr-{name}-{model}"] = (info["test"]["mrr"], f"hits@10 {info['test']['hits@10']:.3f}")
    for name, ens in ensembles.items():
        members = {m: results[(name, m)]["test"]["mrr"] for (g, m) in results if g == name}
        best = max(members, key=members.get)
        chosen = ", ".join(f"{NAMES[m]} x{k}" for m, k in ens["weights"].items())
        ours[f"ensemble-{name}"] = (
            ens["mrr"] - members[best],
            f"{ens['mrr']:.3f} vs {NAMES[best]} {members[best]:.3f}; chose {chosen}",
        )
    ours["bess-equals-single-device"] = (
        max(max(v.values()) for v in equivalence.values()),
        ", ".join(f"{NAMES[m]} {max(v.values()):.1e}" for m, v in equivalence.items()),
    )
    if scaling_rows:
        whole = scaling_rows[0]["entity_table_bytes_per_device"] * scaling_rows[0]["devices"]
        ours["table-memory-1-over-n"] = (
            max(abs(r["entity_table_bytes_per_device"] * r["devices"] / whole - 1) for r in scaling_rows),
            " / ".join(_bytes(r["entity_table_bytes_per_device"]) for r in scaling_rows),
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
                f"{info['triples_per_second']:.0f}",
                f"{info['seconds']:.0f}",
            ]
        )
    for name, ens in ensembles.items():
        hits = [f"{ens[k]:.3f}" for k in ("hits@1", "hits@3", "hits@10")]
        rows.append([name, "ensemble", f"{ens['mrr']:.3f}", "-", *hits, "-", "-", "-"])
    for name in graphs:
        rows.append([name, "random ranking (H_N/N)", f"{floors[name]:.3f}", f"{PAPER_FLOOR[name]:.3f}", *["-"] * 6])
        u = untrained[name]
        hits = [f"{u[k]:.3f}" for k in ("hits@1", "hits@3", "hits@10")]
        rows.append([name, "untrained (random embeddings)", f"{u['mrr']:.3f}", "-", *hits, "-", "-", "-"])
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
                "train triples/s",
                "time (s)",
            ],
            rows,
            caption=f"BESS on {c.devices} simulated devices, {c.train.steps} steps of {c.train.batch} triples "
            f"(reciprocal relations), {c.train.negatives} negatives per block ({c.devices * c.train.negatives} per "
            f"triple), seed {cfg.seed}.",
        )
    ]
    if scaling_rows:
        out.append(
            Table(
                "scaling",
                "BESS at a fixed global batch on 1..n simulated devices (synthetic graph)",
                [
                    "devices",
                    "steps/s",
                    "triples/s",
                    "entity table / device (MiB)",
                    "state / device (MiB)",
                    "step temporaries / device (MiB)",
                    "BESS bytes/step",
                    "all-gather bytes/step",
                ],
                [
                    [
                        r["devices"],
                        f"{r['steps_per_second']:.1f}",
                        f"{r['triples_per_second']:.0f}",
                        f"{r['entity_table_bytes_per_device'] / 2**20:.2f}",
                        f"{r['state_bytes_per_device'] / 2**20:.2f}",
                        f"{r['temp_bytes_per_device'] / 2**20:.2f}",
                        f"{r['bess_bytes_per_step']:,}",
                        f"{r['all_gather_bytes_per_step']:,}",
                    ]
                    for r in scaling_rows
                ],
                caption=f"{c.scaling.entities:,} entities, DistMult of width {c.scaling.dim}, 1024 triples per step, "
                "64 negatives per triple, sampled softmax, AdamW. The simulated devices share this machine's cores, "
                "so steps/s shows the method's overheads, not a cluster's speed-up.",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- figures


def figures(graphs, results, ensembles, floors, scaling_rows) -> list[Figure]:
    out = [
        Figure(
            "mrr",
            _mrr_figure(graphs, results, ensembles, floors),
            "Filtered test MRR: ours beside the literature and the random floor.",
        )
    ]
    if scaling_rows:
        out.append(
            Figure(
                "scaling",
                _scaling_figure(scaling_rows),
                "Steps/s and per-device memory against the number of simulated devices.",
            )
        )
    return out


def build_report(cfg, graphs, results, ensembles, floors, untrained, equivalence, scaling_rows) -> Report:
    notes = [
        "The paper's experiment (WikiKG90Mv2: 91M entities, an 85-model ensemble, 16 IPUs) cannot run on a CPU "
        "without the data; Nations, Kinships and UMLS run the same method (sharding, balanced blocks, shared "
        "negatives, one all_to_all per step) end to end. Head prediction uses reciprocal relations (a common "
        "protocol; the literature figures come from varied protocols and tuning).",
        "The random floor H_N/N ranks the true answer among all N entities; filtering removes the other known "
        "answers, so even untrained embeddings score above it (the 'untrained' rows: DistMult at initialisation), "
        "most on Nations, whose 14 entities leave few candidates.",
        "Hyperparameters are per scoring function and shared by the three graphs (bess.hyper.*); no per-graph tuning.",
    ]
    metrics = {f"{name}/{model}/test_mrr": info["test"]["mrr"] for (name, model), info in results.items()}
    metrics |= {f"{name}/ensemble/test_mrr": e["mrr"] for name, e in ensembles.items()}
    metrics |= {f"scaling/{r['devices']}/steps_per_second": r["steps_per_second"] for r in scaling_rows}
    return Report(
        "bess",
        "BESS: balanced entity sampling and sharing for knowledge-graph completion",
        measure(cfg, results, ensembles, floors, equivalence, scaling_rows),
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
        ax.axhline(floors[name], color="k", ls="--", lw=1, label="random floor")
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
    whole = rows[0]["entity_table_bytes_per_device"] * rows[0]["devices"]
    plots.curves(
        memory,
        {
            "entity table": (n, [r["entity_table_bytes_per_device"] / 2**20 for r in rows]),
            "table + relations + Adam state": (n, [r["state_bytes_per_device"] / 2**20 for r in rows]),
            "1/n": (n, [whole / k / 2**20 for k in n]),
        },
        xlabel="devices",
        ylabel="MiB per device",
        styles={"table + relations + Adam state": {"marker": "s"}, "1/n": {"color": "k", "ls": ":", "marker": None}},
        logy=True,
    )
    memory.set_xscale("log", base=2)
    return fig


__all__ = ["LITERATURE_MRR", "build_report", "claims", "measure"]

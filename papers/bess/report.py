"""The BESS report: filtered MRR and hits@k of every scoring function on Nations, Kinships and UMLS beside the
literature and the random floor, the ensembles against their members, BESS against the single-device computation,
and scaling over simulated devices (steps/s, memory per device, bytes moved)."""

from __future__ import annotations

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
NAMES = {"transe": "TransE", "distmult": "DistMult", "complex": "ComplEx", "rotate": "RotatE"}


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


def _mrr_figure(graphs, results, ensembles, floors):
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(graphs)
    models = sorted({m for _, m in results}, key=list(NAMES).index)
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        labels = [NAMES[m] for m in models if (name, m) in results] + (["ensemble"] if name in ensembles else [])
        ours = [results[(name, m)]["test"]["mrr"] for m in models if (name, m) in results]
        ours += [ensembles[name]["mrr"]] if name in ensembles else []
        x = np.arange(len(labels))
        ax.bar(x - 0.2, ours, 0.4, label="ours (BESS)")
        lit = [LITERATURE_MRR.get((name, m), np.nan) for m in models if (name, m) in results]
        lit += [np.nan] if name in ensembles else []
        ax.bar(x + 0.2, lit, 0.4, label="literature")
        ax.axhline(floors[name], color="k", ls="--", lw=1, label="random floor")
        ax.set_xticks(x, labels, rotation=30)
        ax.set_ylim(0, 1)
        ax.set_title(name)
        ax.set_ylabel("filtered test MRR")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _scaling_figure(rows):
    import matplotlib.pyplot as plt

    n = [r["devices"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    a.plot(n, [r["steps_per_second"] for r in rows], "o-")
    a.set_xscale("log", base=2)
    a.set_xlabel("devices (simulated on one CPU)")
    a.set_ylabel("training steps/s (fixed global batch)")
    a.grid(alpha=0.3)
    b.plot(n, [r["entity_table_bytes_per_device"] / 2**20 for r in rows], "o-", label="entity table")
    b.plot(n, [r["state_bytes_per_device"] / 2**20 for r in rows], "s-", label="table + relations + Adam state")
    first = rows[0]
    b.plot(n, [first["entity_table_bytes_per_device"] * first["devices"] / k / 2**20 for k in n], "k:", label="1/n")
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_xlabel("devices")
    b.set_ylabel("MiB per device")
    b.legend(fontsize=8)
    b.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def build_report(cfg, graphs, results, ensembles, floors, untrained, equivalence, scaling_rows) -> Report:
    c = cfg.bess
    claims = []
    worst = min(results.items(), key=lambda kv: kv[1]["test"]["mrr"] / floors[kv[0][0]])
    (wname, wmodel), winfo = worst
    claims.append(
        Claim(
            "beats-random-floor",
            f"Every model beats the random floor H_N/N by a wide margin: the smallest ratio of test MRR to the floor "
            f"(at least {WIDE:g}x)",
            None,
            at_least(WIDE),
        ).measured(
            winfo["test"]["mrr"] / floors[wname],
            f"{NAMES[wmodel]} on {wname}: {winfo['test']['mrr']:.3f} vs floor {floors[wname]:.3f}",
        )
    )
    for (name, model), lit in LITERATURE_MRR.items():
        if (name, model) not in results:
            continue
        mrr = results[(name, model)]["test"]["mrr"]
        claims.append(
            Claim(
                f"mrr-{name}-{model}",
                f"{NAMES[model]} on {name}: filtered test MRR within {LITERATURE_SLACK} of the literature, or better",
                lit,
                at_least(round(lit - LITERATURE_SLACK, 6)),
            ).measured(mrr, f"hits@10 {results[(name, model)]['test']['hits@10']:.3f}")
        )
    for name, ens in ensembles.items():
        members = {m: results[(name, m)]["test"]["mrr"] for (g, m) in results if g == name}
        best = max(members, key=members.get)
        chosen = ", ".join(f"{NAMES[m]} x{k}" for m, k in ens["weights"].items())
        claims.append(
            Claim(
                f"ensemble-{name}",
                f"On {name}, an ensemble of the {len(members)} models (members and weights chosen on the validation "
                "split, log-probabilities averaged) beats its best member on the test split: ensemble MRR minus the "
                "best member's",
                None,
                at_least(0.0),
            ).measured(
                ens["mrr"] - members[best], f"{ens['mrr']:.3f} vs {NAMES[best]} {members[best]:.3f}; chose {chosen}"
            )
        )
    worst_err = max(max(v.values()) for v in equivalence.values())
    claims.append(
        Claim(
            "bess-equals-single-device",
            f"BESS on {c.devices} devices equals the single-device computation for the same batch: largest relative "
            "error of loss, scores and gradients over the scoring functions",
            None,
            at_most(EQUIVALENCE_TOL),
        ).measured(worst_err, ", ".join(f"{NAMES[m]} {max(v.values()):.1e}" for m, v in equivalence.items()))
    )
    if scaling_rows:
        base = scaling_rows[0]
        worst_mem = max(
            abs(
                r["entity_table_bytes_per_device"]
                * r["devices"]
                / (base["entity_table_bytes_per_device"] * base["devices"])
                - 1
            )
            for r in scaling_rows
        )
        claims.append(
            Claim(
                "table-memory-1-over-n",
                "Entity-table memory per device falls as 1/n: largest relative deviation of n x (bytes on a "
                "device) from the whole table",
                None,
                at_most(0.01),
            ).measured(worst_mem, " / ".join(_bytes(r["entity_table_bytes_per_device"]) for r in scaling_rows))
        )
        multi = [r for r in scaling_rows if r["devices"] >= 2]
        if multi:
            claims.append(
                Claim(
                    "bess-moves-less",
                    "BESS moves fewer bytes per step than all-gathering the entity table, for every n >= 2",
                    "yes",
                    is_true("BESS bytes < all-gather bytes at every n >= 2"),
                ).measured(
                    all(r["bess_bytes_per_step"] < r["all_gather_bytes_per_step"] for r in multi),
                    ", ".join(
                        f"n={r['devices']}: {_bytes(r['bess_bytes_per_step'])} vs "
                        f"{_bytes(r['all_gather_bytes_per_step'])}"
                        for r in multi
                    ),
                )
            )

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
        rows.append(
            [
                name,
                "ensemble",
                f"{ens['mrr']:.3f}",
                "-",
                f"{ens['hits@1']:.3f}",
                f"{ens['hits@3']:.3f}",
                f"{ens['hits@10']:.3f}",
                "-",
                "-",
                "-",
            ]
        )
    for name in graphs:
        rows.append(
            [
                name,
                "random ranking (H_N/N)",
                f"{floors[name]:.3f}",
                f"{PAPER_FLOOR[name]:.3f}",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
            ]
        )
        u = untrained[name]
        rows.append(
            [
                name,
                "untrained (random embeddings)",
                f"{u['mrr']:.3f}",
                "-",
                f"{u['hits@1']:.3f}",
                f"{u['hits@3']:.3f}",
                f"{u['hits@10']:.3f}",
                "-",
                "-",
                "-",
            ]
        )
    main = Table(
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
    tables = [main]
    if scaling_rows:
        tables.append(
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
    figures = [
        Figure(
            "mrr",
            _mrr_figure(graphs, results, ensembles, floors),
            "Filtered test MRR: ours beside the literature and the random floor.",
        )
    ]
    if scaling_rows:
        figures.append(
            Figure(
                "scaling",
                _scaling_figure(scaling_rows),
                "Steps/s and per-device memory against the number of simulated devices.",
            )
        )
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
        claims,
        tables,
        figures,
        metrics,
        notes,
    )

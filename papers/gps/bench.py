"""Benchmark section "gps": GPS++ training throughput, packed against padded batches (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("gps")
def bench_gps(size: str) -> list[Comparison]:
    """GPS++ training throughput (the small preset) on QM9 molecules: packed batches (8 packs of 60 nodes, 120 edges,
    8 molecules, the paper's limits) against the padded peer (one molecule per slot, padded to QM9's largest
    molecule), both compiled once; seconds per molecule, with the packing efficiency and compilation count."""
    from pathlib import Path

    import numpy as np

    from core.train import fit_seeds
    from papers.gps.batching import PackLimits, assemble, batches, efficiency, fitting, plan
    from papers.gps.cache import featurise_qm9
    from papers.gps.model import preset
    from papers.gps.train import TrainConfig, Trainer

    # tiny: one layer instead of four (compiling the step and the init is most of the section's time)
    count, steps, overrides = by_size(size, tiny=(40, 1, {"layers": 1}), quick=(400, 4, {}), full=(4000, 20, {}))
    index = np.random.default_rng(0).permutation(130_831)[:count]
    graphs = featurise_qm9(np.sort(index), Path("outputs") / "gps" / "memo")  # the runs' store (core.memo)
    cfg = preset("small", **overrides)
    model = "GPS++ small" + "".join(f", {key} {value}" for key, value in overrides.items())
    packed = PackLimits(60, 120, 8)
    padded = PackLimits(int(graphs.num_nodes.max()), int(graphs.num_edges.max()), 1)

    def throughput(limits: PackLimits, packs_per_batch: int) -> tuple[float, dict, int]:
        ok, _ = fitting(graphs, limits)
        packs = plan(graphs, ok, limits, np.random.default_rng(1))
        arrays = assemble(graphs, packs, limits, rng=np.random.default_rng(2), noise=0.01, masking=True)
        data = list(batches(arrays, packs_per_batch, limits))
        tc = TrainConfig(steps=10 * steps, packs_per_batch=packs_per_batch, warmup=1)
        trainer = Trainer(cfg, tc, limits, 6.9, 1.3)
        run = fit_seeds(  # one seed, as the reproduction trains each (vmapped); two untimed steps: compilation, warm-up
            [0],
            trainer.init,
            trainer.step,
            lambda s, k: trainer.item(s, k, data[k % len(data)]),
            steps=2 + steps,
            untimed=2,
            count=lambda item: {"graphs": int(item["batch"]["graph_mask"].sum())},
        )
        return 1 / run.rate("graphs"), efficiency(graphs, packs, limits), trainer.traces

    ours, eff, traces = throughput(packed, 8)
    per_batch = round(8 * eff["graphs_per_pack"])  # the same molecules per step, one per padded slot
    peer, eff_pad, peer_traces = throughput(padded, per_batch)
    return [
        Comparison(
            "gps",
            f"{model} ({count:,} QM9 molecules), one training step per molecule",
            f"packed 60/120/8 x 8 ({1 / ours:.0f} molecules/s)",
            f"padded to {padded.nodes} nodes x {per_batch} ({1 / peer:.0f} molecules/s)",
            ours,
            peer,
            f"node slots used {eff['nodes']:.1%} vs {eff_pad['nodes']:.1%}; compilations {traces} and {peer_traces}",
        )
    ]

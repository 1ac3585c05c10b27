"""BESS scaling at a fixed global batch: training steps/s and per-device memory on 1, 2, 4, 8 (simulated) devices.

The graph is synthetic (uniformly random triples over N entities), large enough that the entity table dominates
memory. The global batch B and the negatives each triple sees (K = n * n_neg) stay fixed as n grows, so the
arithmetic per step is the same at every n and what changes is where the table lives and what moves. Per-device
memory is measured, not modelled: the bytes of device 0's shards of the parameters and optimiser state, and the
compiled step's temporary buffers (XLA's memory analysis, per device under SPMD).
"""

from __future__ import annotations

import jax
import numpy as np

from core.train import fit, init_state, optimizer_step
from papers.bess.bess import BalancedSampler, bytes_per_step, shard_entities
from papers.bess.kg import KGDataset
from papers.bess.losses import Loss
from papers.bess.train import KGEConfig, _compiled_step, init_tables, make_mesh, place_tables


def synthetic_kg(num_entities: int, num_relations: int, num_triples: int, seed: int) -> KGDataset:
    rng = np.random.default_rng([seed, 6])
    t = np.stack(
        [
            rng.integers(0, num_entities, num_triples),
            rng.integers(0, num_relations, num_triples),
            rng.integers(0, num_entities, num_triples),
        ],
        1,
    )
    return KGDataset(
        "synthetic", t, t[:1], t[:1], [str(i) for i in range(num_entities)], [str(i) for i in range(num_relations)]
    )


def _device0_bytes(tree) -> int:
    total = 0
    for leaf in jax.tree.leaves(tree):
        if hasattr(leaf, "addressable_shards"):
            total += leaf.addressable_shards[0].data.nbytes
    return total


def measure(
    n: int,
    *,
    kg: KGDataset,
    model: str = "distmult",
    dim: int = 64,
    batch: int = 1024,
    negatives_per_triple: int = 64,
    steps: int = 30,
    seed: int = 0,
) -> dict:
    """Steps/s and device 0's memory for BESS on n devices (B = `batch`, K = `negatives_per_triple` fixed)."""
    if batch % (n * n) or negatives_per_triple % n:
        raise ValueError(
            f"the batch {batch} must divide into n^2 = {n * n} blocks and the {negatives_per_triple} negatives "
            f"per triple into n = {n} shards"
        )
    cfg = KGEConfig(model=model, dim=dim, loss="softmax", batch=batch, negatives=negatives_per_triple // n, devices=n)
    mesh = make_mesh(n)
    sharding = shard_entities(kg.num_entities, n, seed)
    sampler = BalancedSampler(kg.train, sharding, batch // (n * n), cfg.negatives, seed)
    optimiser, step_fn = _compiled_step(
        mesh, model, float(cfg.gamma), Loss("softmax", num_entities=kg.num_entities), (cfg.lr, 0.0)
    )
    entities, relations = init_tables(cfg, kg.num_entities, kg.num_relations)
    state = init_state(place_tables(mesh, sharding, entities, relations), optimiser)

    analysis = step_fn.lower(state, sampler.sample(0)).compile().memory_analysis()
    temp = int(getattr(analysis, "temp_size_in_bytes", 0)) if analysis is not None else 0
    run = _timed(step_fn, state, sampler, steps, batch)
    table = _device0_bytes(run.state["params"]["entities"])
    moved = bytes_per_step(n, batch // (n * n), cfg.negatives, dim, sharding.size)
    return {
        "devices": n,
        "steps_per_second": run.rate(),
        "triples_per_second": run.rate("triples"),
        "entity_table_bytes_per_device": table,
        "state_bytes_per_device": _device0_bytes(run.state),
        "temp_bytes_per_device": temp,
        "bess_bytes_per_step": moved["bess"],
        "all_gather_bytes_per_step": moved["naive_all_gather"],
        "loss": float(run.history.last("train/loss")),
    }


def _timed(step, state, sampler: BalancedSampler, steps: int, batch: int):
    """`steps` timed training steps after 3 untimed ones (compilation, warm-up), batches sampled ahead so that the
    rate is the device step's."""
    batches = [sampler.sample(s) for s in range(3 + steps)]
    return fit(step, state, batches.__getitem__, steps=3 + steps, untimed=3, count=lambda b: {"triples": batch})


def scaling(
    devices=(1, 2, 4, 8),
    *,
    num_entities: int = 100_000,
    dim: int = 64,
    steps: int = 30,
    seed: int = 0,
    progress_bar=None,
) -> list[dict]:
    kg = synthetic_kg(num_entities, 100, 200_000, seed)
    rows = []
    for n in devices:
        rows.append(measure(n, kg=kg, dim=dim, steps=steps, seed=seed))
        if progress_bar is not None:
            progress_bar.update(1)
    return rows


def single_device_rate(
    kg: KGDataset,
    *,
    model: str = "distmult",
    dim: int = 64,
    batch: int = 1024,
    negatives_per_triple: int = 64,
    steps: int = 30,
    seed: int = 0,
) -> float:
    """Triples/s of the plain single-device step (papers.bess.bess.reference_loss on one dense table, no shard_map,
    no all_to_all) on the batches BESS on 2 devices would draw: the peer of the benchmark."""
    import jax.numpy as jnp
    import optax

    from papers.bess.bess import reference_loss

    n = 2
    cfg = KGEConfig(model=model, dim=dim, batch=batch, negatives=negatives_per_triple // n, devices=n)
    sharding = shard_entities(kg.num_entities, n, seed)
    sampler = BalancedSampler(kg.train, sharding, batch // (n * n), cfg.negatives, seed)
    loss = Loss("softmax", num_entities=kg.num_entities)
    optimiser = optax.adamw(cfg.lr, weight_decay=0.0)
    entities, relations = init_tables(cfg, kg.num_entities, kg.num_relations)

    def mean_loss(p, b):
        return reference_loss(p["entities"], p["relations"], b, model, cfg.gamma, loss)[0] / b.head.size

    state = init_state({"entities": jnp.asarray(entities), "relations": jnp.asarray(relations)}, optimiser)
    return _timed(jax.jit(optimizer_step(mean_loss, optimiser)), state, sampler, steps, batch).rate("triples")


def main(argv=None) -> None:
    """`python -m papers.bess.scaling --devices 1 2 4`: one JSON line with the scaling rows and the single-device
    peer's rate (the benchmark runs this in a process of its own, with simulated devices)."""
    import argparse
    import json

    from core.devices import require_devices

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    require_devices(max(args.devices))
    rows = scaling(tuple(args.devices), num_entities=args.entities, dim=args.dim, steps=args.steps)
    kg = synthetic_kg(args.entities, 100, 200_000, 0)
    peer = single_device_rate(kg, dim=args.dim, steps=args.steps)
    print(json.dumps({"rows": rows, "single_device_triples_per_second": peer}))


if __name__ == "__main__":
    main()

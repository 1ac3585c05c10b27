"""BESS scaling at a fixed global batch: training steps/s, per-device memory and bytes moved on 1, 2, 4, 8 (simulated)
devices.

The graph is synthetic (uniformly random triples over N entities), large enough that the entity table dominates
memory. The global batch B and the negatives each triple sees (K = n * n_neg) stay fixed as n grows, so the
arithmetic per step is the same at every n and what changes is where the table lives and what moves.

Memory and traffic are read from the compiled programs, not modelled:
- per-device memory: XLA's memory analysis of the compiled training step (arguments + outputs + temporaries, per
  device under SPMD). The part that the entity table costs is the increase of the step's arguments and outputs when
  the same step is compiled for twice as many entities (relations and batch do not depend on N). Temporaries are
  reported apart: on small graphs XLA's buffer assignment moves them by a few percent either way as N changes;
- bytes moved: every collective of the compiled step (all-to-all, all-gather, reduce-scatter, all-reduce) with its
  per-device result shape from the HLO text, counted as the bytes a device receives from the others: (n-1)/n of an
  all-to-all's or all-gather's result, (n-1) times a reduce-scatter's result, 2(n-1)/n of an all-reduce's (ring).
  The same is read from the compiled all-gather alternative (papers.bess.bess.all_gather_loss_fn).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import optax
from jax.sharding import NamedSharding

from core.train import fit, init_state, optimizer_step
from papers.bess.bess import BalancedSampler, all_gather_loss_fn, bytes_per_step, shard_entities
from papers.bess.kg import KGDataset
from papers.bess.losses import Loss
from papers.bess.train import KGEConfig, compiled_step, init_tables, make_mesh, place_tables


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


# ---------------------------------------------------------------------------------------------- the compiled program

_ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2, "f32": 4, "s32": 4, "u32": 4}
_ITEMSIZE |= {"f64": 8, "s64": 8, "u64": 8, "c64": 8, "c128": 16}
_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = (?P<shape>\([^)]*\)|\w+\[[\d,]*\]\S*) "
    r"(?P<op>all-to-all|all-gather|reduce-scatter|all-reduce|collective-permute)(?:-start)?\((?P<rest>.*)$"
)
_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]")
_GROUP = re.compile(r"replica_groups=\{\{([\d,]*)\}")
COLLECTIVES = ("all-to-all", "all-gather", "reduce-scatter", "all-reduce", "collective-permute")


def _shape_bytes(shape: str) -> int:
    total = 0
    for dtype, dims in _ARRAY.findall(shape):
        if dtype not in _ITEMSIZE:
            raise ValueError(f"unknown HLO element type {dtype!r} in {shape!r}")
        total += _ITEMSIZE[dtype] * int(np.prod([int(d) for d in dims.split(",") if d], dtype=np.int64))
    return total


def collective_bytes(hlo_text: str, devices: int) -> dict[str, int]:
    """Bytes one device receives from the others per execution of a compiled SPMD program, by collective kind
    (keys of COLLECTIVES, and "total"), from the result shapes of its collectives in the HLO text. A group of g
    devices: all-to-all and all-gather deliver (g-1)/g of their result from the others, reduce-scatter (g-1) times
    its result, all-reduce 2(g-1)/g of it (a ring), collective-permute its whole result."""
    out = dict.fromkeys(COLLECTIVES, 0)
    for line in hlo_text.splitlines():
        m = _COLLECTIVE.match(line)
        if m is None:
            continue
        group = _GROUP.search(m["rest"])
        g = len(group[1].split(",")) if group and group[1] else devices
        size = _shape_bytes(m["shape"])
        share = {
            "all-to-all": (g - 1) / g,
            "all-gather": (g - 1) / g,
            "reduce-scatter": g - 1,
            "all-reduce": 2 * (g - 1) / g,
            "collective-permute": 1,
        }[m["op"]]
        out[m["op"]] += round(size * share)
    out["total"] = sum(out[k] for k in COLLECTIVES)
    return out


def device_memory(compiled) -> dict[str, int]:
    """XLA's per-device memory analysis of a compiled program: arguments, outputs, temporaries, and their sum less
    what outputs alias (the program's footprint)."""
    m = compiled.memory_analysis()
    if m is None:
        raise RuntimeError("this backend gives no memory analysis of compiled programs")
    parts = {k: int(getattr(m, f"{k}_size_in_bytes")) for k in ("argument", "output", "temp", "alias")}
    return {**parts, "total": parts["argument"] + parts["output"] + parts["temp"] - parts["alias"]}


def _with_entities(state, size: int):
    """Abstract copy of a training state whose entity shards (and their optimiser moments) hold `size` rows."""

    def leaf(x):
        shape = (x.shape[0], size, *x.shape[2:]) if x.ndim == 3 else x.shape
        placed = x.sharding if isinstance(x.sharding, NamedSharding) else None  # not the uncommitted step count
        return jax.ShapeDtypeStruct(shape, x.dtype, sharding=placed)

    return jax.tree.map(leaf, state)


def _step(mesh, model: str, gamma: float, loss: Loss, optimiser, scheme):
    objective = scheme(mesh, model, gamma, loss)

    def mean_loss(params, arrays):
        return objective(params["entities"], params["relations"], arrays)[0] / arrays.head_row.size

    return jax.jit(optimizer_step(mean_loss, optimiser))


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
    """Steps/s, per-device memory and bytes moved for BESS on n devices (B = `batch`, K = `negatives_per_triple`
    fixed), and the bytes the all-gather alternative would move, both from the compiled programs."""
    if batch % (n * n) or negatives_per_triple % n:
        raise ValueError(
            f"the batch {batch} must divide into n^2 = {n * n} blocks and the {negatives_per_triple} negatives "
            f"per triple into n = {n} shards"
        )
    cfg = KGEConfig(model=model, dim=dim, loss="softmax", batch=batch, negatives=negatives_per_triple // n, devices=n)
    mesh = make_mesh(n)
    sharding = shard_entities(kg.num_entities, n, seed)
    sampler = BalancedSampler(kg.train, sharding, batch // (n * n), cfg.negatives, seed)
    loss = Loss("softmax", num_entities=kg.num_entities)
    optimiser, step_fn = compiled_step(mesh, model, float(cfg.gamma), loss, (cfg.lr, 0.0))
    entities, relations = init_tables(cfg, kg.num_entities, kg.num_relations)
    state = init_state(place_tables(mesh, sharding, entities, relations), optimiser)
    first = sampler.sample(0)

    compiled = step_fn.lower(state, first).compile()
    memory = device_memory(compiled)
    doubled = device_memory(step_fn.lower(_with_entities(state, 2 * sharding.size), first).compile())
    moved = collective_bytes(compiled.as_text(), n)
    gather = _step(mesh, model, float(cfg.gamma), loss, optimiser, all_gather_loss_fn).lower(state, first).compile()
    gathered = collective_bytes(gather.as_text(), n)
    run = _timed(step_fn, state, sampler, steps, batch)
    return {
        "devices": n,
        "steps_per_second": run.rate(),
        "triples_per_second": run.rate("triples"),
        "entity_table_bytes_per_device": _device0_bytes(run.state["params"]["entities"]),
        "state_bytes_per_device": _device0_bytes(run.state),
        "step_bytes_per_device": memory["total"],
        "temp_bytes_per_device": memory["temp"],
        # what N more entities cost a device: their shards and optimiser moments, in and out of the step
        "entity_bytes_per_device": sum(doubled[k] - memory[k] for k in ("argument", "output")),
        "entity_temp_bytes_per_device": doubled["temp"] - memory["temp"],
        "entities_measured": sharding.size * n,
        "bess_bytes_per_step": n * moved["total"],
        "bess_all_to_all_bytes_per_step": n * moved["all-to-all"],
        "all_gather_bytes_per_step": n * gathered["total"],
        "analytic_all_to_all_bytes_per_step": bytes_per_step(n, batch // (n * n), cfg.negatives, dim, sharding.size)[
            "bess"
        ],
        "all_gather_temp_bytes_per_device": device_memory(gather)["temp"],
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

"""One process of test_distributed's run: joins the runtime from the launcher's environment variables, runs BESS's
sharded step over the global mesh of every process's devices, and prints one JSON line with its relative errors
against the single-device reference computed here. Run from the repository root:
`python -m tests.core.distributed_worker`."""

from __future__ import annotations

import json
from functools import partial

from core.devices import initialize_distributed, require_devices

DEVICES = 4  # over all processes
CASES = (("rotate", "log_sigmoid"), ("complex", "softmax"))  # a distance scorer and a bilinear one


def relative_error(a, b) -> float:
    """As papers.bess.run.check_equivalence measures it."""
    import numpy as np

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))


def errors(mesh, model: str, objective: str, kg, seed: int = 0) -> dict[str, float]:
    """BESS on `mesh` against the reference on this process's first device, for one balanced batch."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental.multihost_utils import process_allgather
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from papers.bess.bess import AXIS, BalancedSampler, bess_loss_fn, reference_loss, shard_entities
    from papers.bess.losses import Loss
    from papers.bess.scoring import relation_width

    n, dim, gamma = mesh.size, 8, 6.0
    loss = Loss(objective, num_entities=kg.num_entities)
    rng = np.random.default_rng(seed)  # the same seed on every process, so the same host data
    E = rng.normal(size=(kg.num_entities, dim)).astype(np.float32)
    R = rng.normal(size=(kg.num_relations, relation_width(model, dim))).astype(np.float32)
    sharding = shard_entities(kg.num_entities, n, seed=1)
    batch = BalancedSampler(kg.train, sharding, b=3, n_neg=5, seed=2).sample(0)

    # every process holds the whole host array and keeps the shards of its own devices
    replicated = NamedSharding(mesh, P())
    shards = jax.device_put(sharding.to_shards(E), NamedSharding(mesh, P(AXIS)))
    global_batch = jax.tree.map(lambda x: jax.device_put(x, replicated), batch)
    bess = jax.jit(jax.value_and_grad(bess_loss_fn(mesh, model, gamma, loss), argnums=(0, 1), has_aux=True))
    (value, (pos, neg)), (dE, dR) = bess(shards, jax.device_put(R, replicated), global_batch)
    value, pos, neg, dE, dR = (np.asarray(x) for x in process_allgather((value, pos, neg, dE, dR), tiled=True))

    local = jax.local_devices()[0]
    ref = jax.jit(
        jax.value_and_grad(
            partial(reference_loss, batch=batch, model=model, gamma=gamma, loss=loss), argnums=(0, 1), has_aux=True
        )
    )
    (rvalue, (rpos, rneg)), (rdE, rdR) = ref(jax.device_put(jnp.asarray(E), local), jax.device_put(R, local))
    return {
        "loss": relative_error(value, rvalue),
        "scores": max(relative_error(pos, rpos), relative_error(neg, rneg)),
        "d_entities": relative_error(sharding.to_global(dE), rdE),
        "d_relations": relative_error(dR, rdR),
    }


def main() -> None:
    joined = initialize_distributed(timeout_s=60)
    assert initialize_distributed(), "a second call must report the runtime joined"
    devices = require_devices(DEVICES)

    import jax
    import numpy as np
    from jax.sharding import Mesh

    from papers.bess.bess import AXIS
    from papers.bess.kg import load_builtin

    mesh = Mesh(np.array(devices), (AXIS,))
    kg = load_builtin("nations")
    out = {
        "joined": joined,
        "process": jax.process_index(),
        "processes": jax.process_count(),
        "local_devices": jax.local_device_count(),
        "mesh_processes": sorted({d.process_index for d in devices}),
        "errors": {f"{model}/{objective}": errors(mesh, model, objective, kg) for model, objective in CASES},
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

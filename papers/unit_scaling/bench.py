"""Benchmark section "unit_scaling": the unit-scaled LM's training step against its regular twin (run by
scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("unit_scaling")
def bench_unit_scaling(size: str) -> list[Comparison]:
    """Training-step time of the unit-scaled transformer LM against its regular twin (same size and numerics), each
    step being core.train's shared optimizer step (AdamW), jitted."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from core.bench import time_call
    from core.nn import Ops, TransformerLM
    from core.train import init_state, optimizer_step

    d_model, depth, seq, batch = by_size(size, tiny=(16, 1, 8, 2), quick=(32, 2, 32, 8), full=(64, 2, 64, 16))
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 80, (batch, seq + 1)))
    size = f"d_model {d_model}, depth {depth}, seq {seq}, batch {batch}"

    def step_time(scaling: str, fwd: str | None, bwd: str | None) -> float:
        model = TransformerLM(
            vocab=80,
            d_model=d_model,
            depth=depth,
            heads=4,
            seq_len=seq,
            ops=Ops(scaling=scaling, fwd_fmt=fwd, bwd_fmt=bwd),
        )
        params = model.init(jax.random.key(0), ids[:, :-1])
        opt = optax.adamw(1e-3)

        def loss_fn(params, windows):
            return model.apply(params, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

        train_step = jax.jit(optimizer_step(loss_fn, opt))
        state = init_state(params, opt)
        return time_call(lambda: train_step(state, ids))

    rows = []
    for label, fwd, bwd in (("FP32", None, None), ("FP8 (E4M3/E5M2 matmul casts)", "e4m3", "e5m2")):
        rows.append(
            Comparison(
                "unit_scaling",
                f"train step, {label}",
                "unit-scaled",
                "regular",
                step_time("unit", fwd, bwd),
                step_time("regular", fwd, bwd),
                size,
            )
        )
    return rows

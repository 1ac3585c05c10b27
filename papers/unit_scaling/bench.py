"""Benchmark section "unit_scaling": the unit-scaled LM's training step against its regular twin (run by
scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("unit_scaling")
def bench_unit_scaling(size: str) -> list[Comparison]:
    """Training-step time of the unit-scaled transformer LM against its regular twin with the same numerics (the
    reproduction's FP32, FP16 and FP8 arms), each step being core.train's shared optimizer step (AdamW), jitted;
    both timed in the same interleaved rounds (median of 5)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from core.bench import time_rounds
    from core.nn import TransformerLM
    from core.numerics import stochastic_rounding
    from core.train import init_state, optimizer_step
    from papers.unit_scaling.arms import ARMS
    from papers.unit_scaling.train import formats, parametrization

    d_model, depth, seq, batch = by_size(size, tiny=(16, 1, 8, 2), quick=(32, 2, 32, 8), full=(64, 2, 64, 16))
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 80, (batch, seq + 1)))
    repeat = 2 if size == "tiny" else 5
    shape = f"d_model {d_model}, depth {depth}, seq {seq}, batch {batch}; median of {repeat} interleaved rounds"

    def step(arm: str):
        model = TransformerLM(
            vocab=80,
            d_model=d_model,
            depth=depth,
            heads=4,
            seq_len=seq,
            parametrization=parametrization(ARMS[arm]),
            formats=formats(ARMS[arm]),
        )
        with stochastic_rounding(jax.random.key(0)):
            params = model.init(jax.random.key(0), ids[:, :-1])
        opt = optax.adamw(1e-3)

        def loss_fn(params, windows):
            with stochastic_rounding(jax.random.key(1)):
                return model.apply(params, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

        train_step = jax.jit(optimizer_step(loss_fn, opt))
        state = init_state(params, opt)
        return lambda: train_step(state, ids)

    rows = []
    for label, unit, regular in (
        ("FP32", "fp32_unit", "fp32_regular"),
        ("FP16 (every op cast)", "fp16_unit", "fp16_regular"),
        ("FP8 (E4M3/E5M2 matmul casts, stochastic, saturating)", "fp8_unit", "fp8_regular"),
    ):
        rounds = time_rounds({"unit": step(unit), "regular": step(regular)}, repeat=repeat)
        rows.append(
            Comparison(
                "unit_scaling",
                f"train step, {label}",
                "unit-scaled",
                "regular",
                float(np.median(rounds["unit"])),
                float(np.median(rounds["regular"])),
                shape,
            )
        )
    return rows

"""Benchmark section "fp8_llm": the LM's training step with simulated FP8 linear layers against FP32, and amax
scaling against given biases (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("fp8_llm")
def bench_fp8_llm(size: str) -> list[Comparison]:
    """Training-step time of the transformer LM with simulated FP8 linear layers (amax scaling) against the same
    model in FP32, and the cost of computing the amaxes: the amax policy against cscale, which casts the same
    tensors with biases it does not have to compute (d_model 128, depth 4, 16 x 64 characters). Each arm trains with
    the paper's own step (papers.fp8_llm.train.fp8_step), jitted; the median step time of interleaved warm rounds."""

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from core.bench import time_rounds
    from core.nn.fp8 import split_fp8
    from papers.fp8_llm.train import SizeConfig, build_model, fp8_step

    (d_model, depth, batch, seq), steps = by_size(
        size, tiny=((32, 1, 4, 16), 2), quick=((128, 4, 16, 64), 5), full=((128, 4, 16, 64), 21)
    )
    model_size = SizeConfig("l", d_model, depth, 4)
    windows = jnp.asarray(np.random.default_rng(0).integers(0, 80, (batch, seq + 1)), jnp.int32)

    def training_step(arm: str):
        """One training step of `arm` per call, each call continuing from the last state."""
        model = build_model(model_size, 80, seq, arm)
        params, meta, probes = split_fp8(model.init(jax.random.key(0), windows[:1, :-1]))
        opt = optax.adamw(1e-3)
        step = jax.jit(fp8_step(model, probes, opt, None if arm == "fp32" else arm))
        state = [(params, opt.init(params), meta)]

        def run():
            state[0], metrics = step(state[0], windows)
            return metrics["loss"]

        return run

    # warmed (compiled) first; rounds interleaved so that load from other work falls on every arm alike
    rounds = time_rounds(
        {arm: training_step(arm) for arm in ("fp32", "amax", "cscale")}, repeat=steps, min_seconds=0.0, warmup=1
    )
    fp32, amax_t, cscale_t = (float(np.median(rounds[arm])) for arm in ("fp32", "amax", "cscale"))
    what = f"LM training step (d_model {d_model}, depth {depth}, {batch} x {seq} characters)"
    return [
        Comparison(
            "fp8_llm",
            what,
            "FP8 simulated, amax scaling",
            "FP32",
            amax_t,
            fp32,
            f"simulation overhead {amax_t / fp32 - 1:+.0%}; median of {steps} interleaved steps",
        ),
        Comparison(
            "fp8_llm",
            what,
            "FP8 amax (biases computed from each tensor)",
            "FP8 cscale (biases given)",
            amax_t,
            cscale_t,
            f"amax computation {amax_t - cscale_t:+.4f} s per step; median of {steps} interleaved steps",
        ),
    ]

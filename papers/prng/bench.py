"""Benchmark section "prng": xoroshiro128aox's output rate against numpy's bit generators (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("prng")
def bench_prng(size: str) -> list[Comparison]:
    """Raw 64-bit output rate of xoroshiro128aox (numpy and jitted JAX, many streams) vs numpy's PCG64 and Philox."""
    import jax
    import numpy as np

    from core.bench import time_call
    from core.random import aox_generate
    from core.random import jax_xoroshiro as jx

    # many streams, few steps per call: the IPU's regime (a stream per tile and worker), and the fastest layout
    streams, steps = by_size(size, tiny=(1 << 10, 4), quick=(1 << 16, 4), full=(1 << 20, 4))
    n = streams * steps
    rng = np.random.default_rng(0)
    s0 = rng.integers(1, 2**63, streams, dtype=np.uint64)
    s1 = rng.integers(1, 2**63, streams, dtype=np.uint64)
    state = jx.to_jax_state(s0, s1)
    size = f"{n:,} outputs ({streams:,} streams x {steps})"
    t_np = time_call(lambda: aox_generate(s0, s1, steps))
    t_jax = time_call(lambda: jax.block_until_ready(jx.generate(state, steps, "aox", steps_major=True)))
    rows = []
    for peer, bitgen in (
        ("numpy PCG64 random_raw", np.random.PCG64(0)),
        ("numpy Philox random_raw", np.random.Philox(0)),
    ):
        t_peer = time_call(lambda b=bitgen: b.random_raw(n))
        rows.append(Comparison("prng", "raw outputs", "aox numpy (streams)", peer, t_np, t_peer, size))
        rows.append(Comparison("prng", "raw outputs", "aox JAX jit (streams)", peer, t_jax, t_peer, size))
    return rows

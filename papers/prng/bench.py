"""Benchmark section "prng": xoroshiro128aox's output rate against numpy's bit generators, and as a JAX PRNG
implementation (core.random.jax_prng) against JAX's threefry2x32 and rbg keys (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("prng")
def bench_prng(size: str) -> list[Comparison]:
    """Raw 64-bit output rate of xoroshiro128aox (numpy and jitted JAX, many streams) vs numpy's PCG64 and Philox;
    then jax.random through xoroshiro128aox keys vs threefry2x32 and rbg keys (jax_random_rows)."""
    import jax
    import numpy as np

    from core.bench import time_call
    from core.random import aox_generate
    from core.random import jax_xoroshiro as jx

    # many streams, few steps per call: the IPU's regime (a stream per tile and worker), and the fastest layout
    draw = by_size(size, tiny=1 << 12, quick=1 << 20, full=1 << 24)  # values per jax.random call
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
    return rows + jax_random_rows(draw)


def jax_random_rows(n: int) -> list[Comparison]:
    """jax.random through xoroshiro128aox keys against JAX's threefry2x32 (the default) and rbg keys: jitted, warmed,
    their rounds interleaved (core.bench.time_rounds) and the median taken. A draw of n values, and small draws
    (1,000 values, a split into 1,000 keys) where the lanes' set-up and the key derivation dominate."""
    import statistics

    import jax
    import jax.numpy as jnp

    from core.bench import time_rounds
    from core.random import jax_prng

    ours = "xoroshiro128aox (core.random.jax_prng)"
    keys = {
        ours: jax_prng.key(0),
        "threefry2x32 (JAX default)": jax.random.key(0),
        "rbg (JAX)": jax.random.key(0, impl="rbg"),
    }
    draws = [
        ("jax.random.bits uint32", jax.jit(lambda k: jax.random.bits(k, (n,), jnp.uint32)), f"{n:,} values"),
        ("jax.random.uniform float32", jax.jit(lambda k: jax.random.uniform(k, (n,), jnp.float32)), f"{n:,} values"),
        ("jax.random.bits uint32", jax.jit(lambda k: jax.random.bits(k, (1000,), jnp.uint32)), "1,000 values"),
        ("jax.random.split", jax.jit(lambda k: jax.random.split(k, 1000)), "1,000 keys"),
    ]
    rows = []
    for name, fn, size in draws:
        rounds = time_rounds({impl: (lambda k=k, fn=fn: fn(k)) for impl, k in keys.items()})
        seconds = {impl: statistics.median(r) for impl, r in rounds.items()}
        for peer in list(keys)[1:]:
            rows.append(Comparison("prng", name, ours, peer, seconds[ours], seconds[peer], size))
    return rows

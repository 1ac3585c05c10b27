"""The PRNG run: the battery (papers.prng.battery) on every configured generator's stream of every seed, the
optional dieharder subset, the battery on streams drawn through jax.random from derived xoroshiro128aox keys
(papers.prng.jax_streams, the first seed), and the cells of both generators' netlists under every technology mapping
(papers.prng.cost). Everything the claims, tables and facts read is in the Results it returns
(papers/prng/results.py); the batteries are short, so nothing is checkpointed."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np

from core.context import RunContext
from core.progress import progress
from papers.prng import battery, cost
from papers.prng.config import Config
from papers.prng.paper import DIEHARDER_TESTS
from papers.prng.results import Battery, Results, Stream


def raw_outputs(generator: str, seed: int, n: int) -> np.ndarray:
    """n consecutive 64-bit outputs of one stream of `generator`, seeded from `seed` by numpy's SeedSequence."""
    if generator in ("pcg64", "philox"):
        bitgen = {"pcg64": np.random.PCG64, "philox": np.random.Philox}[generator](seed)
        return bitgen.random_raw(n).astype(np.uint64)
    from core.random.jax_xoroshiro import generate, join_words, to_jax_state

    s0, s1 = np.random.SeedSequence(seed).generate_state(2, np.uint64)
    out, _ = generate(to_jax_state(np.array([s0]), np.array([s1])), n, generator)
    return join_words(out)[0]


def run_dieharder(generator: str, seed: int) -> dict[int, float] | None:
    """p-values of the dieharder subset on the raw stream (`python -m core.random` piped in), or None if absent."""
    if shutil.which("dieharder") is None:
        return None
    results = {}
    for test in DIEHARDER_TESTS:
        stream = subprocess.Popen(
            [sys.executable, "-m", "core.random", "--generator", generator, "--seed", str(seed)],
            stdout=subprocess.PIPE,
        )
        out = subprocess.run(
            ["dieharder", "-g", "200", "-d", str(test), "-c", ","],
            stdin=stream.stdout,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        stream.kill()
        for line in out.stdout.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 6 and parts[0] and parts[0][0].isalpha() and _is_float(parts[-2]):
                results[test] = float(parts[-2])
    return results


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def battery_results(words: np.ndarray, c: Config) -> Battery:
    """The battery on one stream of uint64 words (papers.prng.battery): p-values per bit or per stream."""
    planes = battery.bit_planes(words)
    rank_p, _ = battery.matrix_rank_test(planes, int(c.rank_size))  # the mean rank deficit is not stored
    lc_p, lc = battery.linear_complexity_test(planes, int(c.lc_bits))
    return Battery(
        rank_p=rank_p,
        lc_p=lc_p,
        lc=lc,
        hw_p=battery.hamming_dependency_test(words),
        monobit_p=battery.monobit_test(planes),
        byte_p=battery.byte_frequency_test(words),
    )


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.prng
    streams: dict[str, list[Stream]] = {}
    for gen in c.generators:
        for seed in progress(list(c.seeds), desc=f"battery {gen}"):
            result = battery_results(raw_outputs(gen, int(seed), int(c.outputs)), c)
            dieharder = run_dieharder(gen, int(seed)) if c.dieharder else None
            streams.setdefault(gen, []).append(Stream(int(seed), result, dieharder))
    # the battery on streams drawn through jax.random from derived xoroshiro128aox keys (a table, not a claim): the
    # first seed only, which keeps the default run's extra time under a minute
    per_construction: dict[str, Battery] = {}
    jax_seed = int(c.seeds[0]) if c.seeds else None
    if jax_seed is not None:
        from papers.prng import jax_streams  # imports jax: only when a run needs it

        for construction in progress(list(jax_streams.CONSTRUCTIONS), desc="battery on jax.random streams"):
            words = jax_streams.construction_stream(construction, jax_seed, int(c.outputs))
            per_construction[construction] = battery_results(words, c)
    return Results(
        streams=streams,
        jax_streams=per_construction,
        jax_seed=jax_seed,
        cells=cost.mapping_cells(),
        gates=cost.output_gates(),
    )


IPU_OUTPUTS = 16  # outputs per stream of the costed step (the cost per output is flat in it: a loop of steps)


def ipu_steps(cfg) -> list:
    """The generator's step for the simulated IPU (ipu_model.steps): core.random.jax_xoroshiro.generate, the JAX
    form of xoroshiro128aox (and of xoroshiro128+ where the run tests it) on 64-bit words as pairs of uint32, one
    stream per worker of the device's tiles, IPU_OUTPUTS outputs each. The IPU draws these from its hardware
    generator; this costs the algorithm run as integer vertices (what a JAX program would cost there)."""
    import functools

    import jax
    import jax.numpy as jnp

    from core.random import jax_xoroshiro
    from ipu_model import device_from_config
    from ipu_model.steps import Step

    device = device_from_config(cfg.device)
    streams = (device.tiles, device.workers)
    word = (jax.ShapeDtypeStruct(streams, jnp.uint32),) * 2
    steps = []
    for kind in (k for k in ("aox", "plus") if k in cfg.prng.generators):
        steps.append(
            Step(
                f"xoroshiro128{kind}: {IPU_OUTPUTS} outputs a stream",
                functools.partial(jax_xoroshiro.generate, n=IPU_OUTPUTS, kind=kind, steps_major=True),
                ((word, word),),
                f"{streams[0]} x {streams[1]} streams (one a worker), {IPU_OUTPUTS} 64-bit outputs each "
                f"({streams[0] * streams[1] * IPU_OUTPUTS:,} outputs)",
            )
        )
    return steps

"""A Fast Hardware Pseudorandom Number Generator Based on xoroshiro128 (Hanlon & Felix, Graphcore 2022).

Statistical findings of the paper on CPU scale: xoroshiro128+ fails binary-rank and linear-complexity tests on its
low bits (they are linear), xoroshiro128aox passes them on every bit; plus a Hamming-weight dependency test (with
the sample it would need to see the paper's gjrand z9 finding), the frequency tests, an optional dieharder subset,
and the hardware-cost argument (cells of both whole generators from netlists, papers.prng.cost). Beside the claims, a
table: the battery on streams drawn through jax.random from split / folded-in xoroshiro128aox keys
(core.random.jax_prng, papers.prng.jax_streams).

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `prng` config section),
`raw_outputs` (a generator's stream), `battery_results` (the battery on one stream), `run_dieharder` (the optional
battery subset); papers.prng.battery holds the tests. The generators themselves are core.random.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np

from core.config import check_choice, check_range
from core.progress import progress
from core.report import Report
from core.runner import RunContext
from papers.prng import battery
from papers.prng.claims import claims
from papers.prng.report import DIEHARDER_TESTS, LABELS, build_report

GENERATORS = tuple(LABELS)


@dataclass
class Config:
    generators: list[str] = field(default_factory=lambda: list(GENERATORS))
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])
    outputs: int = 1 << 20  # 64-bit outputs per (generator, seed)
    rank_size: int = 256  # n of the n x n matrices of the rank test
    lc_bits: int = 1000  # sequence length of the linear-complexity test
    dieharder: bool = False  # run the subset when `dieharder` is installed; skipped with a notice otherwise

    def __post_init__(self) -> None:
        for g in self.generators:
            check_choice("generators", g, GENERATORS)
        check_range("rank_size", self.rank_size, ge=8, le=1024)
        check_range("lc_bits", self.lc_bits, ge=64, le=100_000)
        check_range("outputs", self.outputs, ge=self.rank_size**2, le=1 << 28)
        for s in self.seeds:
            check_range("seeds", s, ge=0, lt=2**63)


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


def battery_results(words: np.ndarray, c: Config) -> dict:
    """The battery on one stream of uint64 words (papers.prng.battery): p-values per bit or per stream."""
    planes = battery.bit_planes(words)
    rank_p, deficit = battery.matrix_rank_test(planes, int(c.rank_size))
    lc_p, lc = battery.linear_complexity_test(planes, int(c.lc_bits))
    return {
        "rank_p": rank_p,
        "rank_deficit": deficit,
        "lc_p": lc_p,
        "lc": lc,
        "hw_p": battery.hamming_dependency_test(words),
        "monobit_p": battery.monobit_test(planes),
        "byte_p": battery.byte_frequency_test(words),
    }


def reproduce(cfg, run: RunContext) -> Report:  # the batteries are short: nothing is checkpointed
    c = cfg.prng
    per_gen = {}
    for gen in c.generators:
        for seed in progress(list(c.seeds), desc=f"battery {gen}"):
            results = battery_results(raw_outputs(gen, int(seed), int(c.outputs)), c)
            results["dieharder"] = run_dieharder(gen, int(seed)) if c.dieharder else None
            per_gen.setdefault(gen, []).append(results)
    # the battery on streams drawn through jax.random from derived xoroshiro128aox keys (a table, not a claim): the
    # first seed only, which keeps the default run's extra time under a minute
    from papers.prng import jax_streams  # imports jax: only when a run needs it

    per_construction = {}
    if c.seeds:
        for construction in progress(list(jax_streams.CONSTRUCTIONS), desc="battery on jax.random streams"):
            words = jax_streams.construction_stream(construction, int(c.seeds[0]), int(c.outputs))
            per_construction[construction] = battery_results(words, c)
    return build_report(cfg, per_gen, per_construction)


__all__ = ["GENERATORS", "Config", "battery_results", "claims", "raw_outputs", "reproduce", "run_dieharder"]

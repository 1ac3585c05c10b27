"""The PRNG report: the tables (failures per generator and seed, the cells of the two generators under each
technology mapping, dieharder's p-values when it ran, the battery on jax.random streams from derived keys) around the
claims of papers/prng/claims.py. No figures: the paper's findings are pass/fail counts and cell counts."""

from __future__ import annotations

import numpy as np

from core.report import Report, Table
from papers.prng import battery
from papers.prng.claims import PAPER_CELL_RATIO, PAPER_CELLS, facts, measure
from papers.prng.cost import MAPPINGS, cell_ratios, generator_cost

LABELS = {"aox": "xoroshiro128aox", "plus": "xoroshiro128+", "pcg64": "numpy PCG64", "philox": "numpy Philox"}
# a short, documented dieharder subset (test numbers of `dieharder -l`): birthdays, 32x32 rank, 6x8 rank, bitstream
# (papers/prng/REFERENCES.md, DIEHARDER)
DIEHARDER_TESTS = (0, 2, 3, 4)


# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, per_gen: dict[str, list[dict]]) -> list[Table]:
    fail = battery.FAIL_P
    rows = []
    for gen, results in per_gen.items():
        for seed, r in zip(cfg.prng.seeds, results, strict=True):
            rows.append(
                [
                    LABELS[gen],
                    int(seed),
                    int((r["rank_p"] < fail).sum()),
                    int((r["lc_p"] < fail).sum()),
                    int(r["hw_p"] < fail),
                    int((r["monobit_p"] < fail).sum()),
                    int(r["byte_p"] < fail),
                    ", ".join(str(b) for b in np.flatnonzero((r["rank_p"] < fail) | (r["lc_p"] < fail))[:8]) or "-",
                    int(r["lc"].min()),
                ]
            )
    failures = Table(
        "failures",
        "Failures per generator and seed (p < 1e-4)",
        [
            "generator",
            "seed",
            "rank: bits failing",
            "linear complexity: bits failing",
            "Hamming weight",
            "monobit: bits failing",
            "byte frequency",
            "failing bits",
            "min linear complexity",
        ],
        rows,
    )
    ks, ripple = cell_ratios(), cell_ratios("ripple")
    cost = Table(
        "cost",
        "Cells of the two generators under each technology mapping of our netlists, beside the paper's",
        [
            "mapping",
            "state update (both)",
            "AOX output",
            "adder output (Kogge-Stone)",
            "AOX / xoroshiro128+ (whole)",
            "with a ripple-carry adder",
        ],
        [
            [
                str(m),
                generator_cost("aox", m).state,
                generator_cost("aox", m).output,
                generator_cost("plus", m).output,
                f"{ks[m]:.3f}",
                f"{ripple[m]:.3f}",
            ]
            for m in MAPPINGS
        ]
        + [
            [
                "paper: synthesised, placed and routed (7 nm, 1 GHz)",
                PAPER_CELLS["aox"]["state"],
                PAPER_CELLS["aox"]["output"],
                PAPER_CELLS["plus"]["output"],
                f"{PAPER_CELL_RATIO:.3f}",
                "-",
            ]
        ],
        caption="Cells: library cells (flip-flops, two-input gates, and AO21 / AO22 / XOR3 where complex cells "
        "are used), one each; rotations and shifts are wiring; buffers and drive strengths are not modelled. "
        "The state update includes its 128 flip-flops.",
    )
    out = [failures, cost]
    diehard = [(g, i, r["dieharder"]) for g, rs in per_gen.items() for i, r in enumerate(rs)]
    if any(d is not None for _, _, d in diehard):
        out.append(
            Table(
                "dieharder",
                "dieharder p-values (subset)",
                ["generator", "seed index", *(f"test {t}" for t in DIEHARDER_TESTS)],
                [[LABELS[g], i, *(d.get(t, "-") for t in DIEHARDER_TESTS)] for g, i, d in diehard if d],
            )
        )
    return out


def jax_streams_table(cfg, per_construction: dict[str, dict]) -> Table:
    """The battery on the jax.random streams of papers.prng.jax_streams: the smallest p-value of each test (over the
    64 bits for the per-bit tests) and how many of the battery's 194 tests fail."""
    from papers.prng.jax_streams import CONSTRUCTIONS

    fail, rows = battery.FAIL_P, []
    for construction, r in per_construction.items():
        per_bit = np.concatenate([r["rank_p"], r["lc_p"], r["monobit_p"]])
        failing = int((per_bit < fail).sum()) + int(r["hw_p"] < fail) + int(r["byte_p"] < fail)
        rows.append(
            [
                CONSTRUCTIONS[construction],
                float(r["rank_p"].min()),
                float(r["lc_p"].min()),
                float(r["hw_p"]),
                float(r["monobit_p"].min()),
                float(r["byte_p"]),
                failing,
            ]
        )
    return Table(
        "jax_streams",
        "The battery on streams drawn through jax.random.bits from derived xoroshiro128aox keys (core.random.jax_prng)",
        [
            "keys (values interleaved across keys)",
            "rank: smallest p over bits",
            "linear complexity: smallest p over bits",
            "Hamming weight p",
            "monobit: smallest p over bits",
            "byte frequency p",
            f"tests failing (p < {fail:g}) of {3 * 64 + 2}",
        ],
        rows,
        caption=f"Seed {cfg.prng.seeds[0]}, {cfg.prng.outputs:,} 64-bit values per stream (jax.random.bits with "
        "uint64; without x64 mode JAX draws their bits 32..63), value t of every key in turn. The smallest of 64 "
        "uniform p-values is about 1/65 on average. A table, not a claim: the paper says nothing about JAX.",
    )


def build_report(cfg, per_gen: dict[str, list[dict]], per_construction: dict[str, dict] | None = None) -> Report:
    c = cfg.prng
    notes = [
        f"{c.outputs:,} outputs per generator and seed; rank test on {c.rank_size}x{c.rank_size} matrices of "
        f"each bit's sequence; linear complexity of each bit's first {c.lc_bits} values."
    ]
    dieharder_ran = any(r["dieharder"] is not None for rs in per_gen.values() for r in rs)
    if c.dieharder and not dieharder_ran:
        notes.append("dieharder is not installed (apt-get install dieharder): its subset was skipped.")
    metrics = {f"min_lc/{g}": int(min(r["lc"].min() for r in rs)) for g, rs in per_gen.items()}
    extra_tables = [jax_streams_table(cfg, per_construction)] if per_construction else []
    return Report(
        "prng",
        "xoroshiro128aox: the IPU's hardware PRNG",
        measure(cfg, per_gen),
        tables(cfg, per_gen) + extra_tables,
        [],
        metrics,
        notes,
        facts(),
    )

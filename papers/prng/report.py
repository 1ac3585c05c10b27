"""The PRNG report: the tables (failures per generator and seed, the cells of the two generators under each
technology mapping, dieharder's p-values when it ran, the battery on jax.random streams from derived keys), made from
the Results and the decision. It formats: the claims, the facts, the failure counts and the cell ratios it shows are
decided in papers/prng/claims.py (`decided.estimates`); and one figure, the battery's per-bit p-values of every
generator, where the paper's finding shows: xoroshiro128+'s lowest bits fail the linear tests, xoroshiro128aox's
do not."""

from __future__ import annotations

import numpy as np

from core.claims import Decided
from core.report import Figure, Report, Table
from papers.prng.battery import FAIL_P
from papers.prng.paper import CONSTRUCTIONS, DIEHARDER_TESTS, LABELS, PAPER_CELL_RATIO, PAPER_CELLS
from papers.prng.results import Results

# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    est = decided.estimates
    rows = []
    for gen, streams in results.streams.items():
        for s in streams:
            r, key = s.battery, f"failures/{gen}/{s.seed}"
            rows.append(
                [
                    LABELS[gen],
                    s.seed,
                    est[f"{key}/rank"],
                    est[f"{key}/linear-complexity"],
                    est[f"{key}/hamming-weight"],
                    est[f"{key}/monobit"],
                    est[f"{key}/byte-frequency"],
                    ", ".join(str(b) for b in np.flatnonzero((r.rank_p < FAIL_P) | (r.lc_p < FAIL_P))[:8]) or "-",
                    int(r.lc.min()),
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
                str(m.mapping),
                m.aox.state,
                m.aox.output,
                m.plus.output,
                f"{est[f'cell-ratio/kogge_stone/{m.mapping.key}']:.3f}",
                f"{est[f'cell-ratio/ripple/{m.mapping.key}']:.3f}",
            ]
            for m in results.cells
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
    diehard = [(g, i, s.dieharder) for g, ss in results.streams.items() for i, s in enumerate(ss)]
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


def jax_streams_table(cfg, results: Results, decided: Decided) -> Table:
    """The battery on the jax.random streams of papers.prng.jax_streams: the smallest p-value of each test (over the
    64 bits for the per-bit tests) and how many of the battery's 194 tests fail."""
    rows = []
    for construction, r in results.jax_streams.items():
        rows.append(
            [
                CONSTRUCTIONS[construction],
                float(r.rank_p.min()),
                float(r.lc_p.min()),
                float(r.hw_p),
                float(r.monobit_p.min()),
                float(r.byte_p),
                decided.estimates[f"jax-streams/{construction}/failing"],
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
            f"tests failing (p < {FAIL_P:g}) of {3 * 64 + 2}",
        ],
        rows,
        caption=f"Seed {results.jax_seed}, {cfg.prng.outputs:,} 64-bit values per stream (jax.random.bits with "
        "uint64; without x64 mode JAX draws their bits 32..63), value t of every key in turn. The smallest of 64 "
        "uniform p-values is about 1/65 on average. A table, not a claim: the paper says nothing about JAX.",
    )


P_FLOOR = 1e-16  # p-values below it are drawn at it (a failing bit's p can underflow to 0)


def bit_figure(results: Results) -> Figure:
    """-log10 p of the binary-rank and linear-complexity tests for each of the 64 output bits: one line per
    generator (over its seeds: the mean, with the range shaded), and the failure threshold."""
    from core import plots

    fig, axes = plots.figure(2, 1, panel=(6.0, 3.2))
    bits = np.arange(64)
    for ax, (test, of) in zip(axes, (("binary rank", "rank_p"), ("linear complexity", "lc_p")), strict=True):
        series = {
            LABELS[gen]: (bits, -np.log10(np.maximum(np.stack([getattr(s.battery, of) for s in ss], 1), P_FLOOR)))
            for gen, ss in results.streams.items()
            if ss
        }
        plots.curves(ax, series, xlabel="output bit (0: least significant)", ylabel=f"{test}: -log10 p", marker=None)
        ax.axhline(-np.log10(FAIL_P), color="k", ls="--", lw=0.8, label=f"fails: p < {FAIL_P:g}")
        ax.legend(fontsize=7)
    return fig


def render(cfg, results: Results, decided: Decided) -> Report:
    c = cfg.prng
    notes = [
        f"{c.outputs:,} outputs per generator and seed; rank test on {c.rank_size}x{c.rank_size} matrices of "
        f"each bit's sequence; linear complexity of each bit's first {c.lc_bits} values."
    ]
    dieharder_ran = any(s.dieharder is not None for ss in results.streams.values() for s in ss)
    if c.dieharder and not dieharder_ran:
        notes.append("dieharder is not installed (apt-get install dieharder): its subset was skipped.")
    metrics = {f"min_lc/{g}": int(min(s.battery.lc.min() for s in ss)) for g, ss in results.streams.items()}
    extra_tables = [jax_streams_table(cfg, results, decided)] if results.jax_streams else []
    return Report(
        "prng",
        "xoroshiro128aox: the IPU's hardware PRNG",
        tables=tables(cfg, results, decided) + extra_tables,
        metrics=metrics,
        notes=notes,
        figures=[
            Figure(
                "bit_p_values",
                bit_figure(results),
                f"Per-bit p-values of the battery's linear tests, each generator over its {len(c.seeds)} seed(s): "
                f"the line is the mean of -log10 p, the band its range; above the dashed line a bit fails "
                f"(p < {FAIL_P:g}); p below {P_FLOOR:g} is drawn at {P_FLOOR:g}. The paper's finding: "
                "xoroshiro128+'s lowest bits are linear (they fail), xoroshiro128aox's are not.",
            )
        ]
        if any(results.streams.values())
        else [],
    )


__all__ = ["render"]

"""Benchmark section "sparq": SparQ's decode-step attention against dense attention (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("sparq")
def bench_sparq(size: str) -> list[Comparison]:
    """Decode-step attention, SparQ against dense, at S=16384 and d=128 over 32 heads (memory-bound), at 1/8 and 1/16
    of the dense transfer (the quality sweep's rule: k fixed, the paper's 128, or S/32 at the small sizes; r from the
    budget), with the transfer counted from both kernels and the
    speed-up it predicts. Both kernels are warmed and timed in the same interleaved rounds; times are medians."""
    from papers.sparq.speed import decode_step_times, operating_point

    S = by_size(size, tiny=512, quick=2048, full=16384)
    rows = []
    for ratio in (1 / 8, 1 / 16):
        r, k = operating_point(ratio, S, k=min(128, S // 32))
        t = decode_step_times(S=S, d=128, rows=32, r=r, k=k, repeat=3 if size == "tiny" else 7)
        rows.append(
            Comparison(
                "sparq",
                f"decode step, S={S}, d=128, 32 heads",
                f"SparQ r={r} k={k}",
                "dense attention",
                t.sparq_seconds,
                t.dense_seconds,
                f"transfer {t.transfer:.3f} of dense (counted): theoretical {t.theoretical_speedup:.2f}x",
            )
        )
    return rows

"""Benchmark section "sparq": SparQ's decode-step attention against dense attention (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("sparq")
def bench_sparq(size: str) -> list[Comparison]:
    """Decode-step attention, SparQ against dense, at S=16384 and d=128 over 32 heads (memory-bound), with the
    fraction of the dense transfer SparQ reads."""
    from papers.sparq.speed import decode_step_times

    S = by_size(size, tiny=512, quick=2048, full=16384)  # tiny: the least S that holds k=256 positions
    rows = []
    for r, k in ((16, 128), (32, 256)):
        t_dense, t_sparq, transfer = decode_step_times(S=S, d=128, rows=32, r=r, k=k)
        rows.append(
            Comparison(
                "sparq",
                f"decode step, S={S}, d=128, 32 heads",
                f"SparQ r={r} k={k}",
                "dense attention",
                t_sparq,
                t_dense,
                f"transfer {transfer:.3f} of dense",
            )
        )
    return rows

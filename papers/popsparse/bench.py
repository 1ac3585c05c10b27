"""Benchmark section "popsparse": static and dynamic block-sparse matmul against dense and sparse peers on the CPU
(run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("popsparse")
def bench_popsparse(size: str) -> list[Comparison]:
    """Static block-sparse matmul (core.sparsity, float32) against dense jnp.matmul, scipy bsr_array and JAX's
    experimental BCSR at m = k = n = 4096, density 1/16, for each block size (the issue's target: block 16 at least
    3x faster than dense and 2x faster than both sparse peers)."""
    from papers.popsparse.cpu import time_cell

    n, repeat = by_size(size, tiny=(64, 3), quick=(1024, 3), full=(4096, 5))  # tiny: one block of 16 in 4 x 4
    rows = []
    for block in (16, 8, 4, 1):
        # every method, dense included, in the same interleaved rounds; each time is the median of the rounds
        cell = time_cell(n, n, n, block, 1 / 16, repeat=repeat)
        name = f"Y = W X, m=k=n={n}, block {block}, density 1/16, float32"
        for peer, label in (("dense", "dense jnp.matmul"), ("scipy", "scipy bsr_array"), ("bcsr", "jax BCSR")):
            rows.append(Comparison("popsparse", name, "static block-sparse", label, cell["static"], cell[peer]))
        rows.append(
            Comparison("popsparse", name, "dynamic block-sparse", "dense jnp.matmul", cell["dynamic"], cell["dense"])
        )
    return rows

"""Benchmark section "ipu_model": what simulating a matmul on the Mk2 costs (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("ipu_model")
def bench_ipu_model(size: str) -> list[Comparison]:
    """Simulating a planned matmul on the full Mk2 (build + compile + run) against numpy computing the same product:
    what the simulation costs. The simulated time and the fraction of the Mk2's peak go in the size column."""
    import time

    import numpy as np

    from core.bench import time_call
    from ipu_model import get_device
    from ipu_model.__main__ import profile_matmul

    device = get_device("mk2")
    cells = by_size(
        size,
        tiny=((64, "float16"), (64, "float32")),  # both dtypes of full, at a size that still spans many tiles
        quick=((512, "float16"),),
        full=((2048, "float16"), (2048, "float32")),
    )
    rows = []
    for size, dtype in cells:
        t0 = time.perf_counter()
        r = profile_matmul(device, size, size, size, dtype)
        t_sim = time.perf_counter() - t0
        x = np.ones((size, size), np.float32)
        t_np = time_call(lambda x=x: x @ x, repeat=3)
        p, e = r["plan"], r["engine"]
        frac = e.profile.fraction_of_peak(r["flops"], dtype)
        sim_us = e.profile.totals()["seconds_per_run"] * 1e6
        note = f"{size}^3 {dtype}, grid {p.pm}x{p.pk}x{p.pn}: simulated {sim_us:.1f} us = {frac:.0%} of Mk2 peak"
        rows.append(
            Comparison(
                "ipu_model", "matmul on 1472 tiles", "ipu_model simulation", "numpy float32 matmul", t_sim, t_np, note
            )
        )
    return rows

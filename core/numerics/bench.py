"""Benchmark section "numerics": cast_to_format against ml_dtypes and gfloat (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("numerics")
def bench_numerics(size: str) -> list[Comparison]:
    """cast_to_format against ml_dtypes' astype round-trip and gfloat's round_ndarray, on the same data."""
    import jax
    import numpy as np
    from gfloat import RoundMode, round_ndarray
    from gfloat.formats import format_info_ocp_e4m3

    from core.bench import time_call
    from core.numerics import FORMATS, cast_to_format

    n = 1 << by_size(size, tiny=12, quick=20, full=24)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * np.exp2(rng.uniform(-12, 12, n))).astype(np.float32)  # normal, spread of scales
    xj = jax.device_put(x)
    key = jax.random.key(0)
    size = f"{n:,} float32"

    def one_format(name: str) -> list[Comparison]:
        fmt = FORMATS[name]
        nearest = jax.jit(lambda v: cast_to_format(v, fmt))
        stochastic = jax.jit(lambda v, k: cast_to_format(v, fmt, rounding="stochastic", key=k))
        t_ours = time_call(lambda: nearest(xj))
        t_ml = time_call(lambda: x.astype(fmt.ml_dtype).astype(np.float32))
        t_sr = time_call(lambda: stochastic(xj, key))
        return [
            Comparison(
                "numerics", f"{name} nearest", "cast_to_format (jit)", "ml_dtypes astype round-trip", t_ours, t_ml, size
            ),
            Comparison(
                "numerics",
                f"{name} stochastic",
                "cast_to_format stochastic",
                "cast_to_format nearest",
                t_sr,
                t_ours,
                size,
            ),
        ]

    rows = one_format("e4m3") + one_format("e5m2")
    t_e4m3 = rows[0].ours_seconds
    double = jax.jit(lambda v: v * 2)  # one read, one write: the memory-bandwidth floor of any cast
    rows.append(
        Comparison(
            "numerics",
            "e4m3 nearest",
            "cast_to_format (jit)",
            "jnp x*2 (memory floor)",
            t_e4m3,
            time_call(lambda: double(xj)),
            size,
        )
    )
    t_gf = time_call(
        lambda: round_ndarray(format_info_ocp_e4m3, x, RoundMode.TiesToEven), repeat=2, min_seconds=0.0, warmup=0
    )
    rows.append(
        Comparison("numerics", "e4m3 nearest", "cast_to_format (jit)", "gfloat round_ndarray", t_e4m3, t_gf, size)
    )
    return rows

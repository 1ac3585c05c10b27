"""Block-sparse matmul on the CPU: our static (and dynamic) matmul against dense `jnp.matmul`, scipy's `bsr_array`
and JAX's experimental BCSR, over block sizes and densities, every method timed in the same interleaved rounds.
(What the rounds show, the speed-up intervals and where each block size starts to beat dense, is decided from them
in papers/popsparse/claims.py and shown by report.py.)

Every timed product is first checked against the dense product of the same matrix, so a fast wrong answer cannot
enter the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from core.bench import time_rounds
from core.sparsity import BlockPattern, BlockSparseMatrix
from core.sparsity.static import plan_static, static_matmul
from papers.popsparse.config import PEERS


def _check(name: str, got, want: np.ndarray, tol: float) -> float:
    """Relative max error of `got` against `want`; ValueError above `tol` (a wrong answer must not be timed)."""
    err = float(np.max(np.abs(np.asarray(got, np.float64) - want)) / max(np.max(np.abs(want)), 1e-30))
    if not err <= tol:
        raise ValueError(f"{name}: relative error {err:.3g} against the dense product exceeds {tol}")
    return err


def _bcsr(dense_w: np.ndarray, x: jax.Array) -> Callable[[], jax.Array]:
    from jax.experimental import sparse

    w = sparse.BCSR.fromdense(jnp.asarray(dense_w))
    fn = jax.jit(lambda w, x: w @ x)
    return lambda: fn(w, x)


def time_cell(
    m: int,
    k: int,
    n: int,
    block: int,
    density: float,
    *,
    peers: Sequence[str] = PEERS,
    dynamic: bool = True,
    seed: int = 0,
    repeat: int = 5,
    min_seconds: float = 0.05,
) -> dict:
    """Seconds of Y = W X (float32) for a uniformly random block pattern: dense `jnp.matmul`, ours static, ours
    dynamic (capacity = the pattern's blocks) and each peer, all timed in the same interleaved rounds
    (`core.bench.time_rounds`: round i of every method runs before round i + 1 of any, so round i of two methods
    pairs up). `cell[method]` is the median over the `repeat` rounds (one statistic for every method) and
    `cell["rounds"][method]` the rounds themselves, from which the claims take their spread."""
    for name in peers:
        if name not in PEERS:
            raise ValueError(f"unknown CPU peer {name!r}: choose from {PEERS}")
    if repeat < 1:
        raise ValueError(f"time_cell: repeat must be >= 1, got {repeat}")
    pattern = BlockPattern.random((m, k), block, density, seed)
    w = BlockSparseMatrix.random(pattern, seed)
    x_np = np.random.default_rng(seed + 1).normal(size=(k, n)).astype(np.float32)
    dense_w = w.to_dense()
    want = dense_w.astype(np.float64) @ x_np
    x = jnp.asarray(x_np)
    values = jnp.asarray(w.values)
    out = {"m": m, "k": k, "n": n, "block": block, "density": pattern.density, "nnz_blocks": pattern.nnz_blocks}
    dense = jax.jit(jnp.matmul)
    wd = jnp.asarray(dense_w)
    _check("dense jnp.matmul", dense(wd, x), want, 1e-4)
    calls: dict[str, Callable[[], object]] = {"dense": lambda: dense(wd, x)}

    ours = jax.jit(partial(static_matmul, plan_static(pattern)))
    out["error"] = _check("static", ours(values, x), want, 1e-4)
    calls["static"] = lambda: ours(values, x)
    if dynamic:
        from core.sparsity.dynamic import dynamic_from_pattern, dynamic_matmul

        dyn = dynamic_from_pattern(w, pattern.nnz_blocks)
        fn = jax.jit(partial(dynamic_matmul, m=m))
        _check("dynamic", fn(dyn, x), want, 1e-4)
        calls["dynamic"] = lambda: fn(dyn, x)
    for name in peers:
        if name == "scipy":
            bsr = w.to_scipy()
            _check("scipy bsr_array", bsr @ x_np, want, 1e-4)
            calls["scipy"] = lambda bsr=bsr: bsr @ x_np
        else:
            call = _bcsr(dense_w, x)
            _check("jax BCSR", call(), want, 1e-4)
            calls["bcsr"] = call
    rounds = time_rounds(calls, repeat=repeat, min_seconds=min_seconds)
    out.update({name: float(np.median(r)) for name, r in rounds.items()})
    out["rounds"] = rounds
    return out


def cpu_sweep(
    m: int,
    k: int,
    n: int,
    blocks: Sequence[int],
    densities: Sequence[float],
    *,
    peers: Sequence[str] = PEERS,
    dynamic: bool = True,
    seed: int = 0,
    repeat: int = 5,
    progress=lambda xs, **_: xs,
) -> list[dict]:
    """time_cell over blocks x densities; dense is timed in every cell, in the same rounds as the sparse methods."""
    cells = [(b, d) for b in blocks for d in densities]
    return [
        time_cell(m, k, n, b, d, peers=peers, dynamic=dynamic, seed=seed, repeat=repeat)
        for b, d in progress(cells, desc="CPU block-sparse matmuls")
    ]

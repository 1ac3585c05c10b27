"""Decode-step attention time, dense vs SparQ, on whatever JAX runs on (CPU here; a GPU when present) and on a
simulated IPU (`simulate_decode_steps`: the same kernels lowered by ipu_model.lowering, the cache in streaming
memory as the authors' Section 6.1 benchmark keeps it), at a given
fraction of the dense transfer, with the transfer of both kernels counted from their traced programs. The rounds are
returned as a `DecodeTiming` (papers/sparq/results.py); the speed-up's interval over them is decided from the stored
rounds (papers/sparq/claims.py, `speedup`).

Both timed kernels are core.nn.attention's: `dense_attention`, and `sparq_attention` as a kernel that keeps the
paper's second, transposed copy of K (step 2 reads the r rows K[:, i1] from it) and the running mean of V (step 5
reads it), the last k/4 positions forced in, over a full cache."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from core.bench import time_rounds
from core.nn.attention import dense_attention, sparq_attention
from core.nn.decode_methods import SparQ
from core.nn.transfer import elements_moved
from papers.sparq.results import DecodeTiming, IpuKernel, IpuTiming


def operating_point(ratio: float, S: int, d: int = 128, k: int = 128) -> tuple[int, int]:
    """(r, k) at `ratio` of the dense transfer (one query head per KV head, step 5 kept), by the same rule as the
    quality sweep (`SparQ.for_ratio`: k fixed, r from the budget)."""
    m = SparQ.for_ratio(ratio, S, d, k=k)
    if m is None:
        raise ValueError(f"operating_point: SparQ with k={k} cannot reach {ratio} of the dense transfer at S={S}")
    return m.r, m.k


def timed_kernels(r: int, k: int):
    """The timed decode steps: dense(q, K, V) and sparq(q, K, K_t, V, v_mean) with K_t = K transposed [..., d, S]
    and v_mean the mean of V [..., d], each returning the output [..., d]."""

    def dense(q, K, V):
        return dense_attention(q, K, V)[0]

    def sparq(q, K, K_t, V, v_mean):
        return sparq_attention(q, K, V, r=r, k=k, local_k=k // 4, K_t=K_t, v_mean=v_mean)[0]

    return dense, sparq


def kernel_elements(S: int, d: int, r: int, k: int) -> tuple[int, int]:
    """(dense, SparQ) elements per head per step of the timed kernels, counted from their traced programs: what each
    reads (q, the caches, SparQ's mean of V) and writes (the output). SparQ's step also writes the new key into
    the transposed copy of K and updates the mean of V (2d, as the paper's formula counts them); the cache update
    does that outside the timed kernel, so those 2d are added here, the one term not counted from a program."""
    q, K, K_t, v_mean = jnp.zeros((1, d)), jnp.zeros((1, S, d)), jnp.zeros((1, d, S)), jnp.zeros((1, d))
    dense, sparq = timed_kernels(r, k)
    return elements_moved(dense, q, K, K), elements_moved(sparq, q, K, K_t, K, v_mean) + 2 * d


def decode_step_times(
    S: int = 16384, d: int = 128, rows: int = 32, r: int = 16, k: int = 1024, *, repeat: int = 7, seed: int = 0
) -> DecodeTiming:
    """Dense and SparQ decode-step attention over `rows` = batch x heads caches of S x d, float32, both warmed and
    timed in the same interleaved rounds (`core.bench.time_rounds`)."""
    key = jax.random.split(jax.random.key(seed), 3)
    q = jax.random.normal(key[0], (rows, d))
    K = jax.random.normal(key[1], (rows, S, d))
    V = jax.random.normal(key[2], (rows, S, d))
    # SparQ reads K[:, i1] from a second, transposed copy of K ([..., d, S]), as the paper stores it
    K_t = jnp.swapaxes(K, -1, -2)
    v_mean = jnp.mean(V, -2)  # kept up to date incrementally while decoding (d reads and writes per step)
    dense, sparq = (jax.jit(f) for f in timed_kernels(r, k))
    # step 3 alone, to tell a compute-bound selection from the memory-bound reads the theory counts
    scores = jax.random.normal(key[0], (rows, S))
    select = jax.jit(lambda s: jax.lax.top_k(s, k)[1])
    rounds = time_rounds(
        {
            "dense": lambda: dense(q, K, V),
            "sparq": lambda: sparq(q, K, K_t, V, v_mean),
            "select": lambda: select(scores),
        },
        repeat=repeat,
        min_seconds=0.2,
    )
    n_dense, n_sparq = kernel_elements(S, d, r, k)
    return DecodeTiming(
        S, d, rows, r, k, tuple(rounds["dense"]), tuple(rounds["sparq"]), n_dense, n_sparq, tuple(rounds["select"])
    )


def simulate_decode_steps(
    S: int = 16384, d: int = 128, heads: int = 32, r: int = 32, k: int = 128, *, device: str = "bow"
) -> IpuTiming:
    """The timed kernels (`timed_kernels`) lowered onto a simulated IPU (ipu_model.lowering) and costed, float16, at
    batch x heads = `heads`: q in tile memory; K and V (and SparQ's transposed copy of K and mean of V) in
    streaming memory, as the authors' Section 6.1 benchmark keeps them (papers/sparq/REFERENCES.md, "IPU
    benchmark"): dense streams K and V in whole, SparQ reads the rows it gathers (K_t's r rows a head, K's and V's k
    rows) and the mean of V. Cost-only: no values are computed (the lowering's values are tested against JAX)."""
    from ipu_model import get_device
    from ipu_model.lowering import lower

    spec = get_device(device)
    h = jnp.float16
    q, K, K_t, v_mean = (
        jax.ShapeDtypeStruct(shape, h) for shape in ((heads, d), (heads, S, d), (heads, d, S), (heads, d))
    )
    dense, sparq = timed_kernels(r, k)
    kernels = {}
    for name, fn, args, remote in (
        ("dense", dense, (q, K, K), (1, 2)),
        ("sparq", sparq, (q, K, K_t, K, v_mean), (1, 2, 3, 4)),
    ):
        low = lower(fn, *args, device=spec, remote=remote, name=f"sparq/{name}")
        c = low.cost()
        kernels[name] = IpuKernel(
            c.cycles,
            c.seconds,
            c.fits,
            dict(c.phases),
            low.streamed_bytes,
            c.memory_peak_bytes,
            dict(c.wall),
            c.message,
        )
    return IpuTiming(spec.name, S, d, heads, r, k, spec.streaming_bytes_per_second, kernels["dense"], kernels["sparq"])

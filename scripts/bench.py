#!/usr/bin/env python
"""Benchmarks: our implementations against a peer library, timed in the same run.

    python scripts/bench.py                 # every section
    python scripts/bench.py --section NAME  # one section (repeatable)
    python scripts/bench.py --list

Writes outputs/bench/<date>.json and outputs/bench/<date>.md, and prints the markdown table. One section per
paper or core library; each is a function returning a list of core.bench.Comparison.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import Comparison, markdown_table
from core.io import atomic_write_json, atomic_write_text
from core.runner import versions

SECTIONS: dict[str, Callable[[bool], list[Comparison]]] = {}


def section(name: str) -> Callable:
    def register(fn: Callable[[bool], list[Comparison]]) -> Callable[[bool], list[Comparison]]:
        SECTIONS[name] = fn
        return fn

    return register


# ---------------------------------------------------------------------------------------------- sections


@section("numerics")
def bench_numerics(quick: bool) -> list[Comparison]:
    """cast_to_format against ml_dtypes' astype round-trip and gfloat's round_ndarray, on the same data."""
    import jax
    import numpy as np
    from gfloat import RoundMode, round_ndarray
    from gfloat.formats import format_info_ocp_e4m3

    from core.bench import time_call
    from core.numerics import FORMATS, cast_to_format

    n = 1 << (20 if quick else 24)
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


@section("unit_scaling")
def bench_unit_scaling(quick: bool) -> list[Comparison]:
    """Training-step time of the unit-scaled transformer LM against its regular twin (same size and numerics)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from core.bench import time_call
    from core.nn import Ops, TransformerLM

    d_model, depth, seq, batch = (32, 2, 32, 8) if quick else (64, 2, 64, 16)
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 80, (batch, seq + 1)))
    size = f"d_model {d_model}, depth {depth}, seq {seq}, batch {batch}"

    def step_time(scaling: str, fwd: str | None, bwd: str | None) -> float:
        model = TransformerLM(
            vocab=80,
            d_model=d_model,
            depth=depth,
            heads=4,
            seq_len=seq,
            ops=Ops(scaling=scaling, fwd_fmt=fwd, bwd_fmt=bwd),
        )
        params = model.init(jax.random.key(0), ids[:, :-1])
        opt = optax.adamw(1e-3)
        state = (params, opt.init(params))

        @jax.jit
        def train_step(state):
            params, opt_state = state
            grads = jax.grad(lambda p: model.apply(p, ids[:, :-1], ids[:, 1:], method=TransformerLM.loss))(params)
            updates, opt_state = opt.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        return time_call(lambda: train_step(state))

    rows = []
    for label, fwd, bwd in (("FP32", None, None), ("FP8 (E4M3/E5M2 matmul casts)", "e4m3", "e5m2")):
        rows.append(
            Comparison(
                "unit_scaling",
                f"train step, {label}",
                "unit-scaled",
                "regular",
                step_time("unit", fwd, bwd),
                step_time("regular", fwd, bwd),
                size,
            )
        )
    return rows


@section("prng")
def bench_prng(quick: bool) -> list[Comparison]:
    """Raw 64-bit output rate of xoroshiro128aox (numpy and jitted JAX, many streams) vs numpy's PCG64 and Philox."""
    import jax
    import numpy as np

    from core.bench import time_call
    from core.random import aox_generate
    from core.random import jax_xoroshiro as jx

    # many streams, few steps per call: the IPU's regime (a stream per tile and worker), and the fastest layout
    streams, steps = (1 << 16, 4) if quick else (1 << 20, 4)
    n = streams * steps
    rng = np.random.default_rng(0)
    s0 = rng.integers(1, 2**63, streams, dtype=np.uint64)
    s1 = rng.integers(1, 2**63, streams, dtype=np.uint64)
    state = jx.to_jax_state(s0, s1)
    size = f"{n:,} outputs ({streams:,} streams x {steps})"
    t_np = time_call(lambda: aox_generate(s0, s1, steps))
    t_jax = time_call(lambda: jax.block_until_ready(jx.generate(state, steps, "aox", steps_major=True)))
    rows = []
    for peer, bitgen in (
        ("numpy PCG64 random_raw", np.random.PCG64(0)),
        ("numpy Philox random_raw", np.random.Philox(0)),
    ):
        t_peer = time_call(lambda b=bitgen: b.random_raw(n))
        rows.append(Comparison("prng", "raw outputs", "aox numpy (streams)", peer, t_np, t_peer, size))
        rows.append(Comparison("prng", "raw outputs", "aox JAX jit (streams)", peer, t_jax, t_peer, size))
    return rows


@section("ipu_model")
def bench_ipu_model(quick: bool) -> list[Comparison]:
    """Simulating a planned matmul on the full Mk2 (build + compile + run) against numpy computing the same product:
    what the simulation costs. The simulated time and the fraction of the Mk2's peak go in the size column."""
    import time

    import numpy as np

    from core.bench import time_call
    from ipu_model import get_device
    from ipu_model.__main__ import profile_matmul

    device = get_device("mk2")
    rows = []
    for size, dtype in ((512, "float16"),) if quick else ((2048, "float16"), (2048, "float32")):
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


@section("packing")
def bench_packing(quick: bool) -> list[Comparison]:
    """Histogram packing (SPFHP, LPFHP) against per-sequence first-fit decreasing, the textbook bin-packing peer,
    on the same sequences; and NNLSHP's time against SPFHP's."""
    import numpy as np

    from core.bench import time_call
    from core.packing import pack_histogram, published_histogram

    def first_fit_decreasing(lengths: np.ndarray, L: int, limit: int) -> int:
        rooms: list[int] = []  # room left per open pack (a pack leaves when full or at the limit)
        counts: list[int] = []
        packs = 0
        for x in np.sort(lengths)[::-1].tolist():
            for j, room in enumerate(rooms):
                if room >= x:
                    rooms[j] -= x
                    counts[j] += 1
                    if rooms[j] == 0 or counts[j] == limit:
                        rooms.pop(j)
                        counts.pop(j)
                    break
            else:
                packs += 1
                if L - x > 0 and limit > 1:
                    rooms.append(L - x)
                    counts.append(1)
        return packs

    full, L = published_histogram("squad_1_1_384")
    n = 5_000 if quick else 20_000  # the per-sequence peer is quadratic-ish: a random sample of SQuAD's lengths
    lengths = np.random.default_rng(0).choice(np.repeat(np.arange(1, L + 1), full), n, replace=False)
    h = np.bincount(lengths - 1, minlength=L)
    t_ffd = time_call(lambda: first_fit_decreasing(lengths, L, 3), repeat=1, min_seconds=0.0, warmup=0)
    packs_ffd = first_fit_decreasing(lengths, L, 3)
    rows = []
    for method in ("spfhp", "lpfhp"):
        t = time_call(lambda m=method: pack_histogram(h, L, 3, m))
        packs = pack_histogram(h, L, 3, method).num_packs
        name = f"{n:,} SQuAD 1.1 lengths, L=384, 3/pack"
        size = f"packs: {packs:,} vs {packs_ffd:,}"
        rows.append(Comparison("packing", name, method.upper(), "per-sequence first-fit decreasing", t, t_ffd, size))
    wiki, wl = published_histogram("wikipedia_512")
    t_spfhp = time_call(lambda: pack_histogram(wiki, wl, 12, "spfhp"))
    rows.append(
        Comparison(
            "packing",
            "Wikipedia (16.3M sequences, L=512, 12/pack)",
            "SPFHP",
            "the paper's SPFHP run (0.02 s)",
            t_spfhp,
            0.02,
        )
    )
    if not quick:
        t_nnls = time_call(lambda: pack_histogram(wiki, wl, 3, "nnlshp"), repeat=1, min_seconds=0.0, warmup=0)
        rows.append(
            Comparison(
                "packing",
                "Wikipedia (16.3M sequences, L=512, 3/pack)",
                "NNLSHP",
                "the paper's NNLSHP run (28.4 s)",
                t_nnls,
                28.4,
            )
        )
    return rows


@section("sparq")
def bench_sparq(quick: bool) -> list[Comparison]:
    """Decode-step attention, SparQ against dense, at S=16384 and d=128 over 32 heads (memory-bound), with the
    fraction of the dense transfer SparQ reads."""
    from papers.sparq.speed import decode_step_times

    S = 2048 if quick else 16384
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


@section("popsparse")
def bench_popsparse(quick: bool) -> list[Comparison]:
    """Static block-sparse matmul (core.sparsity, float32) against dense jnp.matmul, scipy bsr_array and JAX's
    experimental BCSR at m = k = n = 4096, density 1/16, for each block size (the issue's target: block 16 at least
    3x faster than dense and 2x faster than both sparse peers)."""
    from papers.popsparse.cpu import time_cell

    size = 1024 if quick else 4096
    rows = []
    dense_seconds = None
    for block in (16, 8, 4, 1):
        cell = time_cell(size, size, size, block, 1 / 16, dense_seconds=dense_seconds, repeat=3 if quick else 5)
        dense_seconds = cell["dense"]
        name = f"Y = W X, m=k=n={size}, block {block}, density 1/16, float32"
        for peer, label in (("dense", "dense jnp.matmul"), ("scipy", "scipy bsr_array"), ("bcsr", "jax BCSR")):
            rows.append(Comparison("popsparse", name, "static block-sparse", label, cell["static"], cell[peer]))
        rows.append(
            Comparison("popsparse", name, "dynamic block-sparse", "dense jnp.matmul", cell["dynamic"], cell["dense"])
        )
    return rows


@section("qm1b")
def bench_qm1b(quick: bool) -> list[Comparison]:
    """Labelling conformers of a 9-heavy-atom molecule (QM1B's size; 59 AOs, ~18k grid points): our JAX DFT,
    batched over the conformers and compiled, against PySCF at the same settings (b3lyp5, STO-3G, grid level 0,
    MINAO guess, DIIS 9) forced to 20 iterations as QM1B ran. Both times include the host integrals (the issue's
    target: at least 2x PySCF's conformers per hour)."""
    from pyscf import dft, gto

    from core.data.molecules import embed_conformers
    from papers.qm1b.dft import run_dft_batch
    from papers.qm1b.generate import atom_string

    smiles, count = ("CCO", 2) if quick else ("CC(C)C(=O)OC(C)C", 4)
    elements, positions = embed_conformers(smiles, count, seed=0)
    atoms = [atom_string(elements, p) for p in positions]

    def pyscf_20(atom):
        mol = gto.M(atom=atom, basis="sto-3g", verbose=0)
        mf = dft.RKS(mol, xc="b3lyp5")
        mf.grids.level, mf.max_cycle, mf.conv_tol, mf.diis_space, mf.init_guess = 0, 20, 1e-30, 9, "minao"
        mf.kernel()
        return mol.nao

    t = time.perf_counter()
    n_ao = [pyscf_20(a) for a in atoms][-1]  # every conformer runs (and is timed); all have the same n_ao
    peer = (time.perf_counter() - t) / count
    rows = []
    for dtype in ("float32", "float64"):
        run_dft_batch(atoms, dtype=dtype)  # compile
        t = time.perf_counter()
        run_dft_batch(atoms, dtype=dtype)
        ours = (time.perf_counter() - t) / count
        rows.append(
            Comparison(
                "qm1b",
                f"label one conformer of {smiles} ({n_ao} AOs), 20 SCF iterations",
                f"JAX DFT {dtype}, {count} conformers batched",
                "PySCF dft.RKS",
                ours,
                peer,
            )
        )
    return rows


@section("gps")
def bench_gps(quick: bool) -> list[Comparison]:
    """GPS++ training throughput (the small preset) on QM9 molecules: packed batches (8 packs of 60 nodes, 120 edges,
    8 molecules, the paper's limits) against the padded peer (one molecule per slot, padded to QM9's largest
    molecule), both compiled once; seconds per molecule, with the packing efficiency and compilation count."""
    import jax
    import numpy as np

    from papers.gps.batching import PackLimits, assemble, batches, efficiency, fitting, plan
    from papers.gps.cache import featurise_qm9
    from papers.gps.model import preset
    from papers.gps.train import TrainConfig, Trainer

    count, steps = (400, 4) if quick else (4000, 20)
    index = np.random.default_rng(0).permutation(130_831)[:count]
    cache = Path("outputs") / "gps" / "features"
    graphs = featurise_qm9(np.sort(index), cache)
    cfg = preset("small")
    packed = PackLimits(60, 120, 8)
    padded = PackLimits(int(graphs.num_nodes.max()), int(graphs.num_edges.max()), 1)

    def throughput(limits: PackLimits, packs_per_batch: int) -> tuple[float, dict, int]:
        ok, _ = fitting(graphs, limits)
        packs = plan(graphs, ok, limits, np.random.default_rng(1))
        arrays = assemble(graphs, packs, limits, rng=np.random.default_rng(2), noise=0.01, masking=True)
        data = list(batches(arrays, packs_per_batch, limits))
        tc = TrainConfig(steps=10 * steps, packs_per_batch=packs_per_batch, warmup=1)
        trainer = Trainer(cfg, tc, limits, 6.9, 1.3)
        params, opt = trainer.init()
        for i in range(2):  # compile and warm up
            params, opt, m = trainer.step(params, opt, data[i], i)
        jax.block_until_ready(m)
        t, molecules = time.perf_counter(), 0
        for i in range(steps):
            batch = data[(i + 2) % len(data)]
            params, opt, m = trainer.step(params, opt, batch, i + 2)
            molecules += int(batch["graph_mask"].sum())
        jax.block_until_ready(m)
        return (time.perf_counter() - t) / molecules, efficiency(graphs, packs, limits), trainer.traces

    ours, eff, traces = throughput(packed, 8)
    per_batch = round(8 * eff["graphs_per_pack"])  # the same molecules per step, one per padded slot
    peer, eff_pad, peer_traces = throughput(padded, per_batch)
    return [
        Comparison(
            "gps",
            f"GPS++ small ({count:,} QM9 molecules), one training step per molecule",
            f"packed 60/120/8 x 8 ({1 / ours:.0f} molecules/s)",
            f"padded to {padded.nodes} nodes x {per_batch} ({1 / peer:.0f} molecules/s)",
            ours,
            peer,
            f"node slots used {eff['nodes']:.1%} vs {eff_pad['nodes']:.1%}; compilations {traces} and {peer_traces}",
        )
    ]


@section("bess")
def bench_bess(quick: bool) -> list[Comparison]:
    """BESS training throughput (DistMult, width 64, 1024 triples and 64 negatives each per step, AdamW) on a synthetic
    100k-entity graph: the sharded step on 2 and 4 simulated devices against the plain single-device step (one dense
    table, no shard_map), in a process of its own with 4 simulated CPU devices; seconds per triple, with the bytes
    BESS moves per step against all-gathering the table."""
    import json
    import os
    import subprocess
    import sys

    entities, steps = (10_000, 5) if quick else (100_000, 30)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    cmd = [sys.executable, "-m", "papers.bess.scaling", "--devices", "1", "2", "4"]
    cmd += ["--entities", str(entities), "--steps", str(steps)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    peer = 1 / out["single_device_triples_per_second"]
    rows = []
    for row in out["rows"]:
        if row["devices"] == 1:
            continue
        rows.append(
            Comparison(
                "bess",
                f"BESS DistMult training step, {entities:,} entities, per triple",
                f"BESS on {row['devices']} simulated devices ({row['triples_per_second']:.0f} triples/s)",
                f"single device, dense table ({1 / peer:.0f} triples/s)",
                1 / row["triples_per_second"],
                peer,
                f"bytes moved per step {row['bess_bytes_per_step']:,} (BESS) vs {row['all_gather_bytes_per_step']:,} "
                f"(all-gather the table); entity table per device {row['entity_table_bytes_per_device']:,} bytes",
            )
        )
    return rows


@section("fp8_llm")
def bench_fp8_llm(quick: bool) -> list[Comparison]:
    """Training-step time of the transformer LM with simulated FP8 linear layers (amax scaling) against the same
    model in FP32, and the cost of computing the amaxes: the amax policy against cscale, which casts the same
    tensors with biases it does not have to compute (d_model 128, depth 4, 16 x 64 characters)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from core.nn.fp8 import split_fp8
    from core.nn.transformer import TransformerLM
    from papers.fp8_llm.train import Size, build_model

    size, steps = Size(128, 4, 4), (3 if quick else 20)
    windows = jnp.asarray(np.random.default_rng(0).integers(0, 80, (16, 65)), jnp.int32)

    def step_time(arm: str) -> float:
        model = build_model(size, 80, 64, arm)
        params, meta, probes = split_fp8(model.init(jax.random.key(0), windows[:1, :-1]))
        opt = optax.adamw(1e-3)
        state = opt.init(params)

        @jax.jit
        def step(params, state):
            def f(params, probes):
                variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
                return model.apply(variables, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

            loss, (grads, _) = jax.value_and_grad(f, argnums=(0, 1))(params, probes)
            updates, state = opt.update(grads, state, params)
            return optax.apply_updates(params, updates), state, loss

        params, state, loss = step(params, state)
        loss.block_until_ready()
        t = time.perf_counter()
        for _ in range(steps):
            params, state, loss = step(params, state)
        loss.block_until_ready()
        return (time.perf_counter() - t) / steps

    fp32, amax_t, cscale_t = step_time("fp32"), step_time("amax"), step_time("cscale")
    what = "LM training step (d_model 128, depth 4, 16 x 64 characters)"
    return [
        Comparison(
            "fp8_llm",
            what,
            "FP8 simulated, amax scaling",
            "FP32",
            amax_t,
            fp32,
            f"simulation overhead {amax_t / fp32 - 1:+.0%}",
        ),
        Comparison(
            "fp8_llm",
            what,
            "FP8 amax (biases computed from each tensor)",
            "FP8 cscale (biases given)",
            amax_t,
            cscale_t,
            f"amax computation {amax_t - cscale_t:+.4f} s per step",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", action="append", help="run only this section (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (for a smoke test)")
    parser.add_argument("--out", default="outputs/bench", help="directory for the JSON and markdown results")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(SECTIONS) if SECTIONS else "(no sections yet)")
        return 0
    chosen = args.section or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS) or '(none yet)'}")
    if not chosen:
        print("no benchmark sections are registered yet")
        return 0
    rows: list[Comparison] = []
    for name in chosen:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        rows += SECTIONS[name](args.quick)
    table = markdown_table(rows)
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out = Path(args.out)
    atomic_write_json(out / f"{stamp}.json", {"rows": [r.to_dict() for r in rows], "versions": versions()})
    atomic_write_text(out / f"{stamp}.md", table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The QM1B benchmark compares like with like: PySCF's tolerance is QM1B's 0.01 eV and reaches it, the fixed-iteration
peer really runs 20 cycles, and the timed process is pinned to one core with one thread."""

import os

import pytest

from core.data.molecules import embed_conformers
from papers.qm1b.bench import (
    HARTREE_EV,
    QM1B_CONV_TOL,
    THREAD_ENV,
    bench_qm1b,
    pyscf_converged,
    pyscf_rks,
    run_pinned,
)
from papers.qm1b.generate import atom_string


def test_qm1b_tolerance_gives_energies_within_qm1b_filter():
    assert QM1B_CONV_TOL * HARTREE_EV == pytest.approx(0.01)  # eV
    for smiles in ("CCO", "CC(N)=O"):
        elements, positions = embed_conformers(smiles, 1, seed=0)
        atom = atom_string(elements, positions[0])
        tight = pyscf_rks(atom, conv_tol=1e-12, max_cycle=100)
        tight.conv_tol_grad = 1e-8
        reference = tight.kernel()
        assert tight.converged
        error_ev = abs(pyscf_converged(atom) - reference) * HARTREE_EV
        assert error_ev < 0.01, (smiles, error_ev)


def test_fixed_peer_runs_exactly_twenty_cycles():
    mf = pyscf_rks("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692", conv_tol=1e-30, max_cycle=20)
    mf.kernel()
    assert mf.cycles == 20 and not mf.converged


def test_tiny_benchmark_runs_pinned_with_every_peer():
    assert THREAD_ENV["OMP_NUM_THREADS"] == "1" and "intra_op_parallelism_threads=1" in THREAD_ENV["XLA_FLAGS"]
    rows = bench_qm1b("tiny")
    assert len(rows) == 6  # float32 and float64, each against three PySCF peers
    assert {r.peer.split(" (")[0] for r in rows} == {
        "PySCF dft.RKS converged to QM1B's 0.01 eV",
        "PySCF dft.RKS at its default conv_tol 1e-9",
        "PySCF dft.RKS at 20 fixed cycles",
    }
    assert all(r.ours_seconds > 0 and r.peer_seconds > 0 and "one core" in r.size for r in rows)
    if hasattr(os, "sched_getaffinity"):
        m = run_pinned("O", 1, 1)
        assert len(m["affinity"]) == 1  # pinned to one core
        assert m["cpu_per_wall"] < 1.15  # one core cannot give much more than 1 CPU second per second
        assert set(m["rounds"]) == {"ours_float32", "ours_float64", "pyscf_converged", "pyscf_default", "pyscf_fixed"}

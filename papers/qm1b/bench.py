"""Benchmark section "qm1b": labelling conformers with our generator's DFT against PySCF (run by scripts/bench.py).

Like for like: the same conformers (QM9 molecules of QM1B's 9 heavy atoms, seeded ETKDG conformers), the same
settings (b3lyp5, STO-3G, grid level 0, MINAO guess, DIIS over 9), from atom strings to labels with all host work
included (integrals, grids, guesses; our float64 energy recomputation), both warmed before timing (our compilation,
PySCF's worker processes), the same statistic (median of interleaved rounds, core.bench.time_rounds), both using
all the machine's cores:

- ours: papers.qm1b.dft.pipeline.Labeller as the generator runs it: worker processes (one per core, one thread each)
  prepare the next batch's integrals while the float32 SCF of the current batch runs under JAX (XLA's own threads),
  batches of conformers across molecules, the SCF stopping once converged (papers.qm1b.dft.scf.stop_rule);
- PySCF dft.RKS converged to its default conv_tol 1e-9 (10-13 cycles here), the tolerance at which its labels are
  at least as accurate as ours (its gaps ~0.01 meV from a tight reference; ours within 0.1 meV), given the machine's
  cores in whichever of two ways is faster on the round: one process per core with one thread each (a pool over
  the conformers), or one process with a thread per core (PySCF's OpenMP). Both are timed every round.

Density fitting is benchmarked the same way against PySCF's `density_fit()` (the same auxiliary basis). Each row
also states the accuracy measured on the benchmark's own conformers: our energy and gap against PySCF's
(the issue's goal: within 1 meV and 0.1 meV). QM1B's own tolerance (0.01 eV of energy, `QM1B_CONV_TOL`) is looser:
PySCF stopping there is within 3.3 meV of its converged energy but its gaps are up to 38 meV off
(tests/papers/qm1b/test_bench.py), so it is not the accuracy-matched peer.
"""

from __future__ import annotations

import multiprocessing

from core.bench import Comparison, by_size, section

HARTREE_EV = 27.211386245988
QM1B_CONV_TOL = 0.01 / HARTREE_EV  # Hartree: QM1B's 0.01 eV convergence filter as PySCF's stopping rule
PYSCF_DEFAULT_CONV_TOL = 1e-9  # pyscf.scf.hf.SCF.conv_tol


def pyscf_rks(atom: str, *, conv_tol: float, max_cycle: int = 100, density_fit: bool = False):
    """PySCF's restricted Kohn-Sham at QM1B's settings (not yet run)."""
    from pyscf import dft, gto

    mol = gto.M(atom=atom, basis="sto-3g", unit="Angstrom", verbose=0)
    mf = dft.RKS(mol, xc="b3lyp5")
    if density_fit:
        mf = mf.density_fit()
    mf.grids.level, mf.diis_space, mf.init_guess = 0, 9, "minao"
    mf.conv_tol, mf.max_cycle = conv_tol, max_cycle
    return mf


def pyscf_converged(atom: str) -> float:
    """PySCF stopping at QM1B's tolerance; returns the energy (Hartree)."""
    return float(pyscf_rks(atom, conv_tol=QM1B_CONV_TOL).kernel())


def pyscf_label(atom: str, density_fit: bool = False) -> tuple[float, float, int]:
    """PySCF converged at its default tolerance: (energy in Hartree, HOMO-LUMO gap in eV, cycles)."""
    mf = pyscf_rks(atom, conv_tol=PYSCF_DEFAULT_CONV_TOL, density_fit=density_fit)
    energy = float(mf.kernel())
    n = mf.mol.nelectron // 2
    return energy, float((mf.mo_energy[n] - mf.mo_energy[n - 1]) * HARTREE_EV), int(mf.cycles)


def _one_thread() -> None:
    from pyscf import lib

    lib.num_threads(1)


def conformers(molecules: int, count: int, heavy: int = 9) -> list[str]:
    """Atom strings of `count` seeded ETKDG conformers of each of `molecules` QM9 molecules of `heavy` heavy atoms."""
    from core.data.molecules import embed_conformers
    from papers.qm1b.generate import Selection, atom_string, conformer_seed, select_molecules

    sel = Selection(min_heavy=heavy, max_heavy=heavy, molecules=molecules, conformers=count, seed=7)
    atoms = []
    for index, smiles in select_molecules(sel)[0]:
        elements, positions = embed_conformers(smiles, count, conformer_seed(sel, index))
        atoms += [atom_string(elements, p) for p in positions]
    return atoms


def measure(atoms: list[str], *, density_fit: bool, repeat: int, batch: int) -> dict:
    """Seconds per round (all conformers) of ours and of both PySCF layouts, interleaved, plus the accuracy of our
    labels against PySCF's and the cycles each took."""
    from pyscf import lib

    from core.bench import time_rounds
    from papers.qm1b.dft.pipeline import Labeller, usable_cpus

    n = usable_cpus()
    order = sorted(range(len(atoms)), key=lambda i: atoms[i].count(";"))  # by size, as the generator batches
    batches = [[atoms[i] for i in order[k : k + batch]] for k in range(0, len(order), batch)]
    context = multiprocessing.get_context("spawn")
    with Labeller(density_fit=density_fit, workers=n) as labeller, context.Pool(n, initializer=_one_thread) as pool:
        threads = lib.num_threads()

        def ours():
            return [r for b in labeller.map(batches) for r in b]

        def pyscf_processes():
            return pool.starmap(pyscf_label, [(a, density_fit) for a in atoms], chunksize=1)

        def pyscf_threads():
            lib.num_threads(n)
            try:
                return [pyscf_label(a, density_fit) for a in atoms]
            finally:
                lib.num_threads(threads)

        fns = {"ours": ours, "pyscf_processes": pyscf_processes, "pyscf_threads": pyscf_threads}
        rounds = time_rounds(fns, repeat=repeat, min_seconds=0.0, warmup=1)
        labels, reference = ours(), pyscf_processes()
    ordered = [labels[order.index(i)] for i in range(len(atoms))]
    return {
        "rounds": rounds,
        "energy_mev": [
            abs(r["energy"] - e) * HARTREE_EV * 1e3 for r, (e, _, _) in zip(ordered, reference, strict=True)
        ],
        "gap_mev": [abs(r["gap"] - g) * 1e3 for r, (_, g, _) in zip(ordered, reference, strict=True)],
        "ours_iterations": [r["iterations"] for r in ordered],
        "pyscf_cycles": [c for _, _, c in reference],
        "cores": n,
    }


def _span(values) -> str:
    return f"{min(values)}-{max(values)}" if min(values) != max(values) else f"{values[0]}"


@section("qm1b")
def bench_qm1b(size: str) -> list[Comparison]:
    """Conformers per second labelling QM1B-sized molecules (9 heavy atoms, ~60 AOs, ~18k grid points): our
    generator's float32 DFT against PySCF converged to the same accuracy, exact and density-fitted ERIs, on all the
    machine's cores (module docstring)."""
    import numpy as np

    # tiny: 2 conformers of 2 molecules of 3 heavy atoms; full: 16 conformers of 4 QM1B-sized molecules
    molecules, count, heavy, repeat = by_size(size, tiny=(2, 2, 3, 2), quick=(2, 2, 9, 3), full=(4, 4, 9, 5))
    atoms = conformers(molecules, count, heavy)
    rows = []
    for density_fit in (False, True):
        m = measure(atoms, density_fit=density_fit, repeat=repeat, batch=8)
        r = {k: np.asarray(v) / len(atoms) for k, v in m["rounds"].items()}  # seconds per conformer
        peer = np.minimum(r["pyscf_processes"], r["pyscf_threads"])  # PySCF's faster layout, round by round
        ratio = peer / r["ours"]
        fit = ", density fitted (PySCF's density_fit() auxiliary basis)" if density_fit else ""
        rows.append(
            Comparison(
                "qm1b",
                f"label a conformer of a {heavy}-heavy-atom QM9 molecule{fit}",
                f"our generator's DFT: float32 SCF until converged ({_span(m['ours_iterations'])} iterations), "
                f"{m['cores']} worker processes preparing integrals ahead, batches of 8",
                f"PySCF dft.RKS at conv_tol 1e-9 ({_span(m['pyscf_cycles'])} cycles), the faster of {m['cores']} "
                f"single-threaded processes ({np.median(r['pyscf_processes']):.3f} s) and one process of "
                f"{m['cores']} threads ({np.median(r['pyscf_threads']):.3f} s)",
                float(np.median(r["ours"])),
                float(np.median(peer)),
                f"{len(atoms)} conformers, median of {repeat} interleaved rounds (peer/ours per round "
                f"{ratio.min():.2f}-{ratio.max():.2f}x); {m['cores']} cores each; ours vs PySCF on these conformers: "
                f"energy max {max(m['energy_mev']):.4f} meV, gap max {max(m['gap_mev']):.3f} meV",
            )
        )
    return rows

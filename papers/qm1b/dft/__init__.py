"""Restricted Kohn-Sham B3LYP in JAX, the way QM1B labelled its conformers (PySCFIPU): integrals, grid and guess
from PySCF on the host (papers.qm1b.dft.molecule), a fixed number of SCF iterations with DIIS under jit
(papers.qm1b.dft.scf), the B3LYP functional in JAX (papers.qm1b.dft.xc).

`run_dft(atom)` labels one conformer; `run_dft_batch(atoms)` labels conformers of one molecule at once (vmap over
one compiled SCF, reused for every batch of the same shapes). Results follow QM1B: the energy is the mean of the
last 5 iterations' energies, `energy_std` their standard deviation (eV; QM1B drops rows above 0.01 eV), HOMO and
LUMO come from the last Fock matrix diagonalised in float64. In float32 the SCF runs in float32 and those 5
energies are recomputed in float64 on the host from the iterations' densities (`energies_float64`, as PySCFIPU
does): a float32 sum of ~1e2 Hartree terms carries ~1e-5 relative error, several meV.
"""

from __future__ import annotations

import jax
import numpy as np
import scipy.linalg

from core.data.molecules import HARTREE_EV
from papers.qm1b.dft.molecule import Problem, build_problem, parse_molecule
from papers.qm1b.dft.scf import ENERGY_TAIL, packed_eri_size, scf_batch, xc_energy
from papers.qm1b.dft.xc import HF_EXCHANGE

XCS = ("b3lyp5",)
DTYPES = ("float32", "float64")
CONVERGED_STD_EV = 0.01  # QM1B's row filter: papers/qm1b/REFERENCES.md [3]


def _check(xc: str, dtype: str, iterations: int, grid_level: int) -> None:
    if xc not in XCS:
        raise ValueError(f"xc={xc!r} is not supported: allowed are {XCS}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: allowed are {DTYPES}")
    if not isinstance(iterations, int) or iterations < 5:
        raise ValueError(f"iterations={iterations!r} must be an integer >= 5 (the energy is the mean of the last 5)")
    if not isinstance(grid_level, int) or not 0 <= grid_level <= 9:
        raise ValueError(f"grid_level={grid_level!r} must be an integer in [0, 9] (PySCF's grid levels)")


AO_BUCKET = 8  # AO and grid counts are rounded up to these multiples, so molecules of similar size share one
GRID_BUCKET = 2048  # compiled SCF (a compilation costs ~1 s; a dataset has thousands of molecules)
GHOST_LEVEL = 10.0  # Hartree: the orbital energy of a padding AO, far above STO-3G's virtual orbitals


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def _stack(problems: list[Problem], dtype, n_ao: int | None = None, n_grid: int | None = None) -> tuple:
    """Batch arrays padded to n_ao AOs and n_grid points. Padding AOs are ghosts: orthonormal (S = 1), decoupled
    (zero ERIs, AO values and couplings) with orbital energy GHOST_LEVEL, so they are never occupied and the real
    block of every matrix is unchanged. Padding grid points have zero weight and AO values."""
    n = n_ao or max(p.n_ao for p in problems)
    G = n_grid or max(p.n_grid for p in problems)

    def pad(p: Problem):
        k = n - p.n_ao
        S = np.block([[p.S, np.zeros((p.n_ao, k))], [np.zeros((k, p.n_ao)), np.eye(k)]])
        H = np.block([[p.H, np.zeros((p.n_ao, k))], [np.zeros((k, p.n_ao)), GHOST_LEVEL * np.eye(k)]])
        return H, S, np.pad(p.D0, ((0, k), (0, k)))

    B = len(problems)
    ao = np.zeros((B, 4, G, n), dtype)  # written in place: np.pad and astype would copy ~100 MB per conformer
    weights = np.zeros((B, G), dtype)
    eri8 = np.zeros((B, packed_eri_size(n)), dtype)  # padding AOs index past the real entries
    for b, p in enumerate(problems):
        ao[b, :, : p.n_grid, : p.n_ao] = p.ao
        weights[b, : p.n_grid] = p.weights
        eri8[b, : p.eri8.size] = p.eri8
    H, S, D0 = (np.stack(x).astype(dtype) for x in zip(*(pad(p) for p in problems), strict=True))
    e_nuc = np.array([p.e_nuc for p in problems], dtype)
    return H, S, eri8, ao, weights, e_nuc, D0, np.array([p.n_occ for p in problems], np.int32)


PURIFY_STEPS = 2
_XC_ENERGIES = jax.jit(jax.vmap(xc_energy, in_axes=(0, None, None)))


def energies_float64(p: Problem, densities, n_ao: int | None = None, n_grid: int | None = None) -> np.ndarray:
    """E(D) in float64 for each density [k, n, n] (n >= the molecule's AOs; ghost rows and columns are ignored):
    tr(D H) + 1/2 tr(D (J - a/2 K)) + E_xc + E_nuc, the SCF's terms (papers.qm1b.dft.scf), with J and K from the
    unpacked ERIs and E_xc from our functional in float64. The grid is padded to `n_grid` zero-weight points and
    the AOs to `n_ao` ghosts (zero values), so molecules sharing the SCF's padded shapes share one compiled E_xc."""
    from pyscf import ao2mo

    n = p.n_ao
    P = 0.5 * np.asarray(densities, np.float64)[:, :n, :n]
    for _ in range(PURIFY_STEPS):  # McWeeny: the float32 density's non-idempotency is a first-order energy error
        PS = P @ p.S
        P = 3 * PS @ P - 2 * PS @ PS @ P
    D = 2 * P
    eri = ao2mo.restore(1, p.eri8, n)  # (ij|kl), [n, n, n, n]
    J = np.tensordot(D, eri, axes=([1, 2], [2, 3]))  # sum_kl (ij|kl) D_kl
    K = np.tensordot(D, eri, axes=([1, 2], [1, 3]))  # sum_kl (ik|jl) D_kl
    G = J - 0.5 * HF_EXCHANGE * K
    N, Gp = n_ao or n, n_grid or p.n_grid
    ao = np.zeros((4, Gp, N))
    ao[:, : p.n_grid, :n] = p.ao
    weights = np.pad(p.weights, (0, Gp - p.n_grid))
    Dp = np.zeros((len(D), N, N))
    Dp[:, :n, :n] = D
    with jax.enable_x64(True):
        e_xc = np.asarray(_XC_ENERGIES(Dp, ao, weights))
    return np.einsum("xij,ij->x", D, p.H) + 0.5 * np.einsum("xij,xij->x", D, G) + e_xc + p.e_nuc


def _result(p: Problem, energies: np.ndarray, F: np.ndarray, last: np.ndarray | None = None) -> dict:
    """`last`: the last ENERGY_TAIL energies in float64 (default: those of `energies`)."""
    energies = np.asarray(energies, np.float64)
    last = energies[-ENERGY_TAIL:] if last is None else np.asarray(last, np.float64)
    n = p.n_ao
    eps = scipy.linalg.eigh(np.asarray(F, np.float64)[:n, :n], p.S, eigvals_only=True) * HARTREE_EV
    homo, lumo = float(eps[p.n_occ - 1]), float(eps[p.n_occ]) if p.n_occ < p.n_ao else float("nan")
    std = float(np.std(last) * HARTREE_EV)
    return {
        "energy": float(np.mean(last)),
        "homo": homo,
        "lumo": lumo,
        "gap": lumo - homo,
        "n_ao": p.n_ao,
        "n_grid": p.n_grid,
        "energy_std": std,
        "converged": bool(std < CONVERGED_STD_EV),
        "energies": energies.tolist(),
    }


def run_dft_batch(
    atoms: list[str],
    *,
    basis: str = "sto-3g",
    xc: str = "b3lyp5",
    grid_level: int = 0,
    iterations: int = 20,
    dtype: str = "float32",
) -> list[dict]:
    """Label conformers together (usually of one molecule; any closed-shell molecules work, padded to common
    shapes). Returns one dict per conformer:
    energy (Hartree), homo, lumo, gap (eV), n_ao, n_grid, energy_std (eV), converged, energies (per iteration)."""
    _check(xc, dtype, iterations, grid_level)
    if not atoms:
        raise ValueError("atoms is empty: give at least one atom string")
    problems = [build_problem(a, basis, grid_level) for a in atoms]
    n_ao = _round_up(max(p.n_ao for p in problems), AO_BUCKET)
    n_grid = _round_up(max(p.n_grid for p in problems), GRID_BUCKET)
    if dtype == "float64":
        with jax.enable_x64(True):
            energies, _, F = scf_batch(*_stack(problems, np.float64, n_ao, n_grid), iterations=iterations)
            energies, F = np.asarray(energies), np.asarray(F)
        return [_result(p, e, f) for p, e, f in zip(problems, energies, F, strict=True)]
    energies, densities, F = scf_batch(*_stack(problems, np.float32, n_ao, n_grid), iterations=iterations)
    energies, densities, F = np.asarray(energies), np.asarray(densities), np.asarray(F)
    return [
        _result(p, e, f, energies_float64(p, d, n_ao, n_grid))
        for p, e, d, f in zip(problems, energies, densities, F, strict=True)
    ]


def run_dft(
    atom: str,
    *,
    basis: str = "sto-3g",
    xc: str = "b3lyp5",
    grid_level: int = 0,
    iterations: int = 20,
    dtype: str = "float32",
) -> dict:
    """Label one conformer given as a PySCF atom string in Angstrom ("O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59")."""
    return run_dft_batch([atom], basis=basis, xc=xc, grid_level=grid_level, iterations=iterations, dtype=dtype)[0]


__all__ = ["HARTREE_EV", "build_problem", "parse_molecule", "run_dft", "run_dft_batch"]

"""Restricted Kohn-Sham B3LYP in JAX, the way QM1B labelled its conformers (PySCFIPU): integrals (exact or density
fitted), grid and guess from PySCF on the host (papers.qm1b.dft.molecule), the SCF with DIIS under jit, at most
`iterations` steps and stopping once converged (papers.qm1b.dft.scf), the B3LYP functional in JAX
(papers.qm1b.dft.xc).

`run_dft(atom)` labels one conformer; `run_dft_batch(atoms)` labels conformers together (vmap over one compiled SCF,
reused for every batch of the same padded shapes); `dispatch` and `finish` split that in two for
papers.qm1b.dft.pipeline. Results follow QM1B: the energy is the mean of the last 5 iterations' energies,
`energy_std` their standard deviation (eV; QM1B drops rows above 0.01 eV), HOMO and LUMO come from the final Fock
matrix. The SCF runs in `dtype`; those 5 energies and the final Fock matrix are recomputed in float64 on the host
from the densities (`finish_float64`, as PySCFIPU recomputes its energies): a float32 sum of ~1e2 Hartree terms
carries ~1e-5 relative error, several meV.

The labeller's public pieces (a library: nothing here depends on the reproduction):
    run_dft(atom, ...)              one conformer, a PySCF atom string in Angstrom -> energy (Hartree), HOMO, LUMO,
                                    gap (eV), energy_std (eV), convergence
    run_dft_batch(atoms, ...)       many conformers through one compiled SCF (padded to bucketed shapes)
    dispatch, finish, solve         the same in two steps (start the SCF, then finish on the host), for pipelines
    papers.qm1b.dft.pipeline.Labeller   batches labelled with their host preparation in worker processes
    papers.qm1b.dft.molecule        a molecule to PySCF's integrals, grid and guess (`build_problem`)
    papers.qm1b.dft.scf, .xc        the SCF with DIIS under jit; B3LYP (VWN5) in JAX
    basis_aos, check_exact_eri      checks to run before any work: a basis PySCF knows, covering the elements; a
                                    largest molecule whose exact ERIs fit (EXACT_ERI_BYTES); from papers.qm1b.checks,
                                    which holds them without JAX
    is_systematic(exception)        an error of the machine (memory, a dead worker), never one molecule's drop
Options: basis (STO-3G as QM1B), xc (XCS), grid_level, iterations (QM1B ran 20), dtype (DTYPES), density_fit,
early_stop. `python -m papers.qm1b.label` labels your own molecules (SMILES, XYZ, SDF) into Parquet.
"""

from __future__ import annotations

import jax
import numpy as np
import scipy.linalg

from core.data.molecules import HARTREE_EV
from papers.qm1b.checks import (  # the checks made before any work, without JAX; re-exported here
    AO_BUCKET,
    basis_aos,  # noqa: F401
    check_exact_eri,
    is_systematic,  # noqa: F401
)
from papers.qm1b.dft.molecule import Problem, build_problem, parse_molecule
from papers.qm1b.dft.scf import packed_eri_size, scf_batch
from papers.qm1b.dft.xc import HF_EXCHANGE, b3lyp5

XCS = ("b3lyp5",)
DTYPES = ("float32", "float64")
CONVERGED_STD_EV = 0.01  # QM1B's row filter: papers/qm1b/REFERENCES.md [3]


def check_options(xc: str, dtype: str, iterations: int, grid_level: int) -> None:
    if xc not in XCS:
        raise ValueError(f"xc={xc!r} is not supported: allowed are {XCS}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: allowed are {DTYPES}")
    if not isinstance(iterations, int) or iterations < 5:
        raise ValueError(f"iterations={iterations!r} must be an integer >= 5 (the energy is the mean of the last 5)")
    if not isinstance(grid_level, int) or not 0 <= grid_level <= 9:
        raise ValueError(f"grid_level={grid_level!r} must be an integer in [0, 9] (PySCF's grid levels)")


GRID_BUCKET = 2048  # AO (checks.AO_BUCKET) and grid counts are rounded up to these multiples, so molecules of similar
# size share one compiled SCF (a compilation costs ~1 s; a dataset has thousands of molecules)
AUX_BUCKET = 64
GHOST_LEVEL = 10.0  # Hartree: the orbital energy of a padding AO, far above STO-3G's virtual orbitals


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def _stack(problems: list[Problem], dtype, n_ao: int | None = None, n_grid: int | None = None) -> tuple:
    """Batch arrays padded to n_ao AOs and n_grid points (fitted integrals: to a multiple of AUX_BUCKET auxiliary
    functions). Padding AOs are ghosts: orthonormal (S = 1), decoupled (zero ERIs, AO values and couplings) with
    orbital energy GHOST_LEVEL, so they are never occupied and the real block of every matrix is unchanged. Padding
    grid points have zero weight and AO values; padding auxiliary functions have zero integrals."""
    n = n_ao or max(p.n_ao for p in problems)
    G = n_grid or max(p.n_grid for p in problems)
    fitted = {p.density_fit for p in problems}
    if len(fitted) > 1:
        raise ValueError("a batch mixes exact and density-fitted integrals: label them in separate batches")

    def pad(p: Problem):
        k = n - p.n_ao
        S = np.block([[p.S, np.zeros((p.n_ao, k))], [np.zeros((k, p.n_ao)), np.eye(k)]])
        H = np.block([[p.H, np.zeros((p.n_ao, k))], [np.zeros((k, p.n_ao)), GHOST_LEVEL * np.eye(k)]])
        L0 = _factor(p.D0)  # the guess as a factor D0 = L0 L0^T (papers.qm1b.dft.scf.run_scf)
        return H, S, np.pad(L0, ((0, k), (0, k)))

    B = len(problems)
    ao = np.zeros((B, 4, G, n), dtype)  # written in place: np.pad and astype would copy ~100 MB per conformer
    weights = np.zeros((B, G), dtype)
    if fitted == {True}:  # padding AOs index past the real pairs, padding auxiliary functions are zero rows
        eri = np.zeros((B, _round_up(max(p.n_aux for p in problems), AUX_BUCKET), n * (n + 1) // 2), dtype)
    else:  # padding AOs index past the real entries
        eri = np.zeros((B, packed_eri_size(n)), dtype)
    for b, p in enumerate(problems):
        ao[b, :, : p.n_grid, : p.n_ao] = p.ao
        weights[b, : p.n_grid] = p.weights
        if p.density_fit:
            eri[b, : p.n_aux, : p.eri.shape[1]] = p.eri
        else:
            eri[b, : p.eri.size] = p.eri
    H, S, L0 = (np.stack(x).astype(dtype) for x in zip(*(pad(p) for p in problems), strict=True))
    e_nuc = np.array([p.e_nuc for p in problems], dtype)
    return H, S, eri, ao, weights, e_nuc, L0, np.array([p.n_occ for p in problems], np.int32)


PURIFY_STEPS = 2


@jax.jit
def _functional(rho, sigma):
    """Per grid point: b3lyp5 and its derivatives in rho and sigma (rho, sigma of any shape)."""
    e, (v_rho, v_sigma) = jax.vmap(jax.value_and_grad(b3lyp5, (0, 1)))(rho.reshape(-1), sigma.reshape(-1))
    return e.reshape(rho.shape), v_rho.reshape(rho.shape), v_sigma.reshape(rho.shape)


def _xc_float64(p: Problem, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E_xc of each density D [k, n, n], V_xc of the last) in float64 on the host: the SCF's formulas
    (papers.qm1b.dft.scf.xc_potential) with numpy's matrix products and our functional under JAX in float64. The
    points are padded to a multiple of GRID_BUCKET with zero density (which the functional ignores), so conformers
    share one compiled functional."""
    phi, dphi = p.ao[0], p.ao[1:4]
    k, n = len(D), p.n_ao
    Dphi = (phi @ D.transpose(1, 0, 2).reshape(n, k * n)).reshape(-1, k, n)  # [G, k, n], one matrix product
    rho = np.einsum("gxn,gn->xg", Dphi, phi)
    grad = np.stack([2 * np.einsum("gxn,gn->xg", Dphi, dphi[d]) for d in range(3)], 1)  # [k, 3, G]
    G = _round_up(p.n_grid, GRID_BUCKET)
    padded = np.zeros((2, len(D), G))
    padded[0, :, : p.n_grid], padded[1, :, : p.n_grid] = rho, np.sum(grad**2, 1)
    with jax.enable_x64(True):
        e, v_rho, v_sigma = (np.asarray(x)[:, : p.n_grid] for x in _functional(padded[0], padded[1]))
    w = p.weights
    c = 2 * w * v_sigma[-1] * grad[-1]  # [3, G]
    A = (w * v_rho[-1] / 2)[:, None] * phi + sum(c[d][:, None] * dphi[d] for d in range(3))
    M = phi.T @ A
    return e @ w, M + M.T


def _factor(D: np.ndarray, rank: int | None = None) -> np.ndarray:
    """L [n, rank] with D = L L^T for a positive semi-definite D (rank: the eigenvectors kept, largest eigenvalues
    first; a closed-shell density has rank n_occ; default all n)."""
    s, U = np.linalg.eigh(D)
    rank = rank or len(s)
    return U[:, -rank:] * np.sqrt(np.clip(s[-rank:], 0, None))


def _two_electron_float64(p: Problem, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1/2 tr(D (J - a/2 K)) for each density D [k, n, n], J - a/2 K of the last one) in float64 on the host: from
    the packed ERIs with PySCF's incore J/K (`scf.hf.dot_eri_dm`), or from the fitted ones with D = L L^T, so that
    tr(D K) = sum_P |L^T B_P L|^2 and K = sum_P (B_P L)(B_P L)^T (naux n^2 n_occ work, not naux n^3)."""
    if not p.density_fit:
        from pyscf.scf.hf import dot_eri_dm

        J, K = dot_eri_dm(p.eri, D, hermi=1)
        G = J - 0.5 * HF_EXCHANGE * K
        return 0.5 * np.einsum("xij,xij->x", D, G), G[-1]
    from pyscf import lib

    n, naux = p.n_ao, p.n_aux
    B = lib.unpack_tril(p.eri)  # [naux, n, n]
    t = B.reshape(naux, -1) @ D.reshape(len(D), -1).T  # [naux, k]: tr(B_P D)
    e_k = []
    for d in D:
        L = _factor(d, p.n_occ)
        BL = (B.reshape(-1, n) @ L).reshape(naux, n, -1).transpose(1, 0, 2).reshape(n, -1)  # [n, naux k]
        e_k.append(np.sum((L.T @ BL) ** 2))
    energies = 0.5 * (np.sum(t**2, 0) - 0.5 * HF_EXCHANGE * np.array(e_k))
    J = (t[:, -1] @ B.reshape(naux, -1)).reshape(n, n)
    return energies, J - 0.5 * HF_EXCHANGE * (BL @ BL.T)


def finish_float64(p: Problem, densities, D) -> tuple[np.ndarray, np.ndarray]:
    """(E of each density [k, n, n], the Fock matrix F of the final density D [n, n]) in float64 on the host, as
    PySCFIPU recomputes its energies (n >= the molecule's AOs; ghost rows and columns are ignored). The terms are the
    SCF's (papers.qm1b.dft.scf): tr(D H) + 1/2 tr(D (J - a/2 K)) + E_xc + E_nuc and F = H + J - a/2 K + V_xc, with
    E_xc and V_xc from our functional in float64. Each density is first purified (McWeeny, PURIFY_STEPS): a float32
    density's non-idempotency is a first-order energy error."""
    n = p.n_ao
    P = 0.5 * np.concatenate([np.asarray(densities, np.float64), np.asarray(D, np.float64)[None]])[:, :n, :n]
    for _ in range(PURIFY_STEPS):
        PS = P @ p.S
        P = 3 * PS @ P - 2 * PS @ PS @ P
    D = 2 * P
    e_2e, G = _two_electron_float64(p, D)
    e_xc, V = _xc_float64(p, D)
    energies = np.einsum("xij,ij->x", D, p.H) + e_2e + e_xc + p.e_nuc
    return energies[:-1], p.H + G + V


def _result(p: Problem, energies: np.ndarray, steps: int, last: np.ndarray, F: np.ndarray) -> dict:
    """`energies`: per step (NaN past `steps`); `last`: the last ENERGY_TAIL energies and F the final Fock matrix,
    in float64 (finish_float64)."""
    energies = np.asarray(energies, np.float64)[:steps]
    n = p.n_ao
    eps = scipy.linalg.eigh(F[:n, :n], p.S, eigvals_only=True) * HARTREE_EV
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
        "iterations": int(steps),
        "energies": energies.tolist(),
    }


def dispatch(problems: list[Problem], *, iterations: int = 20, dtype: str = "float32", early_stop: bool = True):
    """Start the SCF of prepared problems, batched (padded to shared bucketed shapes); JAX returns before it has
    finished, so the host can work meanwhile. Returns what `finish` takes."""
    n_ao = _round_up(max(p.n_ao for p in problems), AO_BUCKET)
    n_grid = _round_up(max(p.n_grid for p in problems), GRID_BUCKET)
    if not problems[0].density_fit:
        check_exact_eri(max(p.n_ao for p in problems), dtype)
    width = min(_round_up(max(p.n_occ for p in problems), AO_BUCKET), n_ao)
    options = {"iterations": iterations, "early_stop": early_stop, "width": width}
    with jax.enable_x64(dtype == "float64"):
        out = scf_batch(*_stack(problems, np.dtype(dtype), n_ao, n_grid), **options)
    return out, n_ao, n_grid


def finish(problems: list[Problem], started) -> list[dict]:
    """Wait for a dispatched SCF, then each conformer's last energies and final Fock matrix in float64 on the host;
    results as run_dft_batch returns them."""
    energies, tails, finals, steps, _ = (np.asarray(x) for x in started[0])
    results = []
    for p, e, tail, D, k in zip(problems, energies, tails, finals, steps, strict=True):
        last, F = finish_float64(p, tail, D)
        results.append(_result(p, e, k, last, F))
    return results


def solve(problems: list[Problem], *, iterations: int = 20, dtype: str = "float32", early_stop: bool = True):
    """The SCF of prepared problems and their results (run_dft_batch's)."""
    return finish(problems, dispatch(problems, iterations=iterations, dtype=dtype, early_stop=early_stop))


def run_dft_batch(
    atoms: list[str],
    *,
    basis: str = "sto-3g",
    xc: str = "b3lyp5",
    grid_level: int = 0,
    iterations: int = 20,
    dtype: str = "float32",
    density_fit: bool = False,
    early_stop: bool = True,
) -> list[dict]:
    """Label conformers together (any closed-shell molecules, padded to common shapes). At most `iterations` SCF
    steps, fewer when `early_stop` and converged (papers.qm1b.dft.scf.stop_rule; QM1B ran 20 fixed: early_stop=
    False); `density_fit` fits the ERIs as PySCF's `density_fit()` does. Returns one dict per conformer: energy
    (Hartree), homo, lumo, gap (eV), n_ao, n_grid, energy_std (eV), converged, iterations, energies (per step)."""
    check_options(xc, dtype, iterations, grid_level)
    if not atoms:
        raise ValueError("atoms is empty: give at least one atom string")
    problems = [build_problem(a, basis, grid_level, density_fit) for a in atoms]
    return solve(problems, iterations=iterations, dtype=dtype, early_stop=early_stop)


def run_dft(
    atom: str,
    *,
    basis: str = "sto-3g",
    xc: str = "b3lyp5",
    grid_level: int = 0,
    iterations: int = 20,
    dtype: str = "float32",
    density_fit: bool = False,
    early_stop: bool = True,
) -> dict:
    """Label one conformer given as a PySCF atom string in Angstrom ("O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59");
    the options are run_dft_batch's."""
    options = {"iterations": iterations, "dtype": dtype, "density_fit": density_fit, "early_stop": early_stop}
    return run_dft_batch([atom], basis=basis, xc=xc, grid_level=grid_level, **options)[0]


__all__ = ["HARTREE_EV", "build_problem", "parse_molecule", "run_dft", "run_dft_batch"]


IPU_MOLECULE = "CCCCCCO"  # hexan-1-ol, C6H14O: 7 heavy atoms and 14 hydrogens, the largest the default run admits


def ipu_steps(cfg) -> list:
    """The labelling step (`scf_batch`, as `dispatch` starts it: the batched SCF with its loop of iterations) of
    batch_conformers conformers at the run's DFT settings, for the simulated IPU (ipu_model.steps); the shapes are a
    batch of one molecule as large as the run's selection admits (IPU_MOLECULE, embedded by RDKit, seed 0), padded
    to the buckets `dispatch` pads to."""
    import functools

    from rdkit import Chem
    from rdkit.Chem import AllChem

    from ipu_model.steps import Step

    c = cfg.qm1b
    mol = Chem.AddHs(Chem.MolFromSmiles(IPU_MOLECULE))
    AllChem.EmbedMolecule(mol, randomSeed=0)
    xyz = mol.GetConformer().GetPositions()
    atom = "; ".join(
        f"{a.GetSymbol()} {x:.6f} {y:.6f} {z:.6f}" for a, (x, y, z) in zip(mol.GetAtoms(), xyz, strict=True)
    )
    problem = build_problem(atom, c.dft.basis, c.dft.grid_level, c.dft.density_fit)
    n_ao, n_grid = _round_up(problem.n_ao, AO_BUCKET), _round_up(problem.n_grid, GRID_BUCKET)
    arrays = _stack([problem] * c.data.batch_conformers, np.dtype(c.dft.dtype), n_ao, n_grid)
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays)
    width = min(_round_up(problem.n_occ, AO_BUCKET), n_ao)
    options = {"iterations": c.dft.iterations, "early_stop": c.dft.early_stop, "width": width}
    return [
        Step(
            "SCF of a batch",
            functools.partial(scf_batch, **options),
            shapes,
            f"{c.data.batch_conformers} conformers of {n_ao} AOs (C6H14O: {problem.n_ao}), {n_grid} grid points, "
            f"{c.dft.xc}/{c.dft.basis}, {c.dft.dtype}, at most {c.dft.iterations} iterations",
            paper_figure="at least ~27k conformers per IPU-hour over QM1B's 1.07B (datasheet; REFERENCES.md [4]): "
            "context, molecules of up to 9 heavy atoms",
        )
    ]

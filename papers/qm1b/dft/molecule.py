"""The host side of the DFT: a molecule's integrals, grid and initial guess from PySCF (libcint), as numpy arrays.

As in QM1B's PySCFIPU, libcint computes the one- and two-electron integrals and PySCF builds the grid and the AO
values on it; the SCF iterations then run on the accelerator (papers.qm1b.dft.scf)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """Everything the SCF needs for one conformer (float64 numpy)."""

    S: np.ndarray  # [n, n] overlap
    H: np.ndarray  # [n, n] core Hamiltonian T + V
    eri8: np.ndarray  # (ij|kl) in PySCF's 8-fold packed layout ("s8"): [P (P + 1) / 2], P = n (n + 1) / 2
    ao: np.ndarray  # [4, G, n] AO values and their x, y, z derivatives on the grid
    weights: np.ndarray  # [G]
    D0: np.ndarray  # [n, n] initial density matrix (MINAO)
    e_nuc: float
    n_occ: int

    @property
    def n_ao(self) -> int:
        return self.S.shape[0]

    @property
    def n_grid(self) -> int:
        return self.weights.shape[0]


def parse_molecule(atom: str, basis: str):
    """A PySCF Mole for a neutral closed-shell molecule, or a ValueError that says what is wrong."""
    from pyscf import gto

    if not isinstance(atom, str) or not atom.strip():
        raise ValueError(f"atom={atom!r}: expected a PySCF atom string such as 'O 0 0 0; H 0 0.76 0.59'")
    try:
        mol = gto.M(atom=atom, basis=basis, unit="Angstrom", charge=0, spin=None, verbose=0)
    except (KeyError, ValueError, RuntimeError, IndexError, TypeError, AttributeError) as e:
        raise ValueError(f"atom={atom[:80]!r} basis={basis!r}: PySCF cannot build this molecule ({e})") from e
    if mol.nelectron % 2:
        raise ValueError(
            f"atom={atom[:80]!r} has {mol.nelectron} electrons: restricted Kohn-Sham needs a closed shell "
            "(an even number of electrons, neutral)"
        )
    if mol.nao == 0:
        raise ValueError(f"basis={basis!r} has no functions for the atoms of {atom[:80]!r}")
    return mol


def build_problem(atom: str, basis: str = "sto-3g", grid_level: int = 0) -> Problem:
    """Integrals (libcint), the grid PySCF's RKS would use at `grid_level`, AO values, MINAO guess."""
    from pyscf import dft, scf

    mol = parse_molecule(atom, basis)
    grids = dft.gen_grid.Grids(mol)
    grids.level = grid_level
    grids.build()
    return Problem(
        S=mol.intor("int1e_ovlp"),
        H=mol.intor("int1e_kin") + mol.intor("int1e_nuc"),
        eri8=mol.intor("int2e", aosym="s8"),  # 8-fold symmetric: ~7x faster than the full tensor, 8x smaller
        ao=mol.eval_gto("GTOval_sph_deriv1", grids.coords),
        weights=np.asarray(grids.weights),
        D0=scf.hf.init_guess_by_minao(mol),
        e_nuc=float(mol.energy_nuc()),
        n_occ=mol.nelectron // 2,
    )

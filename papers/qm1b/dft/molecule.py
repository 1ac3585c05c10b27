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
    eri: np.ndarray  # exact: (ij|kl) in PySCF's 8-fold packed layout ("s8"), [P (P + 1) / 2], P = n (n + 1) / 2;
    # density fitted: B = L^-1 (Q|ij), PySCF's cderi, [naux, P]
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

    @property
    def density_fit(self) -> bool:
        return self.eri.ndim == 2

    @property
    def n_aux(self) -> int:
        return self.eri.shape[0] if self.density_fit else 0


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


def fitted_eri(mol, xc: str = "b3lyp5") -> np.ndarray:
    """The density-fitted ERIs PySCF's `dft.RKS(mol, xc).density_fit()` uses: its default auxiliary basis for the
    orbital basis and functional (`df.make_auxbasis`; def2-svp-jkfit for STO-3G and B3LYP) and its Cholesky
    factorisation of the 3-centre integrals (`df.incore.cholesky_eri`), [naux, n (n + 1) / 2]."""
    from pyscf import df

    auxmol = df.addons.make_auxmol(mol, df.make_auxbasis(mol, xc=xc))
    return df.incore.cholesky_eri(mol, auxmol=auxmol)


def build_problem(atom: str, basis: str = "sto-3g", grid_level: int = 0, density_fit: bool = False) -> Problem:
    """Integrals (libcint; exact or density fitted), the grid PySCF's RKS would use at `grid_level`, AO values,
    MINAO guess."""
    from pyscf import dft, scf

    mol = parse_molecule(atom, basis)
    grids = dft.gen_grid.Grids(mol)
    grids.level = grid_level
    grids.build()
    return Problem(
        S=mol.intor("int1e_ovlp"),
        H=mol.intor("int1e_kin") + mol.intor("int1e_nuc"),
        # 8-fold symmetric: ~7x faster than the full tensor, 8x smaller
        eri=fitted_eri(mol) if density_fit else mol.intor("int2e", aosym="s8"),
        ao=mol.eval_gto("GTOval_sph_deriv1", grids.coords),
        weights=np.asarray(grids.weights),
        D0=scf.hf.init_guess_by_minao(mol),
        e_nuc=float(mol.energy_nuc()),
        n_occ=mol.nelectron // 2,
    )

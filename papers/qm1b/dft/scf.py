"""Restricted Kohn-Sham SCF in JAX: a fixed number of iterations with Pulay DIIS, as QM1B ran it on the IPU.

The total energy of a density matrix D (closed shell, D = 2 C_occ C_occ^T) is

    E(D) = tr(D H) + 1/2 tr(D J[D]) - a/4 tr(D K[D]) + sum_g w_g e_xc(rho_g, sigma_g) + E_nuc,
    J[D]_ij = sum_kl (ij|kl) D_kl,   K[D]_ij = sum_kl (ik|jl) D_kl,
    rho_g = sum_ij D_ij phi_i(r_g) phi_j(r_g),   sigma_g = |grad rho_g|^2,

with a = 0.2 for B3LYP. The Kohn-Sham (Fock) matrix is its gradient, F = dE/dD, so jax.grad gives the exchange-
correlation potential matrix without hand-written functional derivatives. Each iteration: F from D, DIIS over the
last 9 (F, error FDS - SDF) pairs, diagonalisation in the orthonormal basis X = S^(-1/2), the next D from the lowest
n_occ orbitals.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from papers.qm1b.dft.xc import HF_EXCHANGE, b3lyp5

DIIS_SPACE = 9


def energy(D, H, eri, ao, weights, e_nuc):
    """E(D) above; ao [4, G, n] holds the AO values and their gradients on the grid."""
    J = jnp.einsum("ijkl,kl->ij", eri, D)
    K = jnp.einsum("ikjl,kl->ij", eri, D)
    phi, dphi = ao[0], ao[1:4]
    Dphi = phi @ D  # [G, n]: sum_i phi_i D_ij
    rho = jnp.sum(Dphi * phi, -1)
    grad_rho = 2 * jnp.sum(dphi * Dphi[None], -1)  # [3, G] (D symmetric)
    sigma = jnp.sum(grad_rho**2, 0)
    e_xc = jnp.sum(weights * b3lyp5(rho, sigma))
    return jnp.sum(D * H) + 0.5 * jnp.sum(D * J) - 0.25 * HF_EXCHANGE * jnp.sum(D * K) + e_xc + e_nuc


def fock(D, H, eri, ao, weights, e_nuc):
    """(E(D), F = dE/dD symmetrised: the gradient is taken for a general D, F is its symmetric part)."""
    E, G = jax.value_and_grad(energy)(D, H, eri, ao, weights, e_nuc)
    return E, (G + G.T) / 2


def orthonormaliser(S):
    """X = S^(-1/2), so that X^T S X = 1."""
    s, U = jnp.linalg.eigh(S)
    return (U / jnp.sqrt(s)) @ U.T


def diis(Fs, errors, count):
    """Pulay's extrapolation over the stored (F, error) pairs: F = sum_i c_i F_i minimising |sum_i c_i e_i| with
    sum_i c_i = 1. Slots not yet filled (index >= count) get c_i = 0."""
    m = Fs.shape[0]
    valid = jnp.arange(m) < count
    B = jnp.einsum("iab,jab->ij", errors, errors)
    scale = jnp.max(jnp.where(valid, jnp.diagonal(B), 0.0))
    scale = jnp.where(scale > 0, scale, 1.0)
    B = jnp.where(valid[:, None] & valid[None, :], B / scale, jnp.eye(m, dtype=B.dtype))
    A = jnp.zeros((m + 1, m + 1), B.dtype).at[:m, :m].set(B)
    A = A.at[:m, m].set(-valid.astype(B.dtype)).at[m, :m].set(-valid.astype(B.dtype))
    rhs = jnp.zeros(m + 1, B.dtype).at[m].set(-1.0)
    c = jnp.linalg.solve(A + 1e-12 * jnp.eye(m + 1, dtype=B.dtype), rhs)[:m]
    return jnp.einsum("i,iab->ab", c, Fs)


@partial(jax.jit, static_argnames=("n_occ", "iterations"))
def scf(H, S, eri, ao, weights, e_nuc, D0, *, n_occ: int, iterations: int):
    """One conformer: see run_scf."""
    return run_scf(H, S, eri, ao, weights, e_nuc, D0, n_occ=n_occ, iterations=iterations)


@partial(jax.jit, static_argnames=("n_occ", "iterations"))
def scf_batch(H, S, eri, ao, weights, e_nuc, D0, *, n_occ: int, iterations: int):
    """Conformers of one molecule at once (every argument with a leading batch axis; grids padded to one size
    with zero weights and AO values)."""
    one = partial(run_scf, n_occ=n_occ, iterations=iterations)
    return jax.vmap(one)(H, S, eri, ao, weights, e_nuc, D0)


def run_scf(H, S, eri, ao, weights, e_nuc, D0, *, n_occ: int, iterations: int):
    """Run `iterations` SCF steps from D0. Returns (energies [iterations]: E of the density entering each step,
    D: the last density, F: the Fock matrix of that density)."""
    X = orthonormaliser(S)
    n = S.shape[0]
    Fs = jnp.zeros((DIIS_SPACE, n, n), H.dtype)
    errs = jnp.zeros((DIIS_SPACE, n, n), H.dtype)

    def step(carry, i):
        D, Fs, errs = carry
        E, F = fock(D, H, eri, ao, weights, e_nuc)
        err = X.T @ (F @ D @ S - S @ D @ F) @ X
        slot = i % DIIS_SPACE
        Fs, errs = Fs.at[slot].set(F), errs.at[slot].set(err)
        F_bar = diis(Fs, errs, jnp.minimum(i + 1, DIIS_SPACE))
        _, C = jnp.linalg.eigh(X.T @ F_bar @ X)
        C_occ = (X @ C)[:, :n_occ]
        return (2 * C_occ @ C_occ.T, Fs, errs), E

    (D, _, _), energies = jax.lax.scan(step, (D0, Fs, errs), jnp.arange(iterations))
    _, F = fock(D, H, eri, ao, weights, e_nuc)
    return energies, D, F

"""Restricted Kohn-Sham SCF in JAX: a fixed number of iterations with Pulay DIIS, as QM1B ran it on the IPU.

The total energy of a density matrix D (closed shell, D = 2 C_occ C_occ^T) is

    E(D) = tr(D H) + 1/2 tr(D J[D]) - a/4 tr(D K[D]) + sum_g w_g e_xc(rho_g, sigma_g) + E_nuc,
    J[D]_ij = sum_kl (ij|kl) D_kl,   K[D]_ij = sum_kl (ik|jl) D_kl,
    rho_g = sum_ij D_ij phi_i(r_g) phi_j(r_g),   sigma_g = |grad rho_g|^2,

with a = 0.2 for B3LYP. The Kohn-Sham (Fock) matrix is its gradient, F = dE/dD = H + J - a/2 K + V_xc; JAX
differentiates only the functional at each grid point (the chain rule to D is written out in xc_potential). Each
iteration: F from D, DIIS over the last 9 (F, error FDS - SDF) pairs, diagonalisation in the orthonormal basis
X = S^(-1/2), the next D from the lowest n_occ orbitals.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from papers.qm1b.dft.xc import HF_EXCHANGE, b3lyp5

DIIS_SPACE = 9  # QM1B's: papers/qm1b/REFERENCES.md [6]
ENERGY_TAIL = 5  # QM1B's energy is the mean of the last 5 iterations' (std: the convergence filter)


def _density(D, ao):
    """rho [G] and grad rho [3, G] on the grid from D; ao [4, G, n] holds the AO values and their gradients.
    (Per-direction loops: XLA's CPU code for the broadcast [3, G, n] form is ~3x slower.)"""
    phi, dphi = ao[0], ao[1:4]
    Dphi = phi @ D  # [G, n]: sum_i phi_i D_ij
    rho = jnp.sum(Dphi * phi, -1)
    grad_rho = jnp.stack([2 * jnp.sum(dphi[k] * Dphi, -1) for k in range(3)])  # D symmetric
    return rho, grad_rho


def xc_energy(D, ao, weights):
    """sum_g w_g e_xc(rho_g, sigma_g), sigma = |grad rho|^2."""
    rho, grad_rho = _density(D, ao)
    return jnp.sum(weights * b3lyp5(rho, jnp.sum(grad_rho**2, 0)))


def xc_potential(D, ao, weights):
    """(E_xc, V_xc = dE_xc/dD) with the chain rule through rho and sigma written out, JAX differentiating only the
    functional at each point: with v_rho, v_sigma its derivatives and A = (w v_rho / 2) phi + 2 sum_k (w v_sigma
    d_k rho) d_k phi, V = phi^T A + A^T phi. (Equal to jax.grad of xc_energy, tested; faster, since it keeps XLA
    away from [3, G, n] intermediates.)"""
    phi, dphi = ao[0], ao[1:4]
    rho, grad_rho = _density(D, ao)
    sigma = jnp.sum(grad_rho**2, 0)
    e, (v_rho, v_sigma) = jax.vmap(jax.value_and_grad(b3lyp5, (0, 1)))(rho, sigma)
    c = 2 * weights * v_sigma * grad_rho  # [3, G]
    A = (weights * v_rho / 2)[:, None] * phi + sum(c[k][:, None] * dphi[k] for k in range(3))
    M = phi.T @ A
    return jnp.sum(weights * e), M + M.T


def fock(D, H, W, ao, weights, e_nuc):
    """(E(D), F = dE/dD). J and K enter both only as J - a/2 K = W D, with the ERIs laid out as one [n^2, n^2]
    matrix W = (ij|kl) - a/2 (ik|jl) (one matrix-vector product per iteration)."""
    n = D.shape[0]
    G = (W @ D.reshape(-1)).reshape(n, n)  # J - a/2 K
    E_xc, V = xc_potential(D, ao, weights)
    E = jnp.sum(D * H) + 0.5 * jnp.sum(D * G) + E_xc + e_nuc
    return E, H + G + V


def packed_eri_size(n: int) -> int:
    """Length of the 8-fold packed ERIs of n AOs."""
    pairs = n * (n + 1) // 2
    return pairs * (pairs + 1) // 2


def _pair(a, b):
    """PySCF's packed index of the symmetric pair (a, b): max (max + 1) / 2 + min."""
    hi, lo = jnp.maximum(a, b), jnp.minimum(a, b)
    return hi * (hi + 1) // 2 + lo


def exchange_matrix(eri8, n: int):
    """W = (ij|kl) - a/2 (ik|jl) as an [n^2, n^2] matrix, unpacked on the device from the 8-fold packed ERIs (the
    host sends ~8x less). The index of (ij|kl) is pair(pair(i, j), pair(k, l)); indices of padding AOs land past
    the real entries, where eri8 is zero-padded, so ghosts get zero integrals. (The indices are computed in the
    program rather than passed in: XLA fuses them into the gathers, ~1.4x faster than reading index arrays.)"""
    i = jnp.arange(n)
    ij = _pair(i[:, None], i[None, :]).reshape(-1)  # [n^2]
    coulomb = eri8[_pair(ij[:, None], ij[None, :])]  # (ij|kl)
    ik = _pair(i[:, None, None, None], i[None, None, :, None])
    jl = _pair(i[None, :, None, None], i[None, None, None, :])
    exchange = eri8[_pair(ik, jl)].reshape(n * n, n * n)  # (ik|jl)
    return coulomb - 0.5 * HF_EXCHANGE * exchange


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


@partial(jax.jit, static_argnames=("iterations",))
def scf_batch(H, S, eri8, ao, weights, e_nuc, D0, n_occ, *, iterations: int):
    """Many conformers at once (every argument with a leading batch axis). Molecules of different sizes share one
    compiled program when padded to common shapes (papers.qm1b.dft pads AOs with decoupled ghost functions and
    grids with zero-weight points); n_occ is data, not a compile-time constant, for the same reason."""
    return jax.vmap(partial(run_scf, iterations=iterations))(H, S, eri8, ao, weights, e_nuc, D0, n_occ)


def run_scf(H, S, eri8, ao, weights, e_nuc, D0, n_occ, *, iterations: int):
    """Run `iterations` SCF steps from D0. Returns (energies [iterations]: E of the density entering each step,
    densities [ENERGY_TAIL, n, n]: the densities entering the last ENERGY_TAIL steps (their energies are recomputed
    in float64 on the host), F: the Fock matrix of the last density)."""
    X = orthonormaliser(S)
    n = S.shape[0]
    occupied = jnp.arange(n) < n_occ  # eigh sorts orbitals by energy: the lowest n_occ are occupied
    W = exchange_matrix(eri8, n)
    Fs = jnp.zeros((DIIS_SPACE, n, n), H.dtype)
    errs = jnp.zeros((DIIS_SPACE, n, n), H.dtype)

    def step(carry, i):
        D, Fs, errs = carry
        E, F = fock(D, H, W, ao, weights, e_nuc)
        err = X.T @ (F @ D @ S - S @ D @ F) @ X
        slot = i % DIIS_SPACE
        Fs, errs = Fs.at[slot].set(F), errs.at[slot].set(err)
        F_bar = diis(Fs, errs, jnp.minimum(i + 1, DIIS_SPACE))
        _, C = jnp.linalg.eigh(X.T @ F_bar @ X)
        C_occ = (X @ C) * occupied
        return (2 * C_occ @ C_occ.T, Fs, errs), (E, D)

    (D, _, _), (energies, densities) = jax.lax.scan(step, (D0, Fs, errs), jnp.arange(iterations))
    _, F = fock(D, H, W, ao, weights, e_nuc)
    return energies, densities[-ENERGY_TAIL:], F

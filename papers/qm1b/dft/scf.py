"""Restricted Kohn-Sham SCF in JAX with Pulay DIIS, as QM1B ran it on the IPU: at most `iterations` steps (QM1B ran
20 fixed ones), stopping earlier once converged (`stop_rule`).

The total energy of a density matrix D (closed shell, D = 2 C_occ C_occ^T) is

    E(D) = tr(D H) + 1/2 tr(D J[D]) - a/4 tr(D K[D]) + sum_g w_g e_xc(rho_g, sigma_g) + E_nuc,
    J[D]_ij = sum_kl (ij|kl) D_kl,   K[D]_ij = sum_kl (ik|jl) D_kl,
    rho_g = sum_ij D_ij phi_i(r_g) phi_j(r_g),   sigma_g = |grad rho_g|^2,

with a = 0.2 for B3LYP. The Kohn-Sham (Fock) matrix is its gradient, F = dE/dD = H + J - a/2 K + V_xc; JAX
differentiates only the functional at each grid point (the chain rule to D is written out in xc_potential). Each
iteration: F from D, DIIS over the last 9 (F, error FDS - SDF) pairs, diagonalisation in the orthonormal basis
X = S^(-1/2), the next D from the lowest n_occ orbitals.

Two-electron integrals come in one of two forms (`eri`):
- exact: the 8-fold packed (ij|kl), unpacked on the device into one [n^2, n^2] matrix W = (ij|kl) - a/2 (ik|jl), so
  J - a/2 K is one matrix-vector product (n^4 memory: fine for STO-3G's ~60 AOs, not for 6-31G(d)'s ~150);
- density fitted: (ij|kl) ~ sum_P B_Pij B_Pkl with B = L^-1 (P|ij), (P|Q) = L L^T (PySCF's `cderi`, packed over
  ij), so J = sum_P B_P tr(B_P D) and K = sum_P B_P D B_P (naux n^2 memory, naux ~ 15 n; K from the occupied
  orbitals after the first step).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from core.numerics.stats import max_abs
from papers.qm1b.dft.xc import HF_EXCHANGE, b3lyp5

DIIS_SPACE = 9  # QM1B's: papers/qm1b/REFERENCES.md [6]
ENERGY_TAIL = 5  # QM1B's energy is the mean of the last 5 iterations' (std: the convergence filter)
# The stopping rule (stop_rule): the orbital gradient g = max |X^T (F D S - S D F) X| (Hartree) of the density
# entering each step. Converged after a step when (1) the gradient ENERGY_TAIL - 1 steps back was below
# WINDOW_GRADIENT, so all 5 energies QM1B averages are converged (the energy error is second order in g: measured
# < 0.05 meV below 1e-3; float64 runs, a reference, ask for 1e-5, ~1e-10 Hartree), and (2) this step's gradient is
# below FINAL_GRADIENT and either below TIGHT_GRADIENT or no longer falling (above STALL x the previous one): float32
# stalls at its rounding floor, ~2e-5 for QM1B's molecules, where the gap (first order in g) is as good as float32
# gets; float64 goes on to TIGHT_GRADIENT.
WINDOW_GRADIENT = {"float32": 1e-3, "float64": 1e-5}
FINAL_GRADIENT = 1e-4
TIGHT_GRADIENT = 1e-9
STALL = 0.5


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


def coulomb_exchange(ints, D, L):
    """J - a/2 K of D from the prepared integrals: W [n^2, n^2] (exact) or B laid out [n, naux, n] (density fitted,
    B[i, P, k] = B_P,ik), where K = sum_P (B_P L)(B_P L)^T from a factor D = L L^T (L [n, w]; after the first step
    w >= the occupied orbitals, so this costs naux n^2 w, not naux n^3). (The [n, naux, n] layout makes both products
    plain matrix products without a transpose of an [naux, n, n] array: ~1.6x faster under XLA on a CPU.)"""
    n = D.shape[0]
    if ints.ndim == 2:
        return (ints @ D.reshape(-1)).reshape(n, n)
    naux = ints.shape[1]
    J = jnp.einsum("iPk,P->ik", ints, jnp.einsum("iPk,ik->P", ints, D))
    M = (ints.reshape(n * naux, n) @ L).reshape(n, -1)  # [n, naux w]: (B_P L)_iw
    return J - 0.5 * HF_EXCHANGE * (M @ M.T)


def fock(D, H, ints, ao, weights, e_nuc, L):
    """(E(D), F = dE/dD). J and K enter both only as G = J - a/2 K (coulomb_exchange)."""
    G = coulomb_exchange(ints, D, L)
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


def fitted_integrals(cderi, n: int):
    """B laid out [n, naux, n] (B[i, P, k] = B_P,ik) from the fitted integrals packed over pairs ([naux, n (n + 1)
    / 2], PySCF's layout); as in exchange_matrix, ghost AOs index past the real pairs, where cderi is zero-padded."""
    i = jnp.arange(n)
    return cderi[:, _pair(i[:, None], i[None, :])].transpose(1, 0, 2)


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
    # Once converged to the last bit, the stored errors are one vector repeated: B has rank one and the solve gives
    # inf/NaN (H2 in float32 from its fourth step). The stored Focks are then equal too, so their plain mean is the
    # extrapolation; a finite solve is used as it is.
    c = jnp.where(jnp.all(jnp.isfinite(c)), c, valid.astype(B.dtype) / jnp.sum(valid))
    return jnp.einsum("i,iab->ab", c, Fs)


def stop_rule(gradients, i):
    """Whether the SCF has converged after step i (0-based), from the gradients of steps 0..i (module constants)."""
    g, previous = gradients[i], gradients[jnp.maximum(i - 1, 0)]
    window = gradients[jnp.maximum(i - (ENERGY_TAIL - 1), 0)]
    settled = (g < TIGHT_GRADIENT) | (g > STALL * previous)
    converged = (window < WINDOW_GRADIENT[jnp.dtype(gradients.dtype).name]) & (g < FINAL_GRADIENT) & settled
    return (i >= ENERGY_TAIL - 1) & converged


@partial(jax.jit, static_argnames=("iterations", "early_stop", "width"))
def scf_batch(H, S, eri, ao, weights, e_nuc, L0, n_occ, *, iterations: int, early_stop: bool = True, width=None):
    """Many conformers at once (every argument with a leading batch axis). Molecules of different sizes share one
    compiled program when padded to common shapes (papers.qm1b.dft pads AOs with decoupled ghost functions and
    grids with zero-weight points); n_occ is data, not a compile-time constant, for the same reason. `eri`: the
    8-fold packed ERIs [B, P] (1-D per conformer) or the fitted ones [B, naux, n (n + 1) / 2]. Under vmap the loop
    runs until every conformer has stopped; each keeps the state of its own last step. `width`: at least the largest
    n_occ of the batch (default: all AOs), the columns of the density's factor the fitted exchange uses."""
    run = partial(run_scf, iterations=iterations, early_stop=early_stop, width=width)
    return jax.vmap(run)(H, S, eri, ao, weights, e_nuc, L0, n_occ)


def run_scf(H, S, eri, ao, weights, e_nuc, L0, n_occ, *, iterations: int, early_stop: bool = True, width=None):
    """At most `iterations` SCF steps from the guess D0 = L0 L0^T, fewer when `early_stop` and stop_rule says
    converged. Returns (energies [iterations]: E of the density entering each step, NaN after the last; densities
    [ENERGY_TAIL, n, n]: the densities entering the last ENERGY_TAIL steps, oldest first; D: the density the last
    step made; steps: how many ran; gradients [iterations]: the orbital gradient of each step, NaN after the last).
    The host recomputes the last energies and the Fock matrix of D (for HOMO and LUMO) in float64
    (papers.qm1b.dft.finish_float64). Every step's density comes with a factor D = L L^T for the fitted exchange:
    L = sqrt(2) C_occ with `width` columns (zero past n_occ), and for the first step L0 (the MINAO guess is positive
    semi-definite but not of rank n_occ: the host factors it, papers.qm1b.dft._stack)."""
    X = orthonormaliser(S)
    n = S.shape[0]
    width = width or n
    occupied = jnp.arange(width) < n_occ  # eigh sorts orbitals by energy: the lowest n_occ are occupied
    ints = exchange_matrix(eri, n) if eri.ndim == 1 else fitted_integrals(eri, n)
    nan = jnp.full(iterations, jnp.nan, H.dtype)
    zeros = jnp.zeros((DIIS_SPACE, n, n), H.dtype)
    init = (jnp.asarray(0), L0 @ L0.T, jnp.zeros((n, width), H.dtype), zeros, zeros)
    init += (jnp.zeros((ENERGY_TAIL, n, n), H.dtype), nan, nan, jnp.asarray(False))

    def step(carry, factored: bool):
        i, D, L, Fs, errs, tail, energies, gradients, _ = carry
        E, F = fock(D, H, ints, ao, weights, e_nuc, L if factored else L0)
        err = X.T @ (F @ D @ S - S @ D @ F) @ X
        gradients = gradients.at[i].set(max_abs(err))  # NaN kept (core.numerics.stats.max_abs): never "converged"
        slot = i % DIIS_SPACE
        Fs, errs = Fs.at[slot].set(F), errs.at[slot].set(err)
        F_bar = diis(Fs, errs, jnp.minimum(i + 1, DIIS_SPACE))
        _, C = jnp.linalg.eigh(X.T @ F_bar @ X)
        L = jnp.sqrt(2.0).astype(H.dtype) * (X @ C[:, :width]) * occupied
        tail = tail.at[i % ENERGY_TAIL].set(D)
        done = stop_rule(gradients, i) if early_stop else jnp.asarray(False)
        return i + 1, L @ L.T, L, Fs, errs, tail, energies.at[i].set(E), gradients, done

    def running(carry):
        return (carry[0] < iterations) & ~carry[-1]

    carry = jax.lax.while_loop(running, partial(step, factored=True), step(init, factored=False))
    steps, D, _, _, _, tail, energies, gradients, _ = carry
    return energies, jnp.roll(tail, -(steps % ENERGY_TAIL), axis=0), D, steps, gradients

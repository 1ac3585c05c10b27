"""The B3LYP exchange-correlation energy density in JAX, as PySCF/libxc define xc='b3lyp5'.

    E_xc = 0.2 E_x^HF + 0.08 E_x^Slater + 0.72 E_x^B88 + 0.19 E_c^VWN5 + 0.81 E_c^LYP

(B88 here is Becke's full exchange, its LDA part included, as libxc's GGA_X_B88; so the local exchange weight is
0.08 + 0.72 = 0.8, B3LYP's.) The functions below take the closed-shell density rho and sigma = |grad rho|^2 and
return the energy per volume e(rho, sigma) (libxc's exc times rho); the exact-exchange part is in the SCF. Each is
written for spin densities where the published formula is (rho_a = rho_b = rho/2, sigma_aa = sigma_bb =
sigma_ab = sigma/4 for a closed shell), so the bodies read like the papers.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

HF_EXCHANGE = 0.2  # the mix: papers/qm1b/REFERENCES.md [10]


def slater_exchange(rho):
    """Dirac/Slater: sum over spins of -(3/2) (3/(4 pi))^(1/3) rho_s^(4/3)."""
    rho_s = rho / 2
    return 2 * (-1.5 * (3 / (4 * math.pi)) ** (1 / 3) * rho_s ** (4 / 3))


def b88_exchange(rho, sigma, beta=0.0042):  # REFERENCES.md [11]
    """Becke 1988: Slater minus, per spin, beta rho_s^(4/3) x_s^2 / (1 + 6 beta x_s asinh x_s), x_s =
    |grad rho_s| / rho_s^(4/3)."""
    rho_s, sigma_s = rho / 2, sigma / 4
    floor = jnp.finfo(jnp.result_type(sigma)).tiny  # keeps d/dsigma finite at sigma = 0
    x = jnp.sqrt(jnp.maximum(sigma_s, floor)) / rho_s ** (4 / 3)
    return slater_exchange(rho) - 2 * beta * rho_s ** (4 / 3) * x**2 / (1 + 6 * beta * x * jnp.arcsinh(x))


def vwn5_correlation(rho, A=0.0310907, x0=-0.10498, b=3.72744, c=12.9352):  # REFERENCES.md [12]
    """Vosko-Wilk-Nusair (their fit 5, paramagnetic): rho * eps_c(r_s), x = sqrt(r_s), X(x) = x^2 + b x + c."""
    rs = (3 / (4 * math.pi * rho)) ** (1 / 3)
    x = jnp.sqrt(rs)
    X = x**2 + b * x + c
    X0 = x0**2 + b * x0 + c
    Q = math.sqrt(4 * c - b**2)
    atan = jnp.arctan(Q / (2 * x + b))
    eps = A * (
        jnp.log(x**2 / X) + 2 * b / Q * atan - b * x0 / X0 * (jnp.log((x - x0) ** 2 / X) + 2 * (b + 2 * x0) / Q * atan)
    )
    return rho * eps


def lyp_correlation(rho, sigma, a=0.04918, b=0.132, c=0.2533, d=0.349):  # REFERENCES.md [13]
    """Lee-Yang-Parr in Miehlich, Savin, Stoll & Preuss's (1989) form without Laplacians, evaluated at the
    closed-shell spin densities."""
    ra = rb = rho / 2
    gaa = gbb = gab = sigma / 4  # |grad rho_a|^2, |grad rho_b|^2, grad rho_a . grad rho_b
    g = gaa + gbb + 2 * gab  # |grad rho|^2
    r13 = rho ** (-1 / 3)
    omega = jnp.exp(-c * r13) / (1 + d * r13) * rho ** (-11 / 3)
    delta = c * r13 + d * r13 / (1 + d * r13)
    cf = 0.3 * (3 * math.pi**2) ** (2 / 3)
    first = -a * 4 / (1 + d * r13) * ra * rb / rho
    bracket = (
        2 ** (11 / 3) * cf * (ra ** (8 / 3) + rb ** (8 / 3))
        + (47 / 18 - 7 / 18 * delta) * g
        - (5 / 2 - delta / 18) * (gaa + gbb)
        - (delta - 11) / 9 * (ra / rho * gaa + rb / rho * gbb)
    )
    second = (
        -a
        * b
        * omega
        * (ra * rb * bracket - 2 / 3 * rho**2 * g + (2 / 3 * rho**2 - ra**2) * gbb + (2 / 3 * rho**2 - rb**2) * gaa)
    )
    return first + second


def b3lyp5(rho, sigma, threshold=None):
    """The semi-local part of B3LYP (VWN5) per volume; points with rho below `threshold` contribute nothing (and
    have zero, not NaN, derivatives: the density is replaced before the formulas see it). The default threshold is
    1e-10 in float64 and 1e-7 in float32, where LYP's rho^(-14/3) in the derivative would overflow below it."""
    if threshold is None:
        threshold = 1e-10 if jnp.result_type(rho) == jnp.float64 else 1e-7
    ok = rho > threshold
    r = jnp.where(ok, rho, 1.0)
    s = jnp.where(ok, sigma, 0.0)
    e = (
        0.08 * slater_exchange(r)
        + 0.72 * b88_exchange(r, s)
        + 0.19 * vwn5_correlation(r)
        + 0.81 * lyp_correlation(r, s)
    )
    return jnp.where(ok, e, 0.0)

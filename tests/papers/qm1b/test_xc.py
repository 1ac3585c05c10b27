"""The JAX B3LYP pieces against libxc (through PySCF), energy densities and both derivatives."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pyscf.dft import libxc

from papers.qm1b.dft import xc


@pytest.fixture(scope="module")
def densities():
    rng = np.random.default_rng(0)
    rho = 10 ** rng.uniform(-6, 3, 300)
    grad = rng.normal(size=(3, 300)) * rho ** (4 / 3) * 10 ** rng.uniform(-3, 1, 300)
    return rho, grad


CASES = [
    ("slater,", lambda r, s: xc.slater_exchange(r), True),
    ("b88,", xc.b88_exchange, False),
    (",vwn5", lambda r, s: xc.vwn5_correlation(r), True),
    (",lyp", xc.lyp_correlation, False),
    (".08*slater+.72*b88,.19*vwn5+.81*lyp", xc.b3lyp5, False),
]


@pytest.mark.parametrize(("code", "fn", "lda"), CASES, ids=[c[0] for c in CASES])
def test_functional_and_derivatives_equal_libxc(densities, code, fn, lda):
    rho, grad = densities
    sigma = (grad**2).sum(0)
    exc, vxc = libxc.eval_xc(code, rho if lda else np.vstack([rho, grad]), spin=0, deriv=1)[:2]
    with jax.enable_x64(True):
        r, s = jnp.asarray(rho), jnp.asarray(sigma)
        e = np.asarray(fn(r, s))
        v_rho = np.asarray(jax.vmap(jax.grad(fn, 0))(r, s))
        v_sigma = np.asarray(jax.vmap(jax.grad(fn, 1))(r, s))
    np.testing.assert_allclose(e, exc * rho, rtol=1e-11)
    np.testing.assert_allclose(v_rho, vxc[0], rtol=1e-11)
    if not lda:
        np.testing.assert_allclose(v_sigma, vxc[1], rtol=1e-11)


def test_pyscf_b3lyp5_is_the_mix_we_implement():
    hyb, terms = libxc.parse_xc("b3lyp5")
    assert hyb[0] == pytest.approx(xc.HF_EXCHANGE)
    # libxc ids: 1 LDA_X (Slater), 106 GGA_X_B88, 7 LDA_C_VWN (VWN5), 131 GGA_C_LYP
    assert {int(k): w for k, w in terms} == pytest.approx({1: 0.08, 106: 0.72, 7: 0.19, 131: 0.81})


def test_tiny_densities_give_zero_and_finite_derivatives():
    for dtype in (jnp.float32,):
        rho = jnp.array([0.0, 1e-12, 1e-8, 1.0], dtype)
        sigma = jnp.array([0.0, 0.0, 1e-20, 0.0], dtype)
        e = xc.b3lyp5(rho, sigma)
        g = jax.vmap(jax.grad(xc.b3lyp5, (0, 1)))(rho, sigma)
        assert np.all(np.isfinite(e)) and all(np.all(np.isfinite(x)) for x in g)
        assert float(e[0]) == 0.0 and float(e[1]) == 0.0 and float(e[3]) < 0

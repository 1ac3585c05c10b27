"""On a GPU, FP32 is FP32: with the runner's setting (core.devices.use_true_fp32, matmul precision "highest") a
float32 matrix product on the GPU agrees with float64 to float32's accuracy, where TF32 (a 10-bit mantissa, what
GPUs otherwise use for float32 products) misses that bound by orders of magnitude. Runs only where JAX sees a GPU;
every other test (the papers' smoke runs among them) runs on the GPU there too, as JAX's default device."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.devices import use_true_fp32

pytestmark = pytest.mark.skipif(
    not any(d.platform == "gpu" for d in jax.devices()),
    reason="needs a GPU (make install DEVICE=cuda on a GPU machine)",
)

K = 4096  # long dot products: float32's accumulated error ~ sqrt(K) 2^-24, TF32's inputs alone ~ 2^-11


def _relative_error(precision) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, K)).astype(np.float32)
    b = rng.standard_normal((K, 256)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(jnp.matmul(jnp.asarray(a), jnp.asarray(b), precision=precision), dtype=np.float64)
    return float(np.abs(got - exact).max() / np.abs(exact).max())


def test_float32_products_are_true_float32_with_the_runners_setting():
    before = jax.config.jax_default_matmul_precision
    try:
        use_true_fp32()
        assert jax.devices()[0].platform == "gpu"
        true_fp32 = _relative_error(None)  # what every run's code gets: no precision named, the default applies
        tf32 = _relative_error("tensorfloat32")  # the same product with TF32 inputs: the bound must catch it
    finally:
        jax.config.update("jax_default_matmul_precision", before)
    assert true_fp32 < 1e-5, true_fp32
    assert tf32 > 10 * true_fp32 and tf32 > 1e-4, (tf32, true_fp32)

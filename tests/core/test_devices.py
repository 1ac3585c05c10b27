"""require_devices returns the devices it was asked for, and once JAX has started with fewer it says how to get
them instead of failing later inside a mesh."""

import os
import subprocess
import sys

import jax
import pytest

from core.devices import require_devices


def test_too_many_devices_after_start_names_the_flag():
    have = len(jax.devices())  # starts the backend, so the count is fixed
    assert len(require_devices(have)) == have
    with pytest.raises(RuntimeError, match=rf"xla_force_host_platform_device_count={have + 1}"):
        require_devices(have + 1)
    with pytest.raises(ValueError, match="positive integer"):
        require_devices(0)


def test_devices_are_simulated_when_asked_before_jax_starts():
    code = "from core.devices import require_devices; import jax; print(len(require_devices(3)), jax.device_count())"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["3", "3"]


def test_runs_take_fp32_matmuls_in_full_fp32():
    """A GPU would take FP32 products in TF32 by default; every run asks for full FP32."""
    from core.devices import use_true_fp32

    before = jax.config.jax_default_matmul_precision
    try:
        use_true_fp32()
        assert jax.config.jax_default_matmul_precision == "highest"
    finally:
        jax.config.update("jax_default_matmul_precision", before)

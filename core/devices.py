"""Several JAX devices on one machine: real accelerators when there are enough, else simulated CPU devices.

JAX fixes the number of CPU devices when its backend starts, so a run that needs n simulated devices must ask before
any JAX computation: `require_devices(n)` does so (through `jax_num_cpu_devices`, keeping a larger count given by
XLA_FLAGS=--xla_force_host_platform_device_count) and returns n devices, or says how to restart when it is too late.
"""

from __future__ import annotations

import os
import re

import jax


def _flag_count() -> int:
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else 1


def require_devices(n: int) -> list:
    """n devices of one platform: the default backend's when it has n, else simulated CPU devices."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the device count {n!r} must be a positive integer")
    want = max(n, _flag_count(), int(jax.config.jax_num_cpu_devices))
    try:
        if want != jax.config.jax_num_cpu_devices:
            jax.config.update("jax_num_cpu_devices", want)
    except RuntimeError:
        pass  # the backend has started; use what it has
    devices = jax.devices()
    if len(devices) < n:
        devices = jax.devices("cpu")
    if len(devices) < n:
        raise RuntimeError(
            f"{n} devices are needed but JAX started with {len(devices)} CPU devices; start Python with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} (or call require_devices before any JAX work)"
        )
    return devices[:n]

"""Several JAX devices: real accelerators when there are enough, else simulated CPU devices, on one machine or over
several processes joined into one JAX runtime.

JAX fixes the number of CPU devices when its backend starts, so a run that needs n simulated devices must ask before
any JAX computation: `require_devices(n)` does so (through `jax_num_cpu_devices`, keeping a larger count given by
XLA_FLAGS=--xla_force_host_platform_device_count or JAX_NUM_CPU_DEVICES) and returns n devices, or says how to
restart when it is too late.

A run launched as several processes (SLURM tasks, or processes started by hand) calls `initialize_distributed()`
first, before `require_devices` and any other JAX work. Afterwards `jax.devices()` lists the devices of every
process, and `require_devices(n)` counts those global devices: each process asks for ceil(n / processes) simulated
CPU devices of its own. Arrays over such a mesh span processes, so they are built with `jax.device_put` onto a
NamedSharding (the same host data on every process) or `jax.make_array_from_process_local_data`, and read back with
`jax.experimental.multihost_utils.process_allgather`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import jax

COORDINATOR = "JAX_COORDINATOR_ADDRESS"  # JAX's own name (jax.distributed.initialize reads it too)
NUM_PROCESSES = "JAX_NUM_PROCESSES"
PROCESS_ID = "JAX_PROCESS_ID"
# what JAX's SLURM detection needs (jax._src.clusters.slurm_cluster): present in every task of an srun job step
_SLURM = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")


@dataclass(frozen=True)
class ProcessGroup:
    """This process's place in a run of several processes."""

    num_processes: int
    process_id: int
    coordinator_address: str | None  # host:port of process 0; None: JAX derives it from the SLURM job
    launcher: str  # "env" (our variables) or "slurm"


_joined: ProcessGroup | None = None


def _int_var(environ: Mapping[str, str], name: str, lo: int, hi: int | None = None) -> int:
    value = environ[name]
    try:
        x = int(value)
    except ValueError:
        x = None
    if x is None or x < lo or (hi is not None and x > hi):
        allowed = f"an integer from {lo} to {hi}" if hi is not None else f"an integer >= {lo}"
        raise ValueError(f"{name}={value!r} must be {allowed}")
    return x


def _address(value: str) -> str:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{COORDINATOR}={value!r} must be host:port, the address of process 0 (e.g. 10.0.0.1:1234)")
    return value


def process_group(environ: Mapping[str, str] = os.environ) -> ProcessGroup | None:
    """The run of several processes that the launcher started, read from `environ`; None for a single process.

    Either our explicit variables, all three: JAX_COORDINATOR_ADDRESS (host:port of process 0), JAX_NUM_PROCESSES
    and JAX_PROCESS_ID (0 .. JAX_NUM_PROCESSES - 1); or a SLURM job step with SLURM_NTASKS > 1 (process id
    SLURM_PROCID; JAX_COORDINATOR_ADDRESS, if set, overrides the first node and the port JAX derives from the job
    id). The explicit variables win, so processes started by hand inside an allocation are not taken for its tasks.
    """
    if NUM_PROCESSES in environ or PROCESS_ID in environ:
        missing = [k for k in (COORDINATOR, NUM_PROCESSES, PROCESS_ID) if k not in environ]
        if missing:
            raise ValueError(
                f"{', '.join(missing)} must be set too: a process of a multi-process run needs all of "
                f"{COORDINATOR}, {NUM_PROCESSES} and {PROCESS_ID}"
            )
        n = _int_var(environ, NUM_PROCESSES, 1)
        group = ProcessGroup(n, _int_var(environ, PROCESS_ID, 0, n - 1), _address(environ[COORDINATOR]), "env")
    elif all(k in environ for k in _SLURM):
        n = _int_var(environ, "SLURM_NTASKS", 1)
        address = _address(environ[COORDINATOR]) if COORDINATOR in environ else None
        group = ProcessGroup(n, _int_var(environ, "SLURM_PROCID", 0, n - 1), address, "slurm")
    elif COORDINATOR in environ:
        raise ValueError(
            f"{COORDINATOR}={environ[COORDINATOR]!r} is set but {NUM_PROCESSES} and {PROCESS_ID} are not "
            "(and this is no SLURM job step): set all three, or unset it for a single process"
        )
    else:
        return None
    return group if group.num_processes > 1 else None


def initialize_distributed(timeout_s: int = 300) -> bool:
    """Join the JAX runtime of the launcher's processes (`process_group` says which variables are read); True once
    joined. A single process returns False and changes nothing; a second call does nothing. Call it before any
    JAX computation: JAX must know the other processes when its backend starts.

    On SLURM, JAX gives each task the one GPU numbered SLURM_LOCALID; for several GPUs per task set
    JAX_LOCAL_DEVICE_IDS (which JAX reads). Simulated CPU devices per process: JAX_NUM_CPU_DEVICES or
    `require_devices`.
    """
    global _joined
    if jax.distributed.is_initialized():
        return True
    group = process_group()
    if group is None:
        return False
    if jax.config.jax_cpu_collectives_implementation is None:
        # without a CPU collectives library, computations over the CPU devices of several processes cannot run
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        group.coordinator_address,
        group.num_processes,
        group.process_id,
        # "deactivate": processes started by hand inside a SLURM allocation keep every local device
        cluster_detection_method="slurm" if group.launcher == "slurm" else "deactivate",
        initialization_timeout=timeout_s,
    )
    _joined = group
    return True


def _flag_count() -> int:
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else 1


def require_devices(n: int) -> list:
    """n devices of one platform, over all processes: the default backend's when it has n, else simulated CPU
    devices."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the device count {n!r} must be a positive integer")
    processes = _joined.num_processes if _joined else 1
    per_process = -(-n // processes)
    want = max(per_process, _flag_count(), int(jax.config.jax_num_cpu_devices))
    try:
        if want != jax.config.jax_num_cpu_devices:
            jax.config.update("jax_num_cpu_devices", want)
    except RuntimeError:
        pass  # the backend has started; use what it has
    devices = jax.devices()
    if len(devices) < n:
        devices = jax.devices("cpu")
    if len(devices) < n and processes > 1:
        raise RuntimeError(
            f"{n} devices are needed but the {processes} processes started JAX with {len(devices)} CPU devices in "
            f"all; start each with JAX_NUM_CPU_DEVICES={per_process} (or call require_devices before any JAX work)"
        )
    if len(devices) < n:
        raise RuntimeError(
            f"{n} devices are needed but JAX started with {len(devices)} CPU devices; start Python with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} (or call require_devices before any JAX work)"
        )
    if processes > 1:  # an equal share from every process, so that a mesh over them spans them all
        by_process = [[d for d in devices if d.process_index == p] for p in range(processes)]
        devices = [d for ds in by_process for d in ds[:per_process]]
    return devices[:n]


def use_true_fp32() -> None:
    """Run every FP32 matmul and convolution in full FP32 on every backend. GPUs otherwise take FP32 products in
    TF32 (a 10-bit mantissa), which would make every FP32 baseline, and the FP32 accumulation of the simulated
    low-precision arms, something else. On the CPU the setting changes nothing."""
    jax.config.update("jax_default_matmul_precision", "highest")


def to_host(tree):
    """The values of a pytree of (possibly sharded) arrays as numpy on this process. In a run of several processes
    an array spread over them is gathered (every process gets all of it); a replicated or local one is fetched."""

    def fetch(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            from jax.experimental import multihost_utils

            return multihost_utils.process_allgather(x, tiled=True)
        return jax.device_get(x)

    return jax.tree.map(fetch, tree)


def is_main_process() -> bool:
    """True in the process that writes a run's files (process 0 of several, or the only one). A single process
    answers without starting JAX's backend, which would fix its device count too early."""
    return not jax.distributed.is_initialized() or jax.process_index() == 0

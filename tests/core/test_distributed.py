"""Several processes join one JAX runtime from the launcher's environment variables: two local processes with two
simulated CPU devices each run BESS's sharded step (its all_to_all crosses processes) over the 4-device global mesh
and match the single-device reference. The environment is read strictly: a single process is left alone, and a
malformed value is named before anything starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

from core.devices import ProcessGroup, initialize_distributed, process_group

ROOT = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT_S = 120  # two processes compile and run two small BESS steps in ~15 s on a 2-core CPU


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launcher_env(port: int, process_id: int, processes: int) -> dict[str, str]:
    """What a launcher sets for one process, on top of an environment cleared of anything that would steer JAX
    elsewhere (SLURM variables, forced device counts, proxies that gRPC would route 127.0.0.1 through)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAX_", "SLURM_")) and k != "XLA_FLAGS" and "proxy" not in k.lower()
    }
    return env | {
        "JAX_PLATFORMS": "cpu",
        "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
        "JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}",  # JAX's default binds every interface
        "JAX_NUM_PROCESSES": str(processes),
        "JAX_PROCESS_ID": str(process_id),
        "JAX_NUM_CPU_DEVICES": "2",
    }


def run_workers(
    processes: int, tmp: Path, timeout_s: float, cmd: list[str] | None = None
) -> list[tuple[int | None, str, str]]:
    """(return code, stdout, stderr) of each worker; when one fails or time runs out the others are killed, since
    they would wait for it until JAX's own timeout."""
    port = _free_port()
    procs, files = [], []
    for i in range(processes):
        out, err = (tmp / f"worker{i}.out").open("w"), (tmp / f"worker{i}.err").open("w")
        files += [out, err]
        argv = cmd or [sys.executable, "-m", "tests.core.distributed_worker"]
        procs.append(subprocess.Popen(argv, cwd=ROOT, env=_launcher_env(port, i, processes), stdout=out, stderr=err))
    deadline = time.monotonic() + timeout_s
    try:
        while None in (codes := [p.poll() for p in procs]):
            if any(codes) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        codes = [p.poll() for p in procs]  # None: still running when stopped
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for f in files:
            f.close()
    return [
        (code, (tmp / f"worker{i}.out").read_text(), (tmp / f"worker{i}.err").read_text())
        for i, code in enumerate(codes)
    ]


def test_two_processes_run_bess_over_one_global_mesh(tmp_path):
    results = run_workers(2, tmp_path, WORKER_TIMEOUT_S)
    report = "\n".join(
        f"worker {i}: return code {code} (None: killed after {WORKER_TIMEOUT_S} s or when the other failed)\n"
        f"stderr tail:\n{err[-2000:]}"
        for i, (code, _, err) in enumerate(results)
    )
    assert all(code == 0 for code, _, _ in results), report
    outputs = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results]
    assert [o["process"] for o in outputs] == [0, 1], outputs
    for o in outputs:
        assert o["joined"] and o["processes"] == 2 and o["local_devices"] == 2, o
        assert o["mesh_processes"] == [0, 1], o  # the mesh spans both processes, so the all_to_all crosses them
        assert len(o["errors"]) == 2, o
        for case, errors in o["errors"].items():
            for name, value in errors.items():
                assert value < 1e-5, (o["process"], case, name, value)


@pytest.fixture
def clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("JAX_COORDINATOR", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "SLURM_")):
            monkeypatch.delenv(k)
    return monkeypatch


def test_a_single_process_is_left_alone(clean_env):
    assert initialize_distributed() is False
    assert not jax.distributed.is_initialized()
    one = {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "1", "JAX_PROCESS_ID": "0"}
    assert process_group(one) is None
    slurm_one = {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "n1", "SLURM_NTASKS": "1", "SLURM_PROCID": "0"}
    assert process_group(slurm_one | {"SLURM_LOCALID": "0"}) is None


def test_a_malformed_variable_is_named_before_anything_starts(clean_env):
    clean_env.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:1234")
    clean_env.setenv("JAX_PROCESS_ID", "0")
    clean_env.setenv("JAX_NUM_PROCESSES", "abc")
    with pytest.raises(ValueError, match=r"JAX_NUM_PROCESSES='abc' must be an integer >= 1"):
        initialize_distributed()
    assert not jax.distributed.is_initialized()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "2"}, r"JAX_PROCESS_ID='2' must be an integer from 0 to 1"),
        ({"JAX_NUM_PROCESSES": "0", "JAX_PROCESS_ID": "0"}, r"JAX_NUM_PROCESSES='0' must be an integer >= 1"),
        ({"JAX_COORDINATOR_ADDRESS": "10.0.0.1"}, r"JAX_COORDINATOR_ADDRESS='10.0.0.1' must be host:port"),
        ({"JAX_COORDINATOR_ADDRESS": "h:99999"}, r"JAX_COORDINATOR_ADDRESS='h:99999' must be host:port"),
    ],
)
def test_each_bad_value_is_named(env, message):
    base = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1"}
    with pytest.raises(ValueError, match=message):
        process_group(base | env)


def test_a_partial_set_of_variables_names_what_is_missing():
    with pytest.raises(ValueError, match=r"JAX_COORDINATOR_ADDRESS, JAX_PROCESS_ID must be set too"):
        process_group({"JAX_NUM_PROCESSES": "2"})
    with pytest.raises(ValueError, match=r"JAX_NUM_PROCESSES and JAX_PROCESS_ID are not"):
        process_group({"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234"})


def test_explicit_variables_and_slurm_tasks_are_read():
    explicit = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "3"}
    assert process_group(explicit) == ProcessGroup(4, 3, "10.0.0.1:1234", "env")
    slurm = {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_NTASKS": "2", "SLURM_PROCID": "1"}
    slurm |= {"SLURM_LOCALID": "0"}
    assert process_group(slurm) == ProcessGroup(2, 1, None, "slurm")  # JAX derives the address from the job
    assert process_group(slurm | {"JAX_COORDINATOR_ADDRESS": "n1:999"}).coordinator_address == "n1:999"
    assert process_group(slurm | explicit) == process_group(explicit)  # started by hand inside an allocation
    with pytest.raises(ValueError, match=r"SLURM_PROCID='x' must be an integer from 0 to 1"):
        process_group(slurm | {"SLURM_PROCID": "x"})

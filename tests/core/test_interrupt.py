"""A run stopped by Ctrl-C or SIGTERM says in one line what it kept and the command that resumes it, exits 130 (143)
without a traceback and leaves its folder marked unfinished (unfinished.json, its wandb run moved out of `wandb sync`'s
way); the command resumes it, and the resumed run's log and record say from which step. Real processes, signalled
as a terminal signals them (the whole process group, wandb's service too)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf

from core import launch
from core.checkpoint import Checkpointer
from core.stopping import NOTHING_KEPT, UNFINISHED, WANDB_UNFINISHED, rerun_command, stop_signals
from tests.conftest import FIXTURE_CONFIGS, REPO_ROOT

SEARCHPATH = f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"


def as_from_a_terminal() -> None:
    """Ctrl-C's default disposition in the child, as a terminal starts a program with: a test suite started in the
    background (`make test &`, nohup, some CI runners) has SIGINT ignored, which its children would inherit, and a
    Python started with SIGINT ignored never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """scripts/reproduce.py in a session of its own, so that a signal reaches its whole group as Ctrl-C does."""
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "scripts" / "reproduce.py"), *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        preexec_fn=as_from_a_terminal,
    )


def signal_after_checkpoint(p: subprocess.Popen, root: Path, paper: str, signum: int) -> tuple[int, str]:
    """Send `signum` to the run's process group once it has written a checkpoint; (exit status, stderr)."""
    deadline = time.monotonic() + 240
    while not list((root / paper / "checkpoints").glob("*/**/step_*.msgpack")):
        if p.poll() is not None or time.monotonic() > deadline:
            _, err = p.communicate()
            pytest.fail(f"the run ended (status {p.returncode}) or wrote no checkpoint in time:\n{err[-3000:]}")
        time.sleep(0.02)
    os.killpg(p.pid, signum)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


def run_dirs(root: Path, paper: str) -> list[Path]:
    return sorted(p for p in (root / paper).iterdir() if p.name[:1].isdigit())


def last_line(text: str) -> str:
    return [line for line in text.splitlines() if line.strip()][-1]


def test_ctrl_c_says_what_was_kept_and_its_command_resumes_the_run(tmp_path):
    """logger=wandb (offline): the interrupted run's wandb run goes to wandb-unfinished/, the resumed one's stays in
    wandb/, where the README's `wandb sync <run dir>/wandb/offline-run-*` finds it."""
    args = ["paper=toy", "scale=smoke", "toy.chunks=60", "toy.samples_per_chunk=1000000", f"output_root={tmp_path}"]
    status, err = signal_after_checkpoint(start([*args, SEARCHPATH]), tmp_path, "toy", signal.SIGINT)
    assert status == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    (ckpt,) = (tmp_path / "toy" / "checkpoints").iterdir()
    step = Checkpointer(ckpt).latest_step()
    assert 0 < step < 60
    command = shlex.join(["python", "scripts/reproduce.py", *args, SEARCHPATH])
    assert last_line(err) == f"interrupted; kept checkpoints in {ckpt}; resume with: {command}"

    (stopped,) = run_dirs(tmp_path, "toy")
    marked = json.loads((stopped / UNFINISHED).read_text())
    assert (marked["stopped"], marked["signal"], marked["resume"]) == ("interrupted", "SIGINT", command)
    assert marked["checkpoint_dir"] == str(ckpt) and marked["checkpoints"] == {".": step}
    assert marked["wandb"] == str(stopped / WANDB_UNFINISHED) and re.fullmatch(
        r"\S+\.py:\d+ in [\w<>]+", marked["where"]
    )
    assert not (stopped / "wandb").exists() and not (stopped / "results.json").exists()
    assert len(list((stopped / WANDB_UNFINISHED).glob("offline-run-*/*.wandb"))) == 1
    assert not (tmp_path / "toy" / "latest").exists()  # `latest` is only ever a finished run
    # where the time went until it stopped: the training loop the signal caught it in
    assert marked["profile"]["samples"] > 0 and "training" in marked["profile"]["phases"]

    argv = shlex.split(command)
    resumed = subprocess.run(
        [sys.executable, *argv[1:]], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"reused earlier work: chunks from step {step} of 60" in resumed.stdout.splitlines()
    finished = (tmp_path / "toy" / "latest").resolve()
    assert finished != stopped.resolve() and not (finished / UNFINISHED).exists()
    log = (finished / "reproduce.log").read_text()
    assert f"chunks: resumed from step {step} of 60 (checkpoint {ckpt})" in log
    record = json.loads((finished / "results.json").read_text())
    assert record["reused"] == [{"kind": "checkpoint", "what": "chunks", "from_step": step, "of": 60}]
    assert len(list((finished / "wandb").glob("offline-run-*/*.wandb"))) == 1


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path):
    args = ["paper=toy", "scale=smoke", "toy.chunks=60", "toy.samples_per_chunk=1000000", "logger=none"]
    status, err = signal_after_checkpoint(
        start([*args, f"output_root={tmp_path}", SEARCHPATH]), tmp_path, "toy", signal.SIGTERM
    )
    assert status == 143 and "Traceback" not in err, err[-3000:]
    (ckpt,) = (tmp_path / "toy" / "checkpoints").iterdir()
    assert last_line(err).startswith(f"terminated (SIGTERM); kept checkpoints in {ckpt}; resume with: python ")
    (stopped,) = run_dirs(tmp_path, "toy")
    marked = json.loads((stopped / UNFINISHED).read_text())
    assert marked["signal"] == "SIGTERM" and marked["wandb"] is None


def test_ctrl_c_before_the_run_starts_says_nothing_was_kept(monkeypatch, capsys, tmp_path):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(launch, "preflight", interrupt)
    assert launch.main(["paper=toy", "logger=none", f"output_root={tmp_path}", SEARCHPATH]) == 130
    assert capsys.readouterr().err == NOTHING_KEPT + "\n"
    assert NOTHING_KEPT == "interrupted before the run started; nothing was kept"
    assert not list(tmp_path.iterdir())


def test_the_rerun_command_gives_the_shell_the_same_overrides_without_resume(tmp_path, monkeypatch):
    """Through the user's shell, make and the recipe's shell, the printed command gives reproduce.py the recorded
    overrides, quotes and `$` included; `resume=false` is left out (resuming is the default)."""
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # not inside a Hydra job (another test may have run one)
    overrides = ["paper=packing", "scale=smoke", "resume=false", "seed=3", "+x='a b'", "y='${z}'", 'w="q"', "v=[1,2]"]
    run_dir = tmp_path / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(overrides), run_dir / ".hydra" / "overrides.yaml")
    command = rerun_command("packing", run_dir)
    assert command.startswith('make reproduce PAPER=packing ARGS="')
    # the real shell and make, with a Makefile whose recipe is the project's with the program swapped for printf
    (tmp_path / "Makefile").write_text("reproduce:\n\t@printf '%s\\0' paper=$(PAPER) $(ARGS)\n")
    shell = f'make() {{ command make -s -f {shlex.quote(str(tmp_path / "Makefile"))} "$@"; }}; {command}'
    given = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60, check=True).stdout
    expected = ["paper=packing", "scale=smoke", "seed=3", "+x='a b'", "y='${z}'", 'w="q"', "v=[1,2]"]
    assert given.split("\0")[:-1] == expected

    OmegaConf.save(OmegaConf.create(["paper=packing"]), run_dir / ".hydra" / "overrides.yaml")
    assert rerun_command("packing", run_dir) == "make reproduce PAPER=packing"
    OmegaConf.save(OmegaConf.create(["paper=toy", SEARCHPATH]), run_dir / ".hydra" / "overrides.yaml")
    assert rerun_command("toy", run_dir) == shlex.join(["python", "scripts/reproduce.py", "paper=toy", SEARCHPATH])
    assert rerun_command("packing", tmp_path / "no-hydra-record") == "make reproduce PAPER=packing"


def test_the_rerun_command_of_a_sweep_job_reruns_the_sweep(tmp_path, monkeypatch):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    recorded = {"task": ["paper=toy", "seed=1,2", "resume=true"], "hydra": ["hydra.mode=MULTIRUN", SEARCHPATH]}
    OmegaConf.save(OmegaConf.create({"hydra": {"overrides": recorded}}), sweep / "multirun.yaml")
    job = SimpleNamespace(
        mode=RunMode.MULTIRUN,
        sweep=SimpleNamespace(dir=str(sweep)),
        overrides=SimpleNamespace(task=OmegaConf.create(["paper=toy", "seed=2"]), hydra=OmegaConf.create([])),
    )
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: job))
    assert rerun_command("toy", sweep / "1_toy") == shlex.join(
        ["python", "scripts/reproduce.py", "-m", "paper=toy", "seed=1,2", SEARCHPATH]
    )
    recorded["task"] = ["paper=packing", "seed=1,2"]
    OmegaConf.save(OmegaConf.create({"hydra": {"overrides": recorded}}), sweep / "multirun.yaml")
    assert rerun_command("packing", sweep / "1_packing") == (
        f"make reproduce PAPER=packing ARGS=\"-m seed=1,2 '{SEARCHPATH}'\""
    )


@pytest.mark.slow
def test_ctrl_c_in_a_papers_training_and_the_resumed_run(tmp_path):
    """A real paper's smoke run (packing: core.train.fit per mode, a checkpoint at each mode's end), interrupted
    once the first mode's training is kept, somewhere in the second's compilation or steps; about a minute."""
    args = ["paper=packing", "scale=smoke", "logger=none", f"output_root={tmp_path}"]
    status, err = signal_after_checkpoint(start(args), tmp_path, "packing", signal.SIGINT)
    assert status == 130 and "Traceback" not in err, err[-3000:]
    (ckpt,) = (tmp_path / "packing" / "checkpoints").iterdir()
    kept = {str(p.parent.relative_to(ckpt)): Checkpointer(p.parent).latest_step() for p in ckpt.rglob("step_*")}
    assert kept and all(kept.values())
    command = f'make reproduce PAPER=packing ARGS="scale=smoke logger=none output_root={tmp_path}"'
    assert last_line(err).startswith(f"interrupted; kept checkpoints in {ckpt}") and err.endswith(command + "\n")
    (stopped,) = run_dirs(tmp_path, "packing")
    assert json.loads((stopped / UNFINISHED).read_text())["checkpoints"] == kept

    resumed = subprocess.run(
        [sys.executable, "scripts/reproduce.py", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    record = json.loads(((tmp_path / "packing" / "latest") / "results.json").read_text())
    loops = {r["what"]: r["from_step"] for r in record["reused"] if r["kind"] == "checkpoint"}
    assert {k: v for k, v in loops.items() if k in kept} == kept
    log = ((tmp_path / "packing" / "latest") / "reproduce.log").read_text()
    for name, step in kept.items():
        assert f"{name}: resumed from step {step} of " in log


class RaisesInFinaliser:
    """An object whose finaliser is where Ctrl-C lands: Python prints 'Exception ignored in' and goes on."""

    def __del__(self):
        raise KeyboardInterrupt


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the one outside a run
def test_an_interrupt_that_lands_in_a_finaliser_still_stops_the_run():
    # Python's own Ctrl-C handler, as in a program started from a terminal (a suite started in the background has
    # SIGINT ignored, and an ignored signal is not raised again)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _finaliser_interrupt_stops_the_run()
    finally:
        signal.signal(signal.SIGINT, previous)


def _finaliser_interrupt_stops_the_run() -> None:
    with pytest.raises(KeyboardInterrupt), stop_signals():
        RaisesInFinaliser()  # collected at once: its __del__ raises, and Python ignores it
        for _ in range(100):  # the run goes on: the interrupt is raised again here
            time.sleep(0.01)
    RaisesInFinaliser()  # outside a run Python's own rule holds: ignored
    time.sleep(0.05)

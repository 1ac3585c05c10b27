"""SIGKILL the dataset generator at each stage of writing a part, and at random moments, resuming after each kill:
the final rows equal an uninterrupted run's, row for row and column for column, and nothing half-written is left.

The generator runs in a child process (tests/papers/qm1b/kill_worker.py: the real atomic writes and pyarrow, a
stand-in DFT) that prints a line as it enters each stage, and the kills are timed from those lines, as
tests/core/test_train.py times its kills from the training loop's output. A kill at a named stage holds the child
there (inside the real write, for the two writes) until it is killed, and the files it leaves are checked to be that
stage's."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from core.provenance import REPO_ROOT
from papers.qm1b.generate import read_dataset, shard_name
from tests.papers.qm1b.kill_worker import PAUSE_BYTES

SHARD = shard_name(0, 1)
NAMED = ("label", "part-write", "part-renamed", "manifest-write")  # the stages a round kills in, in this order
TIMEOUT_S = 120  # per worker process


class Worker:
    """A generator process (kill_worker) whose output lines are read as they come."""

    def __init__(self, directory: Path, molecules: int, pause: str | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.papers.qm1b.kill_worker", str(directory), str(molecules),
             *([pause] if pause else [])],
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.lines: list[str] = []
        self.watchdog = threading.Timer(TIMEOUT_S, self.proc.kill)  # a hung worker ends the read below
        self.watchdog.daemon = True
        self.watchdog.start()

    def until(self, line: str) -> float:
        """Read up to this line; when it came."""
        for got in self.proc.stdout:
            self.lines.append(got.rstrip("\n"))
            if self.lines[-1] == line:
                return time.perf_counter()
        raise AssertionError(f"the worker exited ({self.finish()}) before printing {line!r}:\n{self.output()}")

    def finish(self) -> int:
        """Read the rest of the output; the exit code."""
        self.lines += self.proc.stdout.read().splitlines()
        self.proc.stdin.close()
        code = self.proc.wait()
        self.watchdog.cancel()
        return code

    def kill(self) -> str:
        """SIGKILL the worker, checking that the signal killed it; the last stage it entered."""
        self.proc.send_signal(signal.SIGKILL)
        code = self.finish()
        assert code == -signal.SIGKILL, f"exit code {code}, not killed:\n{self.output()}"
        return [line.split()[1] for line in self.lines if line.startswith(("stage ", "paused "))][-1]

    def output(self) -> str:
        return "\n".join(self.lines[-30:])


@pytest.fixture
def spawn():
    """Start Workers; any still running when the test ends (it failed) is killed."""
    started: list[Worker] = []

    def start(*args) -> Worker:
        started.append(Worker(*args))
        return started[-1]

    yield start
    for worker in started:
        if worker.proc.poll() is None:
            worker.proc.kill()
            worker.finish()


def state(directory: Path) -> tuple[dict, list[str]]:
    """The shard's manifest and the files it does not list; checks that every listed part reads back whole."""
    folder = directory / SHARD
    manifest = json.loads((folder / "manifest.json").read_text())
    for p in manifest["parts"]:
        assert pq.read_table(folder / p["file"]).num_rows == p["rows"], p
    assert sum(p["molecules"] for p in manifest["parts"]) == len(manifest["done"]) == len(set(manifest["done"]))
    listed = {p["file"] for p in manifest["parts"]} | {"manifest.json", ".lock"}
    return manifest, sorted(p.name for p in folder.iterdir() if p.name not in listed)


def part(n: int) -> str:
    return f"part_{n:05d}.parquet"


def part_tmp(n: int) -> str:
    return rf"\.{re.escape(part(n))}\..+\.tmp"  # core.io.atomic_write's temporary file for it


MANIFEST_TMP = r"\.manifest\.json\..+\.tmp"


def rows(table) -> list[tuple]:
    """Every row, every column, as the values' reprs."""
    return [tuple(map(repr, row.values())) for row in table.to_pylist()]


@pytest.mark.parametrize("rounds, random_kills", [(1, 4), pytest.param(3, 20, marks=pytest.mark.slow)])
def test_sigkill_at_each_stage_of_a_part_loses_and_repeats_nothing(tmp_path, spawn, rounds, random_kills):
    """Each round kills the generator at the four named stages of writing a part, each after the run wrote a part:
    while labelling the next part; inside its Parquet write (the real pyarrow write, its first PAUSE_BYTES bytes on
    disk); once its file is renamed into place, before the manifest lists it; inside the manifest's write (a real
    partial temporary manifest, the old one intact). Then kills at random moments after the run's first part, drawn
    over a part's measured duration, each recorded with the stage it landed in. After every kill the listed parts
    read back whole and nothing is unlisted but that stage's files (at a random moment: the part being written and
    the manifest's temporary file), never a file an earlier kill left (the resume removed it). The resumed dataset
    and manifest equal an uninterrupted run's."""
    molecules = 3 + 3 * rounds + 3 * random_kills  # a part each: room for every kill to find parts left to write
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    worker, times = spawn(reference, molecules), []
    for k in range(1, molecules + 1):
        times.append(worker.until(f"stage manifest-written {k}"))
    assert worker.finish() == 0, worker.output()
    part_seconds = float(np.median(np.diff(times)))
    expected, _ = state(reference)

    hits, seen, prefixes = Counter(), set(), {}

    def check(stage: str, named: bool, before: int) -> int:
        """The files after a kill at `stage` of a run that started with `before` parts listed; the number listed."""
        manifest, unlisted = state(killed)
        n = len(manifest["parts"])
        assert (n == before + 1) if named else (n > before), f"{stage}: {n} parts listed, {before} before the run"
        assert not seen & set(unlisted), f"{sorted(seen & set(unlisted))} survived a resume"
        if named:  # exactly the stage's files
            expect = {
                "label": [],
                "part-write": [part_tmp(n)],
                "part-renamed": [re.escape(part(n))],
                "manifest-write": [MANIFEST_TMP, re.escape(part(n))],
            }[stage]
            assert len(unlisted) == len(expect), (stage, unlisted)
            assert all(re.fullmatch(p, f) for p, f in zip(expect, unlisted, strict=True)), (stage, unlisted)
        else:
            assert all(re.fullmatch(rf"{re.escape(part(n))}|{part_tmp(n)}|{MANIFEST_TMP}", f) for f in unlisted)
        for f in unlisted:
            if not f.endswith(".tmp"):  # a part renamed into place is whole
                assert rows(pq.read_table(killed / SHARD / f)) == rows(pq.read_table(reference / SHARD / f)), f
                continue
            seen.add(f)
            data = (killed / SHARD / f).read_bytes()
            if named:  # the real write, stopped inside
                assert len(data) == PAUSE_BYTES, (f, len(data))
                if stage == "part-write":
                    prefixes[part(n)] = data  # compared with the finished part below
                else:
                    assert data.startswith(b"{")
                    with pytest.raises(json.JSONDecodeError):
                        json.loads(data)
        return n

    listed = 0
    for _ in range(rounds):
        for stage in NAMED:
            worker = spawn(killed, molecules, f"{stage}:2")  # its 2nd entry: after the run wrote a part
            worker.until(f"paused {stage} 2")
            assert worker.kill() == stage, worker.output()
            listed = check(stage, True, listed)
            hits["named", stage] += 1

    rng = np.random.default_rng(46)
    for _ in range(random_kills):
        worker = spawn(killed, molecules)
        worker.until("stage manifest-written 1")
        time.sleep(rng.uniform(0.0, part_seconds))
        stage = worker.kill()
        listed = check(stage, False, listed)
        hits["random", stage] += 1

    assert spawn(killed, molecules).finish() == 0
    manifest, unlisted = state(killed)
    assert unlisted == []
    assert rows(read_dataset(killed, 1)) == rows(read_dataset(reference, 1))
    del manifest["seconds"], expected["seconds"]
    assert manifest == expected  # the same parts, molecules, row counts, drops and errors
    for name, data in prefixes.items():  # the half-written parts held the finished parts' first bytes
        assert data == (killed / SHARD / name).read_bytes()[:PAUSE_BYTES], name
    named, moments = ([f"{s} {n}" for (k, s), n in sorted(hits.items()) if k == kind] for kind in ("named", "random"))
    print(f"kills at named stages: {', '.join(named)}; at random moments ({part_seconds * 1e3:.0f} ms a part): "
          f"{', '.join(moments)}; rows equal the uninterrupted run's")  # fmt: skip

"""The dataset generator in a process that reports its stages, for the kill tests (test_kill_safety.py):
`python -m tests.papers.qm1b.kill_worker DIRECTORY MOLECULES [STAGE:K]`.

It runs papers.qm1b.generate.generate_shard on QM9 molecules of 9 heavy atoms, one molecule (2 conformers) per part,
with the real atomic writes (core.io) and pyarrow, and a cheap deterministic stand-in for the DFT (a function of the
geometry, 30 ms a batch). The functions the generator calls are wrapped so that, as it enters each stage, the process
prints a line `stage <name> <k>` (flushed), k counting that stage's entries in this process:

    embed             the next part's molecules get their ETKDG conformers
    label             a DFT batch starts
    part-write        a part's Parquet file is being written (into core.io.atomic_write's temporary file)
    part-renamed      the part's file is in place under its name; the manifest does not list it yet
    manifest-write    the manifest is being written (into its temporary file)
    manifest-written  the manifest lists the part

STAGE:K stops the process at the K-th entry of that stage: it prints `paused <name> <k>` and waits on stdin for the
parent's SIGKILL. In part-write and manifest-write it stops inside the real write, once the file's first PAUSE_BYTES
bytes are written and flushed, so a kill there leaves a real half-written temporary file.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

import core.io
import papers.qm1b.generate as g

STAGES = ("embed", "label", "part-write", "part-renamed", "manifest-write", "manifest-written")
PAUSE_BYTES = 256
SELECTION = {"source": "qm9", "min_heavy": 9, "max_heavy": 9, "conformers": 2, "seed": 3}
CODE = "kill-test"  # a fixed labelling fingerprint: a test's runs share one dataset key while the tree is edited

entries: Counter = Counter()
pause: tuple[str, int] | None = None


def stage(name: str, *, hold: bool = True) -> None:
    """Print the stage line; at the paused entry (unless the pause is inside a write: hold=False) wait there."""
    entries[name] += 1
    print(f"stage {name} {entries[name]}", flush=True)
    if hold and pause == (name, entries[name]):
        wait(name)


def wait(name: str) -> None:
    print(f"paused {name} {entries[name]}", flush=True)
    sys.stdin.readline()  # returns only if the parent went away without killing this process
    os._exit(3)


class Pausing:
    """A file object that writes through until the file holds PAUSE_BYTES bytes, flushes them and waits."""

    def __init__(self, f, name: str):
        self.f, self.name, self.written = f, name, 0

    def write(self, data) -> int:
        data = bytes(data)
        if self.written + len(data) >= PAUSE_BYTES:
            self.f.write(data[: PAUSE_BYTES - self.written])
            self.f.flush()
            wait(self.name)
        self.written += self.f.write(data)
        return len(data)

    def __getattr__(self, attr):
        return getattr(self.f, attr)


real_atomic_write, real_embed_part = core.io.atomic_write, g._embed_part


def atomic_write(path, write):
    """core.io.atomic_write with the stage lines of a part's or the manifest's write."""
    path = Path(path)
    kind = "part" if path.suffix == ".parquet" else "manifest" if path.name == "manifest.json" else None
    if kind is None:
        return real_atomic_write(path, write)
    name = f"{kind}-write"
    stage(name, hold=False)
    if pause == (name, entries[name]):
        inner = write
        write = lambda f: inner(Pausing(f, name))
    out = real_atomic_write(path, write)
    stage("part-renamed" if kind == "part" else "manifest-written")
    return out


def embed_part(chunk, sel):
    stage("embed")
    return real_embed_part(chunk, sel)


def fake_dft(atoms, **kwargs):
    """Energy from the geometry (so rows tell conformers apart); every 7th conformer has a large std (a drop)."""
    stage("label")
    time.sleep(0.03)
    out = []
    for a in atoms:
        xyz = np.array([[float(v) for v in part.split()[1:]] for part in a.split(";")])
        spread = float(np.linalg.norm(xyz - xyz.mean(0), axis=1).sum())
        out.append({"energy": -10.0 * len(xyz) - spread, "homo": -7.0, "lumo": -1.0, "gap": 6.0 + spread % 1,
                    "n_ao": 5 * len(xyz), "energy_std": 0.5 if int(spread * 1000) % 7 == 0 else 1e-4})  # fmt: skip
    return out


def main(directory: Path, molecules: int, paused: str | None = None) -> None:
    global pause
    if paused:
        name, k = paused.rsplit(":", 1)
        if name not in STAGES:
            raise SystemExit(f"stage {name!r} is not one of {STAGES}")
        pause = (name, int(k))
    core.io.atomic_write = g.atomic_write = atomic_write  # core.io's own writers (the manifest's) look it up there
    g._embed_part = embed_part
    sel = g.Selection(molecules=molecules, **SELECTION)
    g.generate_shard(
        sel, {"basis": "sto-3g"}, directory, run_batch=fake_dft, molecules_per_part=1, show_progress=False, code=CODE
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:4])

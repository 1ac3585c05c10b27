"""core.memo: kept stage values are reused by the same key and code only, stored atomically, survive SIGKILL, and
`make prune` (core.prune, scripts/prune.py) removes exactly those made by other code."""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from core.context import RunContext, collecting_reuse
from core.memo import ENTRY, MemoError, Stage, kept, key_text, lookup, memo, store_value
from core.provenance import REPO_ROOT, compute_units
from core.prune import stale

TOY = """
def stage():
    return {"value": helper(), "n": 3}


def helper():
    return 1


def unrelated():
    return 0
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A package of its own on sys.path (`toymemo.stages`), whose code the tests edit."""
    name = f"toymemo_{abs(hash(str(tmp_path))) % 10**8}"
    pkg = tmp_path / "src" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stages.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    importlib.invalidate_caches()
    module = importlib.import_module(f"{name}.stages")
    yield module, pkg / "stages.py"
    sys.modules.pop(f"{name}.stages", None)
    sys.modules.pop(name, None)


def _edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    module = importlib.import_module(".".join(path.with_suffix("").parts[-2:]))
    return importlib.reload(module)


class Counter:
    """`fn`, counting its calls; its code is `fn`'s (core.provenance follows `__wrapped__`)."""

    def __init__(self, fn):
        self.fn = self.__wrapped__ = fn
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.fn()


def test_same_key_and_code_reuse_with_a_progress_line(tmp_path, toy, caplog):
    module, _ = toy
    compute = Counter(module.stage)
    first = memo(tmp_path / "store", "stage", {"n": 3, "names": ("a", "b")}, compute)
    with caplog.at_level(logging.INFO, logger="core.memo"):
        again = memo(tmp_path / "store", "stage", {"names": ["a", "b"], "n": 3}, compute)  # same canonical key
    assert first == again == {"value": 1, "n": 3} and compute.calls == 1
    lines = [r.getMessage() for r in caplog.records if "reused" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("memo stage: reused (key ") and "s to compute)" in lines[0]
    stored = list((tmp_path / "store" / "stage").iterdir())
    assert len(stored) == 1 and (stored[0] / ENTRY).is_file()
    meta = json.loads((stored[0] / ENTRY).read_text())
    assert meta["key"] == {"n": 3, "names": ["a", "b"]} and meta["name"] == "stage"
    assert (
        any(k.endswith("stages:helper") for k in meta["units"]) and meta["bytes"] > 0 and "python" in meta["versions"]
    )


def test_another_key_recomputes(tmp_path, toy):
    module, _ = toy
    count = Counter(module.stage)
    for n in (1, 2, 1):
        memo(tmp_path, "stage", {"n": n}, count)
    assert count.calls == 2 and len(list((tmp_path / "stage").iterdir())) == 2


def test_a_change_to_reached_code_recomputes_and_to_other_code_reuses(tmp_path, toy):
    module, path = toy
    assert memo(tmp_path, "stage", {}, module.stage)["value"] == 1
    module = _edit(path, "return 0", "return 100")  # unrelated: stage never reaches it
    got = kept(tmp_path, "stage", {}, module.stage)
    assert got.reused and got.value["value"] == 1
    module = _edit(path, "return 1", "return 2")  # helper: stage reaches it
    got = kept(tmp_path, "stage", {}, module.stage)
    assert not got.reused and got.value["value"] == 2
    assert len(list((tmp_path / "stage").iterdir())) == 2  # one entry for each code of stage


def test_code_named_beside_compute_keys_the_entry(tmp_path, toy):
    module, path = toy
    compute = Counter(lambda: 5)
    memo(tmp_path, "stage", {}, compute, code=[module.unrelated])
    memo(tmp_path, "stage", {}, compute, code=[module.unrelated])
    assert compute.calls == 1
    module = _edit(path, "return 0", "return 100")
    memo(tmp_path, "stage", {}, compute, code=[module.unrelated])
    assert compute.calls == 2


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ({"a": object()}, "key['a']"),
        ({"lr": math.nan}, "key['lr'] is nan"),
        ({1: "x"}, "the key 1"),
        ([1, {2, 3}], "key[1]"),
        ({"p": Path("x")}, "PosixPath"),
    ],
)
def test_bad_keys_are_refused_naming_the_value(tmp_path, key, named):
    calls = []
    with pytest.raises(MemoError, match="memo key") as err:
        memo(tmp_path, "stage", key, lambda: calls.append(1))
    assert named in str(err.value) and not calls
    with pytest.raises(MemoError):
        memo(None, "stage", key, lambda: calls.append(1))  # refused with no store too
    assert not calls


def test_bad_names_are_refused(tmp_path):
    for name in ("", ".hidden", "a/b", "a b"):
        with pytest.raises(MemoError, match="the name"):
            memo(tmp_path, name, {}, lambda: 1)


def test_keys_take_dataclasses_and_numpy_scalars():
    @dataclass
    class C:
        lr: float
        widths: tuple[int, ...]

    assert key_text({"c": C(np.float32(0.5).item(), (1, 2)), "n": np.int64(3)}) == key_text(
        {"n": 3, "c": {"widths": [1, 2], "lr": 0.5}}
    )


@dataclass
class Point:
    x: float
    hits: np.ndarray


def test_values_round_trip_by_type_and_by_hooks(tmp_path):
    point = Counter(lambda: Point(0.1, np.arange(3, dtype=np.int16)))
    memo(tmp_path, "point", {}, point, like=Point)
    back = memo(tmp_path, "point", {}, point, like=Point)
    assert back.x == 0.1 and back.hits.dtype == np.int16 and back.hits.tolist() == [0, 1, 2] and point.calls == 1
    plain = memo(tmp_path, "point", {}, point)  # without `like`: JSON values (arrays still arrays)
    assert isinstance(plain, dict) and plain["x"] == 0.1 and plain["hits"].tolist() == [0, 1, 2]

    def save(v, d):
        np.savez(d / "a.npz", a=v)

    def load(d):
        with np.load(d / "a.npz") as z:
            return z["a"]

    array = Counter(lambda: np.linspace(0, 1, 7, dtype=np.float32))
    first = memo(tmp_path, "array", {}, array, save=save, load=load)
    again = memo(tmp_path, "array", {}, array, save=save, load=load)
    assert again.dtype == np.float32 and np.array_equal(again, first) and array.calls == 1


def test_no_store_computes_every_time_and_reuse_false_replaces(tmp_path):
    count = Counter(lambda: 1)
    memo(None, "stage", {}, count)
    memo(None, "stage", {}, count)
    assert count.calls == 2
    values = iter([1, 2, 3])
    compute = Counter(lambda: next(values))
    memo(tmp_path, "stage", {}, compute)
    assert memo(tmp_path, "stage", {}, compute, reuse=False) == 2
    assert memo(tmp_path, "stage", {}, compute) == 2 and compute.calls == 2  # the replaced entry is kept
    assert len(list((tmp_path / "stage").iterdir())) == 1


def test_the_run_context_reuses_on_resume_or_when_shared(tmp_path):
    count = Counter(lambda: 7)
    fresh = RunContext.detached(memo_dir=tmp_path)
    resumed = RunContext.detached(memo_dir=tmp_path, resume=True)
    fresh.memo("stage", {}, count)
    fresh.memo("stage", {}, count)  # a fresh run recomputes
    assert count.calls == 2
    resumed.memo("stage", {}, count)
    fresh.memo("stage", {}, count, shared=True)
    assert count.calls == 2
    RunContext.detached().memo("stage", {}, count)  # keeps nothing
    assert count.calls == 3


def test_a_run_notes_the_entries_it_reused_and_those_it_stored(tmp_path):
    """What a run reuses of the memo store goes into its record (results.json `reused`), counted per stage; what it
    stores, or starts working on, is what an interrupted run says it kept."""
    count = Counter(lambda: 7)
    ctx = RunContext.detached(memo_dir=tmp_path, resume=True)
    with collecting_reuse() as first:
        ctx.memo("stage", {"n": 1}, count)
        ctx.memo("stage", {"n": 2}, count)
        ctx.memo("work", {}, lambda directory: 3, work=True)
    assert first.record() == [] and first.summary() == ""
    assert first.memo_kept == {"stage": 2, "work": 1} and first.memo_reused == {}
    pieces = Stage(tmp_path, "piece", lambda: 0)
    with collecting_reuse() as second:
        for n in (1, 2, 1):
            ctx.memo("stage", {"n": n}, count)
        ctx.memo("work", {}, lambda directory: 3, work=True)
        store_value(pieces.entry({"i": 0}), 5, seconds=0.1)
        assert lookup(pieces.entry({"i": 0}), report=False) == (True, 5)  # a piece of many: counted, not logged
        RunContext.detached(memo_dir=tmp_path).memo("stage", {"n": 1}, count)  # a fresh run recomputes
    assert count.calls == 3
    assert second.record() == [
        {"kind": "memo", "what": "stage", "entries": 3},
        {"kind": "memo", "what": "work", "entries": 1},
        {"kind": "memo", "what": "piece", "entries": 1},
    ]
    assert second.memo_kept == {"piece": 1, "stage": 1}
    assert second.summary() == "reused earlier work: memo stage (3 entries), memo work (1 entry), memo piece (1 entry)"
    ctx.memo("stage", {"n": 1}, count)  # outside a run's collection: nothing noted, nothing fails
    assert second.memo_reused["stage"] == 3


def test_work_directories_resume_and_become_the_entry(tmp_path):
    def compute(work):
        done = sorted(p.name for p in work.glob("part_*"))
        for i in range(len(done), 3):
            (work / f"part_{i}").write_text(str(i))
        return {"parts": len(done)}

    (tmp_path / "stage").mkdir()
    got = kept(tmp_path, "stage", {}, compute, work=True)
    assert got.value == {"parts": 0} and sorted(p.name for p in got.entry.path.glob("part_*")) == [
        "part_0",
        "part_1",
        "part_2",
    ]
    assert not got.entry.work.exists()


KILLABLE = """
import os
import time
from pathlib import Path


def slow():
    if os.environ.get("MEMO_SLEEP"):
        Path(os.environ["MEMO_MARKER"]).write_text("started")
        time.sleep(60)
    return 2


def slow_work(work):
    done = sorted(p.name for p in work.glob("part_*"))
    (work / f"part_{len(done)}").write_text("written")
    if os.environ.get("MEMO_SLEEP"):
        Path(os.environ["MEMO_MARKER"]).write_text("started")
        time.sleep(60)
    return {"found": done}
"""

CHILD = """
import sys
from {package}.killable import slow, slow_work
from core.memo import memo

work = sys.argv[2] == "work"
memo(sys.argv[1], "slow", {{"k": 1}}, slow_work if work else slow, work=work)
"""


def _kill_while_computing(tmp_path: Path, toy, mode: str):
    """Run a stage of the toy package in a child process and SIGKILL it while it computes; the toy's module."""
    _, path = toy
    (path.parent / "killable.py").write_text(KILLABLE)
    package = path.parent.name
    marker = tmp_path / f"started-{mode}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(path.parent.parent)]),
        "MEMO_SLEEP": "1",
        "MEMO_MARKER": str(marker),
    }
    code = CHILD.format(package=package)
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "store"), mode], env=env)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the child never started computing"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    importlib.invalidate_caches()
    return importlib.import_module(f"{package}.killable")


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if not p.name.startswith(".")] if folder.exists() else []


def test_a_sigkill_during_compute_leaves_no_entry_and_the_next_call_stores(tmp_path, toy):
    killable = _kill_while_computing(tmp_path, toy, "plain")
    assert not _entries(tmp_path / "store" / "slow")
    got = kept(tmp_path / "store", "slow", {"k": 1}, killable.slow)
    assert not got.reused and got.value == 2 and got.entry.exists()
    assert kept(tmp_path / "store", "slow", {"k": 1}, killable.slow).reused


def test_a_sigkill_during_work_keeps_the_work_for_the_next_call(tmp_path, toy):
    killable = _kill_while_computing(tmp_path, toy, "work")
    folder = tmp_path / "store" / "slow"
    assert not _entries(folder)
    got = kept(tmp_path / "store", "slow", {"k": 1}, killable.slow_work, work=True)
    assert got.value == {"found": ["part_0"]} and not got.reused  # the killed run's part was kept and found
    assert sorted(p.name for p in got.entry.path.glob("part_*")) == ["part_0", "part_1"]
    assert not got.entry.work.exists() and _entries(folder) == [got.entry.path]


def test_a_fresh_start_discards_earlier_work(tmp_path, toy):
    killable = _kill_while_computing(tmp_path, toy, "work")
    got = kept(tmp_path / "store", "slow", {"k": 1}, killable.slow_work, work=True, reuse=False)
    assert got.value == {"found": []}


# ---------------------------------------------------------------------------------------------- make prune


def test_prune_removes_exactly_the_work_of_other_code_and_reports_bytes(tmp_path, toy, capsys):
    module, path = toy
    outputs = tmp_path / "outputs"
    store = outputs / "toy" / "memo"
    old = kept(store, "stage", {"n": 1}, module.stage).entry
    other = kept(store, "other", {}, module.unrelated).entry  # code the edit below does not touch
    module = _edit(path, "return 1", "return 2")
    new = kept(store, "stage", {"n": 1}, module.stage).entry
    assert new.path != old.path
    dead = store / "stage" / ".tmp-999999999-abcd"  # a writer that is gone (no such pid)
    dead.mkdir()
    (dead / "half").write_bytes(b"x" * 100)
    live = store / "stage" / f".tmp-{os.getpid()}-abcd"  # this process: being written
    live.mkdir()
    foreign = store / "stage" / "0123456789ab-0123456789ab"  # no entry.json: unknown code
    foreign.mkdir()
    (foreign / "value.json").write_text("1")

    found = {s.path: s for s in stale(outputs)}
    assert set(found) == {old.path, dead, foreign}
    assert "made by other code" in found[old.path].why and "stages:helper" in found[old.path].why
    assert found[dead].bytes == 100 and found[old.path].bytes == sum(
        p.stat().st_size for p in old.path.rglob("*") if p.is_file()
    )
    from scripts.prune import main

    assert main(["--outputs", str(outputs), "--dry-run"]) == 0
    out = capsys.readouterr().out
    total = sum(s.bytes for s in found.values())
    assert f"3 kept item(s) made by other code, {total} bytes" in out and "would be removed" in out
    assert old.path.exists() and dead.exists()
    assert main(["--outputs", str(outputs)]) == 0
    assert f"{total} bytes" in capsys.readouterr().out
    assert not old.path.exists() and not dead.exists() and not foreign.exists()
    assert new.path.exists() and other.path.exists() and live.exists()
    assert not list(stale(outputs))


def test_prune_judges_checkpoints_by_their_code_manifest(tmp_path):
    from core.paper import find_paper
    from core.runner import write_code_manifest

    checkpoints = tmp_path / "prng" / "checkpoints"
    units = compute_units(find_paper("papers.prng"))
    current, changed, unknown = (checkpoints / n for n in ("aaaa-current", "bbbb-changed", "cccc-unknown"))
    write_code_manifest(current, "prng", units)
    some = sorted(k for k in units if ":" in k)[0]
    write_code_manifest(changed, "prng", {**units, some: "0" * 64})
    unknown.mkdir(parents=True)
    (unknown / "step_000000001.msgpack").write_bytes(b"x" * 10)
    found = {s.path: s.why for s in stale(tmp_path)}
    assert set(found) == {changed, unknown}
    assert some in found[changed] and "unknown code" in found[unknown]


def test_prune_refuses_a_missing_output_root(tmp_path, capsys):
    from scripts.prune import main

    assert main(["--outputs", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_prune_on_a_fresh_clone_says_nothing_ran_yet(tmp_path, capsys, monkeypatch):
    from scripts.prune import main

    monkeypatch.chdir(tmp_path)  # no outputs/ here: nothing has run
    assert main([]) == 0 and main(["--dry-run"]) == 0
    assert "nothing to prune: no run has written to outputs/ yet" in capsys.readouterr().out

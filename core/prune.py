"""Kept work made by other code than the checkout's, found and removed (`make prune`, scripts/prune.py).

Under an output root, each paper keeps
- stage values (core.memo) in `<paper>/memo/<name>/<key>-<code>/`, whose entry.json lists the units of the code
  that made them: stale where any of them differs from the checkout's (core.provenance.changed_units); a stage's
  partial work in `.work-<key>-<code>/` (work.json: its units), stale likewise unless a process holds its lock;
  and `.tmp-<pid>-...` directories that a killed writer left (its process is gone);
- training checkpoints in `<paper>/checkpoints/<config key>-<code>/`, whose code.json (written by core.runner when
  a run starts) lists the run's compute units: stale where they differ from the paper's compute units now.
A directory without its record of the code is "made by unknown code", and stale too. Work made by the current code
is never listed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from core.context import CODE_MANIFEST
from core.memo import ENTRY, TMP_PREFIX, WORK_PREFIX, WORK_UNITS


@dataclass(frozen=True)
class Stale:
    """A directory (or file) of kept work that the checkout's code would not reuse, why, and its bytes."""

    path: Path
    why: str
    bytes: int


def size_of(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _held(lock: Path) -> bool:
    """Whether a process holds the lock file (a stage is working in its work directory)."""
    if not lock.exists():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def _changed(units: dict[str, str]) -> str | None:
    from core.provenance import changed_units

    changed = changed_units(units)
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"made by other code ({len(changed)} units changed: {shown})"


def _units(path: Path) -> dict[str, str] | None:
    try:
        units = json.loads(path.read_text())["units"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return units if isinstance(units, dict) else None


def _memo_item(path: Path) -> str | None:
    """Why a directory under `<paper>/memo/<name>/` is stale; None where the checkout's code would reuse it."""
    name = path.name
    if name.startswith(TMP_PREFIX):
        pid = name[len(TMP_PREFIX) :].split("-")[0]
        if pid.isdigit() and _alive(int(pid)):
            return None
        return "left by a writer that is gone"
    if name.endswith(".lock") and name.startswith(WORK_PREFIX):
        if path.with_name(name.removesuffix(".lock")).exists() or _held(path):
            return None
        return "the lock of finished work"
    if name.startswith(WORK_PREFIX):
        if _held(path.with_name(name + ".lock")):
            return None
        units = _units(path / WORK_UNITS)
        return "partial work made by unknown code" if units is None else _changed(units)
    units = _units(path / ENTRY)
    return "made by unknown code" if units is None else _changed(units)


def _checkpoint_item(path: Path) -> str | None:
    """Why a run's checkpoint directory is stale; None where its code is the paper's compute code now."""
    try:
        manifest = json.loads((path / CODE_MANIFEST).read_text())
        paper, units = manifest["paper"], manifest["units"]
    except (OSError, ValueError, KeyError, TypeError):
        return "made by unknown code (no code.json)"
    from core.paper import find_paper
    from core.provenance import compute_units

    try:
        now = compute_units(find_paper(f"papers.{paper}"))
    except (ImportError, TypeError, ValueError):
        return f"made by the code of paper {paper!r}, which this checkout does not have"
    changed = sorted(k for k in {*units, *now} if units.get(k) != now.get(k))
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"made by other code ({len(changed)} units differ: {shown})"


def stale(output_root: str | os.PathLike = "outputs") -> Iterator[Stale]:
    """Every piece of kept work under `output_root` that the checkout's code would not reuse."""
    root = Path(output_root)
    for item in sorted(root.glob("*/memo/*/*")):
        why = _memo_item(item)
        if why is not None:
            yield Stale(item, why, size_of(item))
    for item in sorted(root.glob("*/checkpoints/*")):
        if item.is_dir():
            why = _checkpoint_item(item)
            if why is not None:
                yield Stale(item, why, size_of(item))


def remove(item: Stale) -> None:
    if item.path.is_dir() and not item.path.is_symlink():
        shutil.rmtree(item.path)
    else:
        item.path.unlink(missing_ok=True)


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"

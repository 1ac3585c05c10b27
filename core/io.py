"""Atomic file output: write to a temporary file in the same directory, then rename over the target.

A reader (or a run killed half-way) sees either the old file or the new one, never a torn one. And one writer at a
time: `exclusive_lock(path, busy)` holds a lock file while a process works, so a second one fails at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Call `write(fileobj)` on a temporary file next to `path`, fsync it, then rename it to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the permissions open() would
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n")


def json_text(obj: Any, indent: int = 1) -> str:
    """`obj` as strict JSON (no NaN) for files people read and diff: objects indented, each list of plain numbers,
    strings or nulls on one line (a curve of a thousand points is one line, not a thousand)."""

    def scalar_list(x: Any) -> bool:
        return isinstance(x, list) and all(v is None or isinstance(v, bool | int | float | str) for v in x)

    def write(x: Any, depth: int) -> str:
        pad, inner = " " * (indent * depth), " " * (indent * (depth + 1))
        if isinstance(x, dict) and x:
            items = [f"{inner}{json.dumps(str(k))}: {write(v, depth + 1)}" for k, v in x.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(x, list) and x and not scalar_list(x):
            return "[\n" + ",\n".join(inner + write(v, depth + 1) for v in x) + "\n" + pad + "]"
        return json.dumps(x, allow_nan=False, separators=(", ", ": "))

    return write(obj, 0) + "\n"


def atomic_savefig(path: str | os.PathLike, figure: Any, **kwargs: Any) -> Path:
    """Save a matplotlib figure atomically (the format follows the path's suffix)."""
    fmt = Path(path).suffix.lstrip(".") or "png"
    kwargs.setdefault("dpi", 120)
    kwargs.setdefault("bbox_inches", "tight")
    return atomic_write(path, lambda f: figure.savefig(f, format=fmt, **kwargs))


def atomic_symlink(target: str | os.PathLike, link: str | os.PathLike) -> Path:
    """Point `link` at `target` (stored relative to the link's directory), replacing any old link atomically."""
    link = Path(link)
    rel = os.path.relpath(Path(target).resolve(), link.parent.resolve())
    tmp = link.parent / f".{link.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    os.symlink(rel, tmp)
    os.replace(tmp, link)
    return link


@contextmanager
def exclusive_lock(path: str | os.PathLike, busy: Callable[[], Exception]) -> Iterator[None]:
    """Hold an exclusive lock on the lock file `path` (made if missing, in a folder that must exist) for the block;
    where another process holds it, raise `busy()` at once instead of waiting."""
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy() from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)

"""Kept work: one store for what a run's stages compute and a later run may reuse (featurised molecules, a trained
model, each simulated cell or evaluated batch), keyed by the settings the stage reads and the code it can reach.

    graphs = ctx.memo("features", {"indices": ..., "max_spd": 20}, compute, save=..., load=...)
    memo(store_dir, name, key, compute)          # the same outside a run (store_dir None: compute, keep nothing)

**The key.** An entry is `<store>/<name>/<key hash>-<code>/`: the key hash is 12 hex digits of the key's canonical
JSON (`key_text`: dicts, lists, dataclasses and namespaces by their fields, numbers, strings; anything else is
refused, naming it), the code is `core.provenance.callable_fingerprint` of `compute` (with the callables named in
`code`, the code that made the stage's inputs where `compute` does not call it, and the `save` and `load` hooks).
Only code that `compute` names is followed: a nested function's captured variables are not, so a stage is best a
top-level function or a functools.partial of one. So a change to the featurisation code gives another entry for the
features, and a change to the training code that reads them does not.

**Atomic.** A value is computed, written into `<name>/.tmp-<pid>-<random>/` with `entry.json`, then the directory
is renamed into place: an entry directory exists only when complete, and a killed run leaves a tmp directory that
lookups ignore and `make prune` removes. Where two processes store the same entry, the second keeps the first's.
With `work=True` compute gets a directory of its own that outlives a killed run (`<name>/.work-<key>-<code>/`,
locked while in use): a stage that checkpoints (a training, a dataset written in parts) resumes there, and the
directory itself becomes the entry when compute returns.

**The value.** By default `value.json`, core.results.to_json of the value, read back by from_json(`like`) (plain
JSON when `like` is None); `save(value, directory)` and `load(directory)` keep values that are files (npz,
Parquet, msgpack). `entry.json` records the name, key, code, the units the code fingerprint covers
(`core.provenance.changed_units` tells later which of them changed), when it was made, how long it took, its bytes
and the package versions (core.context.versions).

**Reuse.** `reuse=False` recomputes (and replaces the entry): a run's stages follow `resume` (RunContext.memo),
except those every run shares (featurised data). A reuse logs one line: name, key, code, when it was made and how
long it had taken, and is noted for the run's record of what it reused (core.context.note_memo: results.json's
`reused`); so is what a run stores, for what an interrupted run says it kept.

One module over 400 lines: a stage's key, its store on disk (atomic write, lock, read back) and the reuse it
reports are one protocol; split, the store's layout would have to be public to both halves.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import logging
import math
import os
import secrets
import shutil
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.context import note_memo

log = logging.getLogger(__name__)

ENTRY = "entry.json"  # in every entry directory: what made it
VALUE = "value.json"  # the value, where no `save` hook is given
TMP_PREFIX = ".tmp-"  # `.tmp-<pid>-<random>`: an entry being written (or a killed writer's leftovers)
WORK_PREFIX = ".work-"  # `.work-<key>-<code>`: a stage's work kept across kills, the entry once done
WORK_UNITS = "work.json"  # in a work directory: its code's units, so `make prune` can tell it is stale


class MemoError(ValueError):
    """A key that has no canonical JSON form, a name that is not a directory name, or an entry that cannot be read."""


# ---------------------------------------------------------------------------------------------- keys


def _plain(x: Any, where: str) -> Any:
    if x is None or isinstance(x, bool | str):
        return x
    if isinstance(x, enum.Enum):
        return _plain(x.value, where)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise MemoError(f"memo key: {where} is {x!r}; a key's numbers must be finite")
        return float(x)
    if type(x).__module__ == "numpy" and hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        return _plain(x.item(), where)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name), f"{where}.{f.name}") for f in dataclasses.fields(x)}
    if isinstance(x, dict | types.SimpleNamespace):
        out = {}
        for k, v in (vars(x) if isinstance(x, types.SimpleNamespace) else x).items():
            if not isinstance(k, str):
                raise MemoError(f"memo key: {where} has the key {k!r} ({type(k).__name__}); keys must be strings")
            out[k] = _plain(v, f"{where}[{k!r}]")
        return out
    if isinstance(x, list | tuple):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(x)]
    raise MemoError(
        f"memo key: {where} is {x!r} ({type(x).__name__}), which has no canonical JSON form; a key is made of "
        "dicts with string keys, lists, tuples, dataclasses, namespaces, enums, numbers, strings, booleans and None"
    )


def key_text(key: Any) -> str:
    """The canonical JSON of `key` (sorted keys, no spaces); MemoError naming the part that has none."""
    return json.dumps(_plain(key, "key"), sort_keys=True, separators=(",", ":"), allow_nan=False)


def key_hash(key: Any) -> str:
    """12 hex digits of `key_text(key)`."""
    return hashlib.sha256(key_text(key).encode()).hexdigest()[:12]


def check_name(name: str) -> str:
    """A stage's name is a directory name: letters, digits, '_', '-' and '.', not starting with '.'."""
    if not name or name.startswith(".") or any(not (ch.isalnum() or ch in "_-.") for ch in name):
        raise MemoError(f"memo: the name {name!r} must be letters, digits, '_', '-' or '.', not starting with '.'")
    return name


# ---------------------------------------------------------------------------------------------- entries


def code_units(compute: Callable[..., Any], code: Sequence[Callable[..., Any]] = ()) -> dict[str, str]:
    """The units (core.provenance) the code of `compute` and of `code` can reach, with core's and ipu_model's data."""
    from core.provenance import callable_units, shared_data

    units: dict[str, str] = {}
    for fn in (compute, *code):
        units.update(callable_units(fn))
    return {**units, **shared_data()}


@dataclass(frozen=True)
class Entry:
    """Where the value of (name, key, code) is kept under a store directory."""

    store: Path
    name: str
    key: Any  # the key's canonical JSON value
    key_hash: str
    code: str  # core.provenance.units_fingerprint of `units`
    units: dict[str, str]

    @property
    def path(self) -> Path:
        return self.store / self.name / f"{self.key_hash}-{self.code}"

    @property
    def work(self) -> Path:
        return self.store / self.name / f"{WORK_PREFIX}{self.key_hash}-{self.code}"

    def exists(self) -> bool:
        return (self.path / ENTRY).is_file()

    def meta(self) -> dict[str, Any]:
        """entry.json of the stored entry."""
        try:
            return json.loads((self.path / ENTRY).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise MemoError(f"memo {self.name}: {self.path / ENTRY} cannot be read ({e}); delete {self.path}") from e


class Stage:
    """The entries of one stage under a store, its code's units found once: for a stage kept in many small pieces
    (each simulated cell), whose pieces are looked up (`lookup`) and stored (`store_value`) one by one."""

    def __init__(self, store: str | os.PathLike, name: str, compute: Callable[..., Any], code: Sequence[Callable] = ()):
        from core.provenance import units_fingerprint

        self.store, self.name = Path(store), check_name(name)
        self.units = code_units(compute, code)
        self.code = units_fingerprint(self.units)

    def entry(self, key: Any) -> Entry:
        """The entry of `key`, whether or not it is stored."""
        plain = json.loads(key_text(key))
        return Entry(self.store, self.name, plain, key_hash(key), self.code, self.units)


def entry(
    store: str | os.PathLike, name: str, key: Any, compute: Callable[..., Any], code: Sequence[Callable] = ()
) -> Entry:
    """The entry of `name` and `key` made by the code of `compute` (and `code`), whether or not it is stored."""
    key_text(key)
    return Stage(store, name, compute, code).entry(key)


@dataclass(frozen=True)
class Kept:
    """What `kept` returns: the value, whether it was reused, and its entry (None where nothing is kept)."""

    value: Any
    reused: bool
    entry: Entry | None


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _when(meta: dict) -> str:
    try:
        return dt.datetime.fromisoformat(meta["created"]).astimezone().strftime("%Y-%m-%d %H:%M")
    except (KeyError, ValueError):
        return "at an unknown time"


def _read(e: Entry, like: Any, load: Callable[[Path], Any] | None) -> Any:
    if load is not None:
        return load(e.path)
    from core.results import from_json

    try:
        data = json.loads((e.path / VALUE).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise MemoError(f"memo {e.name}: {e.path / VALUE} cannot be read ({err}); delete {e.path}") from err
    return from_json(Any if like is None else like, data, f"memo {e.name}")


def _write(value: Any, directory: Path, save: Callable[[Any, Path], Any] | None) -> None:
    if save is not None:
        save(value, directory)
        return
    from core.io import json_text
    from core.results import to_json

    (directory / VALUE).write_text(json_text(to_json(value, f"memo value in {directory.parent.name}")))


def _describe(e: Entry) -> str:
    return f"key {e.key_hash}, code {e.code}"


def _label(e: Entry) -> str:
    """`<paper>/<name>` for a run's store (`<output_root>/<paper>/memo`), else the name."""
    return f"{e.store.parent.name}/{e.name}" if e.store.name == "memo" else e.name


def _locked(path: Path):
    """Hold an exclusive lock on `path` (a lock file) while a stage works in its work directory; a second process
    working on the same entry fails at once, naming the lock."""
    from core.io import exclusive_lock

    path.parent.mkdir(parents=True, exist_ok=True)
    return exclusive_lock(
        path,
        lambda: MemoError(
            f"memo: {path.with_suffix('')} is being worked on by another process (it holds {path}); wait for it"
        ),
    )


def _install(directory: Path, e: Entry, replace: bool) -> None:
    """Rename a complete `directory` into place as entry `e`: atomic. Where the entry appeared meanwhile (another
    process stored it), keep that one unless `replace`."""
    if e.path.exists():
        if not replace:
            shutil.rmtree(directory, ignore_errors=True)
            return
        old = e.path.parent / f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-old"
        os.rename(e.path, old)
        os.rename(directory, e.path)
        shutil.rmtree(old, ignore_errors=True)
        return
    try:
        os.rename(directory, e.path)
    except OSError:  # another process renamed its own into place first
        if not e.path.exists():
            raise
        shutil.rmtree(directory, ignore_errors=True)


def store_value(
    e: Entry,
    value: Any,
    *,
    seconds: float,
    save: Callable[[Any, Path], Any] | None = None,
    directory: Path | None = None,
    replace: bool = False,
) -> None:
    """Write `value` as entry `e` (atomically; `directory`: the work directory to turn into the entry)."""
    from core.context import versions
    from core.io import json_text

    if directory is None:
        directory = e.path.parent / f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        directory.mkdir(parents=True)
        note_memo(e.name, reused=False)  # a work directory was noted when its work started
    try:
        (directory / WORK_UNITS).unlink(missing_ok=True)
        _write(value, directory, save)
        meta = {
            "name": e.name,
            "key": e.key,
            "key_hash": e.key_hash,
            "code": e.code,
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "seconds": round(seconds, 3),
            "bytes": _size(directory),
            "versions": versions(),
            "units": e.units,
        }
        (directory / ENTRY).write_text(json_text(meta))
        _install(directory, e, replace)
    except BaseException:
        if directory.name.startswith(TMP_PREFIX):  # a work directory stays, to be resumed
            shutil.rmtree(directory, ignore_errors=True)
        raise


def lookup(
    e: Entry, *, like: Any = None, load: Callable[[Path], Any] | None = None, report: bool = True
) -> tuple[bool, Any]:
    """(True, the stored value) where entry `e` is stored, logging the reuse (unless not `report`: a piece of many
    that a progress bar counts); (False, None) where it is not."""
    if not e.exists():
        return False, None
    meta = e.meta()
    value = _read(e, like, load)
    note_memo(e.name, reused=True)
    if report:
        log.info(
            "memo %s: reused (%s, made %s, %.1f s to compute)",
            _label(e),
            _describe(e),
            _when(meta),
            meta.get("seconds", 0),
        )
    return True, value


def kept(
    store: str | os.PathLike | None,
    name: str,
    key: Any,
    compute: Callable[..., Any],
    *,
    like: Any = None,
    save: Callable[[Any, Path], Any] | None = None,
    load: Callable[[Path], Any] | None = None,
    code: Sequence[Callable[..., Any]] = (),
    reuse: bool = True,
    work: bool = False,
) -> Kept:
    """`memo`, saying whether the value was reused and where it is kept."""
    key_text(key)  # refuse a bad key before any work, store or not
    check_name(name)
    if store is None:
        value = compute(None) if work else compute()
        return Kept(value, False, None)
    # how the value is written and read back is code the entry depends on too
    e = entry(store, name, key, compute, [*code, *(f for f in (save, load) if f is not None)])
    if reuse:
        found, value = lookup(e, like=like, load=load)
        if found:
            return Kept(value, True, e)
    t0 = time.perf_counter()
    if work:
        with _locked(e.work.with_name(e.work.name + ".lock")):
            if not reuse and e.work.exists():
                shutil.rmtree(e.work)  # a fresh start: an earlier run's partial work is not resumed
            e.work.mkdir(parents=True, exist_ok=True)
            from core.io import json_text

            (e.work / WORK_UNITS).write_text(json_text({"name": e.name, "key": e.key, "units": e.units}))
            note_memo(e.name, reused=False)  # work kept across an interruption, to be resumed
            value = compute(e.work)
            seconds = time.perf_counter() - t0
            store_value(e, value, seconds=seconds, save=save, directory=e.work, replace=not reuse)
            shutil.rmtree(e.work, ignore_errors=True)  # left only where another process stored the entry first
    else:
        value = compute()
        seconds = time.perf_counter() - t0
        store_value(e, value, seconds=seconds, save=save, replace=not reuse)
    log.info("memo %s: computed in %.1f s (%s)", _label(e), seconds, _describe(e))
    return Kept(value, False, e)


def memo(
    store: str | os.PathLike | None,
    name: str,
    key: Any,
    compute: Callable[..., Any],
    *,
    like: Any = None,
    save: Callable[[Any, Path], Any] | None = None,
    load: Callable[[Path], Any] | None = None,
    code: Sequence[Callable[..., Any]] = (),
    reuse: bool = True,
    work: bool = False,
) -> Any:
    """`compute()`'s value, kept under `store/name` by `key` and the code `compute` can reach, or the value kept
    there by an earlier call (when `reuse`). `like`: the value's type for core.results.from_json (None: plain
    JSON); `save(value, directory)` / `load(directory)`: keep it as files instead; `code`: other callables whose
    code the value depends on (the code that made compute's inputs); `work`: call `compute(directory)` with a
    directory kept across kills (see the module's docstring). `store` None: compute and keep nothing."""
    return kept(store, name, key, compute, like=like, save=save, load=load, code=code, reuse=reuse, work=work).value


__all__ = [
    "Entry",
    "Kept",
    "MemoError",
    "Stage",
    "entry",
    "kept",
    "key_hash",
    "key_text",
    "lookup",
    "memo",
    "store_value",
]

"""Checkpoints for long runs: save a pytree atomically every so often, resume from the newest one.

Each checkpoint is one file `step_<step>.msgpack` (flax's msgpack serialisation of the pytree plus the step and
any JSON-able metadata), written to a temporary file and renamed, so a run killed while saving leaves the previous
checkpoint intact and never a torn file. `restore` rebuilds the pytree with the structure and dtypes of a template
(`like`), so a checkpoint from a different model or config is an error, not a silently wrong state.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from core.io import atomic_write_bytes

_NAME = re.compile(r"^step_(\d+)\.msgpack$")


class CheckpointError(RuntimeError):
    pass


class Checkpointer:
    """Keeps the newest `keep` checkpoints of one run in `directory`."""

    def __init__(self, directory: str | os.PathLike, keep: int = 2):
        if keep < 1:
            raise ValueError(f"Checkpointer: keep must be >= 1, got {keep}")
        self.directory = Path(directory)
        self.keep = keep

    def steps(self) -> list[int]:
        """Steps with a complete checkpoint on disk, oldest first."""
        if not self.directory.is_dir():
            return []
        found = (_NAME.match(p.name) for p in self.directory.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def clear(self) -> None:
        """Delete every checkpoint of this run (a fresh start must never resume an older run's state later)."""
        for step in self.steps():
            self.path(step).unlink(missing_ok=True)

    def latest_step(self) -> int | None:
        steps = self.steps()
        return steps[-1] if steps else None

    def path(self, step: int) -> Path:
        return self.directory / f"step_{step:09d}.msgpack"

    def save(self, step: int, state: Any, metadata: dict[str, Any] | None = None) -> Path:
        """Write `state` (any pytree of arrays and scalars) as the checkpoint of `step`, with JSON-able `metadata`
        (tuples come back as lists); prune old checkpoints."""
        if step < 0:
            raise ValueError(f"Checkpointer.save: step must be >= 0, got {step}")
        payload = {
            "step": step,
            "metadata": json.dumps(metadata or {}),  # JSON: any nesting of lists, tuples, dicts and numbers
            "state": serialization.to_state_dict(state),
        }
        path = atomic_write_bytes(self.path(step), serialization.msgpack_serialize(payload))
        for old in self.steps()[: -self.keep]:
            self.path(old).unlink(missing_ok=True)
        return path

    def restore(self, like: Any, step: int | None = None) -> tuple[int, Any, dict[str, Any]]:
        """Return (step, state shaped like `like`, metadata) of `step` (default: the newest checkpoint)."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        path = self.path(step)
        if not path.exists():
            raise CheckpointError(f"no checkpoint for step {step} in {self.directory} (have {self.steps()})")
        payload = serialization.msgpack_restore(path.read_bytes())
        try:
            state = serialization.from_state_dict(like, payload["state"])
        except (ValueError, KeyError, TypeError) as e:
            raise CheckpointError(f"checkpoint {path} does not match the expected state structure: {e}") from e
        _check_shapes(like, state, path)
        # msgpack hands back read-only views of its buffer; a resumed run must be able to update its state
        state = jax.tree_util.tree_map(lambda x: np.array(x) if isinstance(x, np.ndarray) else x, state)
        return int(payload["step"]), state, json.loads(payload.get("metadata", "{}"))


def _check_shapes(like: Any, state: Any, path: Path) -> None:
    for (key, a), b in zip(jax.tree_util.tree_leaves_with_path(like), jax.tree_util.tree_leaves(state), strict=True):
        sa, sb = getattr(a, "shape", ()), getattr(b, "shape", ())
        if tuple(sa) != tuple(sb):
            raise CheckpointError(
                f"checkpoint {path}: leaf {jax.tree_util.keystr(key)} has shape {tuple(sb)}, expected {tuple(sa)}"
            )

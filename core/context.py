"""The context a paper's `run(cfg, ctx)` computes in: where it keeps its work and whether it may reuse it.

Two kinds of kept work: the checkpoints of the run's training loops (`checkpoint_path`, under a directory keyed by
the whole config and compute code), and the values of its stages (`memo`, core.memo: each keyed by the settings it
reads and the code it can reach, under `<output_root>/<paper>/memo`).

Kept apart from the runner (core.runner) so that the code a run executes, which the compute fingerprint covers,
does not include the code that records and decides runs.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

# the packages whose versions a run records (results.json "versions")
VERSIONED = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numpy",
    "scipy",
    "ml_dtypes",
    "hydra-core",
    "omegaconf",
    "wandb",
    "pyscf",
    "rdkit",
    "pyarrow",
)


@dataclass(frozen=True)
class RunContext:
    """The run a paper's `run(cfg, ctx)` is part of: where it keeps its work and whether it may reuse what an
    earlier run of the same config and code left there. The seed and the scale are the config's (`cfg.seed`,
    `cfg.scale.name`)."""

    paper: str
    run_dir: Path | None  # where the run record is written; None outside the runner
    checkpoint_dir: Path | None  # keyed by config and compute code; None: keep nothing
    resume: bool  # continue from what checkpoint_dir holds (never without one)
    code: str = ""  # core.provenance.compute_fingerprint of the code computing this run
    memo_dir: Path | None = None  # the paper's store of kept stage values (core.memo); None: keep nothing

    @classmethod
    def detached(
        cls, checkpoint_dir: Path | str | None = None, *, resume: bool = False, memo_dir: Path | str | None = None
    ) -> RunContext:
        """A context for calling a paper's `run` outside the runner (a test, a notebook): no run directory,
        checkpoints only under `checkpoint_dir` and stage values only under `memo_dir` when given (by default
        nothing is kept or resumed)."""
        if resume and checkpoint_dir is None and memo_dir is None:
            raise ValueError("RunContext.detached: resume=True needs a checkpoint_dir or memo_dir to resume from")
        path = None if checkpoint_dir is None else Path(checkpoint_dir)
        memo = None if memo_dir is None else Path(memo_dir)
        return cls(paper="", run_dir=None, checkpoint_dir=path, resume=resume, memo_dir=memo)

    def memo(
        self,
        name: str,
        key: Any,
        compute: Callable[..., Any],
        *,
        shared: bool = False,
        like: Any = None,
        save: Callable[[Any, Path], Any] | None = None,
        load: Callable[[Path], Any] | None = None,
        code: Sequence[Callable[..., Any]] = (),
        work: bool = False,
    ) -> Any:
        """`compute()`'s value, kept in the paper's store by `key` and the code `compute` can reach (core.memo.memo,
        whose arguments these are). It is reused when the run resumes, and by every run when `shared` (work every
        run of that code may share: featurised or labelled data); a fresh run recomputes and replaces it."""
        return self.kept(name, key, compute, shared=shared, like=like, save=save, load=load, code=code, work=work).value

    def kept(self, name: str, key: Any, compute: Callable[..., Any], *, shared: bool = False, **kwargs: Any):
        """`memo`, as a core.memo.Kept: the value, whether it was reused, and its entry."""
        from core.memo import kept

        return kept(self.memo_dir, name, key, compute, reuse=self.resume or shared, **kwargs)

    def checkpoint_path(self, *parts: str) -> Path | None:
        """`checkpoint_dir/<parts...>`, where one piece of the run keeps its checkpoints; None when nothing is kept
        (the training loops take None as 'do not checkpoint')."""
        return None if self.checkpoint_dir is None else self.checkpoint_dir.joinpath(*parts)


def versions(packages: Iterable[str] = VERSIONED) -> dict[str, str]:
    """Python, the platform and the installed versions of `packages` (and JAX's devices where JAX is loaded): what a
    run, or a stage that keeps its own work, records of the environment that computed it."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    if "jax" in sys.modules and "jax" in packages:
        import jax

        out["jax devices"] = ", ".join(sorted({d.platform for d in jax.devices()}))
    return out

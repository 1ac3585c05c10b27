"""The context a paper's `run(cfg, ctx)` computes in: where it keeps its work and whether it may reuse it.

Kept apart from the runner (core.runner) so that the code a run executes, which the compute fingerprint covers,
does not include the code that records and decides runs.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

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

    @classmethod
    def detached(cls, checkpoint_dir: Path | str | None = None, *, resume: bool = False) -> RunContext:
        """A context for calling a paper's `run` outside the runner (a test, a notebook): no run directory, and
        checkpoints only under `checkpoint_dir` when one is given (by default nothing is kept or resumed)."""
        if resume and checkpoint_dir is None:
            raise ValueError("RunContext.detached: resume=True needs a checkpoint_dir to resume from")
        path = None if checkpoint_dir is None else Path(checkpoint_dir)
        return cls(paper="", run_dir=None, checkpoint_dir=path, resume=resume)

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

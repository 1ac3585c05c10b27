"""The context a paper's `run(cfg, ctx)` computes in: where it keeps its work and whether it may reuse it.

Two kinds of kept work: the checkpoints of the run's training loops (`checkpoint_path`, under a directory keyed by
the whole config and compute code), and the values of its stages (`memo`, core.memo: each keyed by the settings it
reads and the code it can reach, under `<output_root>/<paper>/memo`).

What a run reuses of earlier runs' work is noted as it happens (`note_resumed` by core.train.fit, `note_memo` by
core.memo) into the `Reuse` the runner collects (`collecting_reuse`), for results.json's `reused` list and the line
at the end of a run; outside the runner the notes are only logged.

Kept apart from the runner (core.runner) so that the code a run executes, which the compute fingerprint covers,
does not include the code that records and decides runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import platform
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
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

log = logging.getLogger(__name__)


CODE_MANIFEST = "code.json"  # in a run's checkpoint directory: the units of the code that computes it (`make prune`)


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


# the vector instruction sets XLA's CPU backend compiles for when the host has them: two machines differing in these
# can compute different float32 results from the same program (fused multiply-adds, vector widths)
CPU_FEATURES = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "asimd", "sve")


def cpu_description(cpuinfo: str | None = None) -> str:
    """The processor a run computed on: its model, its logical cores and which of CPU_FEATURES it has (read from
    /proc/cpuinfo on Linux, `cpuinfo` in tests; elsewhere platform.processor()). Results from machines that differ
    here may differ in their last bits."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return platform.processor() or platform.machine() or "unknown"
    fields: dict[str, str] = {}
    cores = 0
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            cores += 1
        fields.setdefault(key, value.strip())
    model = fields.get("model name") or fields.get("CPU part") or platform.machine() or "unknown"
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    have = [f for f in CPU_FEATURES if f in flags]
    return f"{model}, {cores or '?'} logical cores, {' '.join(have) if have else 'none of ' + ' '.join(CPU_FEATURES)}"


# ---------------------------------------------------------------------------------------------- what a run reused


@dataclass
class Reuse:
    """What one run reused of earlier runs' work, and what of its own it kept for later ones, in the order it
    happened: the training loops resumed from a checkpoint, the memo entries (core.memo) reused and those stored."""

    resumed: list[dict[str, Any]] = field(default_factory=list)  # {"what", "from_step", "of"} per resumed loop
    memo_reused: dict[str, int] = field(default_factory=dict)  # memo name -> entries reused
    memo_kept: dict[str, int] = field(default_factory=dict)  # memo name -> entries stored (or being worked on)

    def record(self) -> list[dict[str, Any]]:
        """results.json's `reused`: one item per resumed loop, `{"kind": "checkpoint", "what": <loop name>,
        "from_step": N, "of": M}`, then one per memo stage with reused entries, `{"kind": "memo", "what": <name>,
        "entries": n}`; empty where the run reused nothing."""
        loops = [{"kind": "checkpoint", **r} for r in self.resumed]
        return loops + [{"kind": "memo", "what": k, "entries": n} for k, n in self.memo_reused.items()]

    def summary(self) -> str:
        """One line naming what was reused ('' where nothing was)."""
        parts = [f"{r['what']} from step {r['from_step']} of {r['of']}" for r in self.resumed]
        parts += [f"memo {k} ({n} {'entry' if n == 1 else 'entries'})" for k, n in self.memo_reused.items()]
        return f"reused earlier work: {', '.join(parts)}" if parts else ""


_REUSE: contextvars.ContextVar[Reuse | None] = contextvars.ContextVar("run_reuse", default=None)


@contextlib.contextmanager
def collecting_reuse() -> Iterator[Reuse]:
    """Collect the notes of reuse made inside the with-block (the runner wraps a run in it)."""
    reuse = Reuse()
    token = _REUSE.set(reuse)
    try:
        yield reuse
    finally:
        _REUSE.reset(token)


def note_resumed(name: str, step: int, steps: int, checkpoint_dir: Any) -> None:
    """A training loop `name` of `steps` steps resumed from its checkpoint of `step` in `checkpoint_dir`: log one
    line and note it for the run's record."""
    log.info("%s: resumed from step %d of %d (checkpoint %s)", name, step, steps, checkpoint_dir)
    reuse = _REUSE.get()
    if reuse is not None:
        reuse.resumed.append({"what": name, "from_step": int(step), "of": int(steps)})


def note_memo(name: str, *, reused: bool) -> None:
    """A memo entry of stage `name` was reused (`reused`), or stored or started by this run: noted for the run's
    record and for what an interrupted run says it kept (core.memo logs it itself)."""
    reuse = _REUSE.get()
    if reuse is not None:
        counts = reuse.memo_reused if reused else reuse.memo_kept
        counts[name] = counts.get(name, 0) + 1

"""The runner: what happens between Hydra composing a config and `outputs/<paper>/<run>/report.md`.

`run(cfg)` validates the config (unless the preflight did), imports the paper, opens the logger, calls
`papers.<name>.reproduce(cfg, run)`, and writes the run record (report.md, results.json, figures) atomically, then
points `outputs/<paper>/latest` at it.
`reproduce` gets the validated config as objects (`cfg.seed`, `cfg.scale.name`, ... and `cfg.<paper>`, an instance
of the paper's `Config` dataclass) and the `RunContext` of the run as its second argument: the run and checkpoint
directories, whether to resume, the code fingerprint. Outside the runner (a test, a notebook) the caller passes
`RunContext.detached()`, which keeps nothing and resumes nothing, so paper code never asks whether it has a run.

Results are tied to the code that made them: the checkpoint directory is keyed by the config *and* the fingerprint of
the paper's package and the core and ipu_model modules it imports (core.provenance), so a resume after a code change
finds nothing to reuse and recomputes; results.json records the fingerprint, and `make results` marks a run made by
other code as stale.
The paper's ledger (core.ledger) is attached to the report, which shows re-specified claims' original verdicts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import json
import logging
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from core.config import ConfigError, RunConfig, validate_run_config
from core.io import atomic_savefig, atomic_symlink, atomic_write_json, atomic_write_text
from core.provenance import REPO_ROOT, dependencies, paper_fingerprint
from core.report import Report, format_value
from core.tracking import Tracker, activate, make_tracker

log = logging.getLogger(__name__)


# Keys that change where or how a run is recorded but not what it computes: left out of the checkpoint key, so
# re-running with another logger or output root still resumes the same work.
_RECORD_ONLY_KEYS = ("logger", "output_root", "resume", "hydra")

_VERSIONED = (
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
    """The run a paper's `reproduce(cfg, run)` is part of: where it keeps its work and whether it may reuse what an
    earlier run of the same config and code left there. The seed and the scale are the config's (`cfg.seed`,
    `cfg.scale.name`)."""

    paper: str
    run_dir: Path | None  # where the run record is written; None outside the runner
    checkpoint_dir: Path | None  # keyed by config and code; None: keep nothing
    resume: bool  # continue from what checkpoint_dir holds (never without one)
    code: str = ""  # core.provenance.paper_fingerprint of the code computing this run

    @classmethod
    def detached(cls, checkpoint_dir: Path | str | None = None, *, resume: bool = False) -> RunContext:
        """A context for calling `reproduce` outside the runner (a test, a notebook): no run directory, and
        checkpoints only under `checkpoint_dir` when one is given (by default nothing is kept or resumed)."""
        if resume and checkpoint_dir is None:
            raise ValueError("RunContext.detached: resume=True needs a checkpoint_dir to resume from")
        path = None if checkpoint_dir is None else Path(checkpoint_dir)
        return cls(paper="", run_dir=None, checkpoint_dir=path, resume=resume)

    def checkpoint_path(self, *parts: str) -> Path | None:
        """`checkpoint_dir/<parts...>`, where one piece of the run keeps its checkpoints; None when nothing is kept
        (the training loops take None as 'do not checkpoint')."""
        return None if self.checkpoint_dir is None else self.checkpoint_dir.joinpath(*parts)


def load_paper(module_name: str, paper: str) -> Any:
    """Import the paper's package and check it honours the contract (a `reproduce(cfg, run)` function)."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise ConfigError(f"paper {paper!r}: its package {module_name!r} (paper.module) does not exist") from e
        raise
    if not callable(getattr(module, "reproduce", None)):
        raise ConfigError(f"paper {paper!r}: package {module_name!r} has no reproduce(cfg, run) function")
    return module


class Validated(NamedTuple):
    """A run's config once validated: the paper's module, the typed config (what the run record holds and the
    checkpoint key hashes) and the config object `reproduce` gets (`core.config.run_schema`)."""

    module: Any
    typed: DictConfig
    config: RunConfig


def prepare(cfg: DictConfig, paper: str) -> Validated:
    """Import the paper and validate the whole config against the shared and the paper's schemas."""
    module_name = OmegaConf.select(cfg, "paper.module") or f"papers.{paper}"
    module = load_paper(module_name, paper)
    typed, obj = validate_run_config(cfg, paper, getattr(module, "Config", None))
    return Validated(module, typed, obj)


def config_key(cfg: DictConfig) -> str:
    """A short hash of everything in the config that affects what the run computes."""
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(plain, dict)
    content = {k: v for k, v in plain.items() if k not in _RECORD_ONLY_KEYS}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def versions() -> dict[str, str]:
    """Python, platform, the numerical packages and the repository's git commit."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    if "jax" in sys.modules:
        import jax

        out["jax devices"] = ", ".join(sorted({d.platform for d in jax.devices()}))
    try:
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        out["git commit"] = _git("rev-parse", "--short", "HEAD") + (" (modified)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=5, check=True
    ).stdout.strip()


def run(cfg: DictConfig, *, paper: str, run_dir: Path, validated: Validated | None = None) -> Report:
    """Run one paper's reproduction and write its record to `run_dir`. `validated`: `cfg` as the preflight already
    validated it (core.launch passes it for a plain run), so that it is not validated twice."""
    from core.devices import initialize_distributed, is_main_process, use_true_fp32  # JAX: once a run starts

    run_dir = Path(run_dir)
    initialize_distributed()  # one of several processes: join them before any JAX work
    use_true_fp32()
    module, typed, config = validated if validated is not None else prepare(cfg, paper)
    main = is_main_process()  # only process 0 of a multi-process run writes the record and logs
    run_dir.mkdir(parents=True, exist_ok=True)
    key = config_key(typed)
    code = run_fingerprint(module, paper)
    checkpoints = Path(typed.output_root) / paper / "checkpoints"
    ctx = RunContext(
        paper=paper, run_dir=run_dir, checkpoint_dir=checkpoints / f"{key}-{code}", resume=bool(typed.resume), code=code
    )
    if ctx.resume:
        other = sorted(p.name for p in checkpoints.glob(f"{key}*") if p.name != f"{key}-{code}")
        if other:
            log.warning(
                "%d stored run(s) of this config were computed by other code (%s); this code (%s) recomputes "
                "rather than reuse them",
                len(other),
                ", ".join(other),
                code,
            )
    config_plain = OmegaConf.to_container(typed, resolve=True, enum_to_str=True)
    assert isinstance(config_plain, dict)
    tracker = (
        make_tracker(typed.logger, run_dir=run_dir, name=f"{paper}/{run_dir.name}", group=paper, config=config_plain)
        if main
        else Tracker()
    )
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    log.info("paper %s, scale %s, seed %d -> %s", paper, typed.scale.name.value, int(typed.seed), run_dir)
    try:
        declared = declare_claims(module, config, run_dir if main else None)
        with activate(tracker):
            report = module.reproduce(config, ctx)
        if not isinstance(report, Report):
            raise TypeError(f"papers.{paper}.reproduce returned {type(report).__name__}, expected core.Report")
        report.validate()
        if declared is not None:
            report.check_declared(declared)
        report.ledger = paper_ledger(module, paper)
        wall = time.perf_counter() - t0
        if main:
            write_record(report, run_dir, typed, wall, started, key, tracker, code)
    except BaseException:
        tracker.finish(exit_code=1)
        raise
    tracker.finish(exit_code=0)
    if main:
        atomic_symlink(run_dir, Path(typed.output_root) / paper / "latest")
        print(summary_text(report, run_dir, wall))
    return report


def run_fingerprint(module: Any, paper: str) -> str:
    """The fingerprint of the code a run of `paper` executes: its package (where the module lives) and what it
    imports of core and ipu_model (core.provenance.dependencies)."""
    package = Path(module.__file__).resolve().parent
    try:
        rel = package.relative_to(REPO_ROOT)
    except ValueError:  # a paper package outside the repository (a test's toy paper)
        from core.provenance import code_fingerprint

        return code_fingerprint(package, root=package.parent)[:6] + paper_fingerprint(paper, "core", "ipu_model")[:6]
    return paper_fingerprint(paper, *dependencies(rel))


def paper_ledger(module: Any, paper: str) -> list:
    """The paper's ledger (`<package>.ledger.LEDGER`), [] where it keeps none."""
    try:
        ledger = importlib.import_module(f"{module.__name__}.ledger")
    except ModuleNotFoundError:
        return []
    return list(getattr(ledger, "LEDGER", []))


def declare_claims(module: Any, config: Any, run_dir: Path | None) -> list | None:
    """The paper's claims as declared from the config alone (its `claims(cfg)`), written to `run_dir/claims.json`
    before any work starts; None for a paper that declares none up front."""
    declare = getattr(module, "claims", None)
    if not callable(declare):
        try:
            declare = getattr(importlib.import_module(f"{module.__name__}.claims"), "claims", None)
        except ModuleNotFoundError:
            declare = None
    if not callable(declare):
        return None
    declared = list(declare(config))
    if run_dir is not None:
        atomic_write_json(run_dir / "claims.json", {"declared": [c.declaration() for c in declared]})
    log.info("%d claims declared before the run: %s", len(declared), ", ".join(c.id for c in declared))
    return declared


def write_record(
    report: Report,
    run_dir: Path,
    cfg: DictConfig,
    wall: float,
    started: dt.datetime,
    key: str,
    tracker: Tracker,
    code: str = "",
) -> None:
    """report.md, results.json and the figures, each written atomically; figures and summary go to wandb."""
    from core.plots import close  # matplotlib: imported once there are figures to save

    for fig in report.figures:
        path = atomic_savefig(run_dir / fig.filename, fig.figure)
        close(fig.figure)
        tracker.log_figure(fig.name, path, fig.caption)
    vers = versions()
    config_plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    results = {
        **report.to_dict(),
        "config": config_plain,
        "config_key": key,
        "code_fingerprint": code,
        "seed": int(cfg.seed),
        "scale": cfg.scale.name.value,
        "versions": vers,
        "started": started.isoformat(timespec="seconds"),
        "wall_seconds": round(wall, 3),
        "claims_holding": report.claims_holding,
        "claims_total": len(report.claims),
    }
    atomic_write_json(run_dir / "results.json", results)
    header = {
        "paper": report.paper,
        "scale": results["scale"],
        "seed": results["seed"],
        "started": results["started"],
        "wall time": f"{wall:.1f} s",
        "reference": OmegaConf.select(cfg, "paper.reference") or "-",
    }
    config_yaml = OmegaConf.to_yaml(OmegaConf.create(config_plain))
    atomic_write_text(run_dir / "report.md", report.to_markdown(header=header, config_yaml=config_yaml, versions=vers))
    tracker.summary(
        {
            "wall_seconds": wall,
            "claims_holding": report.claims_holding,
            "claims_total": len(report.claims),
            **{f"claims/{k}": v for k, v in report.verdicts.items()},
            **{f"claim/{c.id}": c.verdict.value for c in report.claims},
            **report.metrics,
        }
    )


def summary_text(report: Report, run_dir: Path, wall: float) -> str:
    """The claims as a plain-text table for the terminal."""
    rows = [("claim", "paper", "ours", "verdict")]
    rows += [(c.id, format_value(c.paper), format_value(c.ours), c.verdict.value) for c in report.claims]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["", f"== {report.title} =="]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [
        f"{report.verdict_summary()} · {wall:.1f} s",
        f"report: {run_dir / 'report.md'}",
    ]
    return "\n".join(lines)

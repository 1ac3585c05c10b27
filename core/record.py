"""A run's record on disk, and the decision and report re-made from it without recomputing anything.

A run directory (`outputs/<paper>/<timestamp>/`, or a reference under `results/<paper>/`) holds
- `results.json`: what `run` made: the paper's Results (core.results) with the config, seed, scale, code
  fingerprint of the computation, the commit and whether the tree was modified, versions and wall time, and what
  the run reused of earlier runs' work (`reused`: core.context.Reuse.record; records made before it was kept have
  no such field). Written once, when the computation ends; never rewritten by a decision.
- `claims.json`: the claims as declared before any work started (`declared`), then the decision: every claim with
  our figure and verdict, the facts, the estimates the tables show, the verdict counts, the ledger, and the
  decision's own fingerprint (the code of `claims`, `decide`, `render` and the ledger).
- `report.md` and its figures (PNG): what `render` made of the Results and the decision.
- `ipu_step.json` (where made): the paper's main step costed on the simulated IPU, apart from the run
  (ipu_model/steps.py); the report shows it as a table (core.ipusteps).

`decide_record(run_dir)` reads results.json, rebuilds the config and the Results, and writes claims.json, report.md
and the figures: the runner calls it at the end of every run, and `make redecide` calls it on a stored record after
a change to decision or rendering code, in seconds and without JAX. A run is stale only where its compute
fingerprint differs from the checkout's; a decision made by other decision code is re-made, not re-run.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from core.claims import Decided, jsonable
from core.config import RECORD_ONLY_KEYS, validate_run_config
from core.io import atomic_savefig, atomic_write_json, atomic_write_text, json_text
from core.ipusteps import IPU_STEP_FILE, read_steps, step_status, step_table
from core.ledger import claim_fingerprint
from core.paper import Paper, find_paper
from core.provenance import FORM, compute_fingerprint, compute_units, decision_fingerprint, git_state
from core.report import Report
from core.results import from_json, to_json

log = logging.getLogger(__name__)

RECORD_FORMAT = 2  # results.json with "results" (core.results) and claims.json with the decision
RESULTS_FILE, CLAIMS_FILE, REPORT_FILE = "results.json", "claims.json", "report.md"


class RecordError(RuntimeError):
    """A run directory that cannot be read as a record, or a decision that does not fit its declarations."""


@dataclass(frozen=True)
class Record:
    """A run directory read back: its results.json and claims.json (as stored) and the paper's protocol object."""

    run_dir: Path
    run: dict[str, Any]
    claims: dict[str, Any]
    paper: Paper

    @property
    def name(self) -> str:
        return self.run["paper"]

    def config(self) -> Any:
        """The run's config as `run`, `decide` and `render` got it (validated again by the current schema)."""
        _, obj = validate_run_config(OmegaConf.create(self.run["config"]), self.name, self.paper.Config)
        return obj

    def results(self) -> Any:
        """The stored Results, rebuilt as the paper's Results type."""
        return from_json(self.paper.Results, self.run["results"], f"{self.run_dir}/results.json: results")

    @property
    def decided(self) -> bool:
        return "claims" in self.claims


def read_record(run_dir: Path | str) -> Record:
    """Read a run directory's results.json and claims.json; RecordError naming what is missing or unreadable."""
    run_dir = Path(run_dir)
    path = run_dir / RESULTS_FILE
    if not path.is_file():
        raise RecordError(f"{run_dir} holds no {RESULTS_FILE}: not a finished run")
    try:
        run = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RecordError(f"{path} is not JSON: {e}") from None
    if run.get("format") != RECORD_FORMAT or "results" not in run:
        raise RecordError(
            f"{path} is a record of an older format (no stored Results): it cannot be re-decided; run the paper again"
        )
    claims_path = run_dir / CLAIMS_FILE
    claims = json.loads(claims_path.read_text()) if claims_path.is_file() else {}
    module = run["config"].get("paper", {}).get("module") or f"papers.{run['paper']}"
    return Record(run_dir, run, claims, find_paper(module))


def write_results(
    run_dir: Path,
    paper: Paper,
    typed_config: Any,
    results: Any,
    *,
    config_key: str,
    compute: str,
    started: dt.datetime,
    units: dict[str, str] | None = None,
    wall: float,
    versions: dict[str, str],
    reused: list[dict[str, Any]] | None = None,
    profile: dict[str, Any] | None = None,
    computed_on: str | None = None,
) -> Any:
    """Write results.json (atomically) and return the Results as read back from it, which is what gets decided.
    `reused`: what the run reused of earlier runs' work (core.context.Reuse.record; None: nothing); `profile`: where
    its time went (core.profile.Profile.summary); `computed_on`: its devices (core.runner.device_text)."""
    if not isinstance(results, paper.Results):
        raise TypeError(f"{paper.run} returned {type(results).__name__}, expected {paper.results}")
    data = to_json(results)
    again = from_json(paper.Results, data)
    if to_json(again) != data:  # a type hint that loses information on the way back
        raise TypeError(f"{paper.results}: the Results do not survive a JSON round trip (check their type hints)")
    commit, modified = git_state()
    config = OmegaConf.to_container(typed_config, resolve=True, enum_to_str=True)
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    overrides = OmegaConf.to_container(OmegaConf.load(overrides_file)) if overrides_file.is_file() else []
    record = {
        "format": RECORD_FORMAT,
        "paper": paper.name,
        "scale": typed_config.scale.name.value,
        "seed": int(typed_config.seed),
        "config_key": config_key,
        "compute_fingerprint": compute,
        "fingerprint_form": FORM,
        "compute_units": units or {},
        "commit": commit,
        "modified": modified,
        "started": started.isoformat(timespec="seconds"),
        "wall_seconds": round(wall, 3),
        "computed_on": computed_on,
        "versions": versions,
        "overrides": overrides,
        "reused": list(reused or []),
        "profile": profile or {},
        "config": config,
        "results": data,
    }
    (run_dir / RESULTS_FILE).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / RESULTS_FILE, json_text(record))
    return again


def declare(paper: Paper, config: Any, run_dir: Path | None) -> list:
    """The paper's claims from the config alone, written to `run_dir/claims.json` before any work starts."""
    declared = paper.declare(config)
    if run_dir is not None:
        atomic_write_json(run_dir / CLAIMS_FILE, {"paper": paper.name, "declared": [c.declaration() for c in declared]})
    log.info("%d claims declared before the run: %s", len(declared), ", ".join(c.id for c in declared))
    return declared


def decide_record(run_dir: Path | str, *, figures_out: list | None = None) -> Report:
    """Decide and render the stored run in `run_dir` with the checkout's decision code, and write claims.json,
    report.md and the figures (atomically; figures the new report no longer has are removed). `figures_out`, when
    given, receives (name, path, caption) of each figure written (the runner logs them to wandb)."""
    t0 = time.perf_counter()
    record = read_record(run_dir)
    paper, cfg = record.paper, record.config()
    results = record.results()
    declared = paper.declare(cfg)
    stored = record.claims.get("declared")
    if stored is not None and stored != [c.declaration() for c in declared]:
        log.info("the claims' declarations changed since the run: the decision follows the current ones")
    decided = paper.decide_results(cfg, results)
    report = paper.render_report(cfg, results, decided)
    if not isinstance(report, Report):
        raise TypeError(f"{paper.render} returned {type(report).__name__}, expected core.report.Report")
    if report.claims or report.facts:
        raise RecordError(f"{paper.render} put claims or facts in its report: render never decides (decide does)")
    steps = read_steps(run_dir)  # the paper's step on the simulated IPU, costed apart from the run (ipu_model.steps)
    if steps is not None:
        report.tables.append(step_table(steps, step_status(steps, run=record.run)))
    report.claims, report.facts, report.estimates = list(decided.claims), list(decided.facts), dict(decided.estimates)
    report.ledger = paper.load("ledger")
    report.validate()
    report.check_declared(declared)
    commit, modified = git_state()
    decision = {
        "fingerprint": decision_fingerprint(paper),
        "commit": commit,
        "modified": modified,
        "decided": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        # each claim's lock fingerprint (core.ledger): a later decision that differs must differ here (a ledger entry)
        "claims": {c.id: claim_fingerprint(c, paper.load("decide"))["fingerprint"] for c in declared},
    }
    run_dir = Path(run_dir)
    written = []
    from core.plots import close  # matplotlib: once there are figures to save

    for fig in report.figures:
        path = atomic_savefig(run_dir / fig.filename, fig.figure)
        close(fig.figure)
        written.append((fig.name, path, fig.caption))
    for old in run_dir.glob("*.png"):
        if old.name not in {f.filename for f in report.figures}:
            old.unlink()
    decision["seconds"] = round(time.perf_counter() - t0, 3)
    atomic_write_json(
        run_dir / CLAIMS_FILE,
        {
            "paper": paper.name,
            "declared": [c.declaration() for c in declared],
            "decision": decision,
            **report.to_dict(),
        },
    )
    header = header_of(record.run, decision)
    config_yaml = OmegaConf.to_yaml(OmegaConf.create(record.run["config"]))
    atomic_write_text(
        run_dir / REPORT_FILE,
        report.to_markdown(
            header=header, config_yaml=config_yaml, versions=record.run["versions"], profile=record.run.get("profile")
        ),
    )
    if figures_out is not None:
        figures_out.extend(written)
    return report


def header_of(run: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    """The report's first line: which run, made by which code, decided by which code."""
    commit = run.get("commit") or "-"
    return {
        "scale": run["scale"],
        "seed": run["seed"],
        "started": run["started"],
        "wall time": f"{run['wall_seconds']:.1f} s",
        **({"computed on": run["computed_on"]} if run.get("computed_on") else {}),
        "reference": run["config"].get("paper", {}).get("reference") or "-",
        "commit": commit + (" (modified)" if run.get("modified") else ""),
        "compute code": run["compute_fingerprint"],
        "decision code": decision["fingerprint"],
    }


def decided_values(decided: Decided | Report) -> dict[str, Any]:
    """The decision as JSON values: what a stored claims.json must equal when re-decided with the same code."""
    return {
        "claims": [{k: v for k, v in c.to_dict().items()} for c in decided.claims],
        "facts": [f.to_dict() for f in decided.facts],
        "estimates": {k: jsonable(v) for k, v in decided.estimates.items()},
    }


def status(record: Record, root: Path | None = None) -> dict[str, str]:
    """{'compute': 'current' | 'stale: ...', 'decision': 'current' | 're-decide: ...'} of a record against the
    checkout's code."""
    kwargs = {} if root is None else {"root": root}
    now = compute_fingerprint(record.paper, **kwargs)
    made = record.run.get("compute_fingerprint", "")
    compute = "current" if made == now else f"stale: made by compute code {made}, this checkout's is {now}"
    form = record.run.get("fingerprint_form", 1)
    if made != now and form != FORM:
        compute += (
            f" (fingerprinted in form {form}, this checkout's is form {FORM}: a reference made from a clean commit is "
            "re-keyed from that commit by `python scripts/record.py rekey <paper>`, without re-running it)"
        )
    stored = record.run.get("compute_units")
    if made != now and stored:
        current = compute_units(record.paper, **kwargs)
        changed = sorted({k for k in stored if current.get(k) != stored[k]} | (set(current) - set(stored)))
        if changed:
            shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
            compute += f" ({len(changed)} of its units changed or added: {shown})"
    decided_by = record.claims.get("decision", {}).get("fingerprint", "")
    current = decision_fingerprint(record.paper, **kwargs)
    decision = (
        "current"
        if decided_by == current
        else f"re-decide: decided by code {decided_by or 'none'}, this checkout's is {current}"
    )
    return {"compute": compute, "decision": decision}


# ---------------------------------------------------------------------------------------------- reference runs

REFERENCE_ROOT = "results"  # results/<paper>/: each paper's committed reference run
REFERENCE_MAX_BYTES = 2_000_000
# command-line overrides that change where or how a run is recorded, not what it computes
RECORD_ONLY_OVERRIDES = ("paper", "scale", *RECORD_ONLY_KEYS)


def changed_settings(run: dict[str, Any]) -> list[str]:
    """The run's command-line overrides that change what it computes."""
    return [
        str(o)
        for o in run.get("overrides", [])
        if str(o).lstrip("+~").split("=", 1)[0].split(".", 1)[0] not in RECORD_ONLY_OVERRIDES
    ]


def reference_problems(record: Record, root: Path | None = None) -> list[str]:
    """Why `record` may not become its paper's reference run (empty when it may): it must be a finished, plain run
    at the default scale, made from an unmodified tree by the checkout's compute code."""
    run = record.run
    problems = []
    if run["scale"] != "default":
        problems.append(f"it is a {run['scale']}-scale run; a reference is the default scale's")
    changed = changed_settings(run)
    if changed:
        problems.append(f"its command line changed what it computes ({' '.join(changed)})")
    if run.get("modified") or not run.get("commit"):
        problems.append(
            f"it was made from a modified tree (commit {run.get('commit') or 'unknown'} with uncommitted changes to "
            "the code): commit the code, then run it again"
        )
    state = status(record, **({} if root is None else {"root": root}))
    if state["compute"] != "current":
        problems.append(f"it was computed by other code than this checkout's ({state['compute']})")
    if not record.decided:
        problems.append("its decision was never written (the run did not finish): `make redecide` it first")
    return problems


def promote(run_dir: Path | str, dest: Path) -> Report:
    """Copy a finished run's record (results.json, claims.json; no checkpoints, logs or wandb files) to `dest`,
    replacing what was there, and decide and render it there with the checkout's decision code. The caller checks
    `reference_problems` first."""
    import shutil
    import tempfile

    record = read_record(run_dir)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a reference is read by everyone who clones
    try:
        for name in (RESULTS_FILE, CLAIMS_FILE):
            shutil.copy2(record.run_dir / name, staging / name)
        # the paper's step on the simulated IPU (core.ipusteps): the run's own, else the one beside the reference it
        # replaces (costed from the config's sizes, not from the run: its own fingerprint says whether it is current)
        for folder in (record.run_dir, dest):
            if (folder / IPU_STEP_FILE).is_file():
                shutil.copy2(folder / IPU_STEP_FILE, staging / IPU_STEP_FILE)
                break
        report = decide_record(staging)
        size = sum(p.stat().st_size for p in staging.iterdir())
        if size > REFERENCE_MAX_BYTES:
            raise RecordError(
                f"the record is {size / 1e6:.2f} MB, over the {REFERENCE_MAX_BYTES / 1e6:g} MB a reference may take: "
                "store less in the paper's Results"
            )
        old = dest.with_name(f".{dest.name}.old")
        if dest.exists():
            shutil.rmtree(old, ignore_errors=True)
            dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def rekey(run_dir: Path | str, tree: Path) -> tuple[str, str]:
    """Give the stored record in `run_dir` the compute fingerprint of this checkout's fingerprint form, computed on
    `tree`, a copy of the clean commit that made it (`git archive`): a change of the fingerprint's form re-keys a
    reference without re-running it. Returns (old, new) fingerprints; results.json is rewritten atomically, its
    Results untouched, and notes the old fingerprint."""
    record = read_record(run_dir)
    if record.run.get("modified") or not record.run.get("commit"):
        raise RecordError(f"{run_dir}: only a record made from a clean commit can be re-keyed from that commit")
    units = compute_units(record.paper, root=Path(tree))
    from core.provenance import units_fingerprint

    new = units_fingerprint(units)
    run = dict(record.run)
    old = run.get("compute_fingerprint", "")
    if run.get("fingerprint_form") != FORM:
        run["rekeyed"] = {
            "from": old,
            "form": run.get("fingerprint_form", 1),
            "how": f"core.provenance form {FORM} on the tree of commit {run['commit']}; nothing re-run",
        }
    run.update(compute_fingerprint=new, fingerprint_form=FORM, compute_units=units)
    atomic_write_text(Path(run_dir) / RESULTS_FILE, json_text(run))
    return old, new

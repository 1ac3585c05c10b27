"""Each paper's smoke run, made once per test session and read by the contract test (tests/papers/test_contract.py)
and by the paper's own tests (tests/papers/<paper>/test_reproduce.py). Tests of a paper's decision and report read
its stored smoke Results instead (tests/fixtures/results/, tests/papers/test_decisions.py): no smoke run executes
more than once in a session.

A smoke run is the slowest thing the suite does (GPS++ takes minutes), so `smoke_run(paper)` launches it at most once
per session, even across pytest-xdist's worker processes: the runs live under the session's shared temporary
directory, and a file lock per paper makes a second worker wait for the first one's run and read it rather than
start its own. The contract tests run last, so they find every run made by then.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.provenance import paper_fingerprint
from core.record import read_record
from tests.conftest import run_cli


@dataclass(frozen=True)
class Smoke:
    """How a paper's smoke run is launched, beyond `paper=<name> scale=smoke logger=none output_root=<dir>`."""

    args: tuple[str, ...] = ()
    timeout: float = 300
    bare_path: bool = False  # PATH holds no programs: an external tool (prng's dieharder) is missing on any machine
    seconds: float = 30  # about how long it takes in `make test` on the 2-core machine: the longest are started first
    slow: str = ""  # why the run is left to `make test-all` (every test that reads it is marked slow); "": make test


# `make test` runs the smoke runs under about 45 s on the 2-core machine (bess, packing, popsparse, prng), to keep it
# within 15 minutes there; the longer ones (1.5-2.7 minutes each, mostly compiling every arm) run in `make test-all`.
# In `make test`, every paper's decision and report are tested on its stored smoke Results
# (tests/papers/test_decisions.py), and its computation by these tests:
GPS_SLOW = "GPS++ training: tests/papers/gps/test_model.py, test_pairing.py, test_reproduce.py (resume)"
FP8_LLM_SLOW = "FP8 training: tests/core/nn/test_fp8_lm.py, tests/papers/fp8_llm/test_pretrained.py"
UNIT_SCALING_SLOW = "unit-scaled training: tests/papers/unit_scaling/test_train.py, tests/core/nn/test_transformer.py"
UMUP_SLOW = "u-muP's sweeps: tests/papers/umup/test_reproduce.py (grids, optima), tests/core/unit_scaling/test_umup.py"
QM1B_SLOW = "DFT and labelling: tests/papers/qm1b/test_dft.py, test_label.py, test_pipeline.py, test_reproduce.py"
SPARQ_SLOW = "SparQ's methods and tasks: tests/papers/sparq/test_attention.py, test_tasks.py"
SMOKE = {
    "bess": Smoke(seconds=25),
    "fp8_llm": Smoke(timeout=900, seconds=130, slow=FP8_LLM_SLOW),  # 3-4 minutes of CPU: more on a shared machine
    "gps": Smoke(timeout=1200, seconds=160, slow=GPS_SLOW),  # compilation of 4 arms: minutes on a shared machine
    "packing": Smoke(seconds=45),
    "popsparse": Smoke(seconds=50),
    "prng": Smoke(args=("prng.dieharder=true",), bare_path=True, seconds=10),
    "qm1b": Smoke(seconds=65, slow=QM1B_SLOW),
    "sparq": Smoke(seconds=70, slow=SPARQ_SLOW),  # half of it lowering the kernels onto the simulated IPU
    "umup": Smoke(seconds=70, slow=UMUP_SLOW),
    "unit_scaling": Smoke(timeout=900, seconds=120, slow=UNIT_SCALING_SLOW),  # ~3.5 minutes of CPU
}
PAPERS = sorted(SMOKE)
CONTRACT_MODULE = "tests/papers/test_contract.py"


@dataclass(frozen=True)
class SmokeRun:
    """A finished smoke run: `output_root` (what the paper's tests may run again into, to test reuse), `run_dir` (this
    run's record, not `latest`, which a later run moves), and the code fingerprint when it was launched."""

    paper: str
    output_root: Path
    run_dir: Path
    fingerprint: str

    @property
    def record(self) -> dict:
        """results.json: the run (config, fingerprints, versions, wall time) and its Results as stored."""
        return json.loads((self.run_dir / "results.json").read_text())

    @property
    def decision(self) -> dict:
        """claims.json: the declarations, then the decision (claims, verdicts, facts, estimates, ledger) and what
        the report showed (tables, metrics, figures, notes)."""
        return json.loads((self.run_dir / "claims.json").read_text())

    @property
    def declared(self) -> list[dict]:
        return self.decision["declared"]

    @property
    def claims(self) -> dict[str, dict]:
        """The decided claims by id."""
        return {c["id"]: c for c in self.decision["claims"]}

    @property
    def results(self):
        """The Results the run stored, rebuilt as the paper's Results type (core.results)."""
        return read_record(self.run_dir).results()

    def args(self, *extra: str) -> list[str]:
        """The arguments that made this run, with `extra` added (to run it again, or a variant of it)."""
        return ["paper=" + self.paper, "scale=smoke", "logger=none", f"output_root={self.output_root}", *extra]


def _launch(paper: str, root: Path) -> dict:
    spec = SMOKE[paper]
    output_root = root / paper
    env = None
    if spec.bare_path:
        (root / f"{paper}-bin").mkdir(exist_ok=True)
        env = {"PATH": str(root / f"{paper}-bin")}
    fingerprint = paper_fingerprint(paper)
    args = ["paper=" + paper, "scale=smoke", "logger=none", f"output_root={output_root}", *spec.args]
    try:
        r = run_cli(args, env=env, toy=False, timeout=spec.timeout)
    except subprocess.TimeoutExpired as e:  # recorded like any failure, so no later test launches it again
        tail = (e.stderr or b"")[-3000:]
        tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        return {
            "returncode": -1,
            "stderr": f"timed out after {spec.timeout} s\n{tail}",
            "run_dir": "",
            "fingerprint": "",
        }
    latest = output_root / paper / "latest"
    return {
        "returncode": r.returncode,
        "stderr": r.stderr[-3000:],
        "run_dir": str(latest.resolve()) if r.returncode == 0 else "",
        "fingerprint": fingerprint,
    }


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """smoke_run(paper) -> SmokeRun: the paper's smoke run, made on first use; a run that failed fails every test
    that asks for it, with the end of its stderr."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "smoke-runs"
    root.mkdir(exist_ok=True)
    cache: dict[str, dict] = {}

    def get(paper: str) -> SmokeRun:
        if paper not in SMOKE:
            raise KeyError(
                f"smoke_run: unknown paper {paper!r}; tests/papers/conftest.py SMOKE has {', '.join(PAPERS)}"
            )
        if paper not in cache:
            done = root / f"{paper}.json"
            with open(root / f"{paper}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's run of this paper finishes first
                if not done.exists():
                    done.write_text(json.dumps(_launch(paper, root)))
            cache[paper] = json.loads(done.read_text())
        made = cache[paper]
        assert made["returncode"] == 0, f"the {paper} smoke run failed:\n{made['stderr']}"
        return SmokeRun(paper, root / paper, Path(made["run_dir"]), made["fingerprint"])

    return get


def _is_contract(item) -> bool:
    return item.nodeid.split("::")[0] == CONTRACT_MODULE


def _reads_smoke(item) -> bool:
    return "smoke_run" in getattr(item, "fixturenames", ())


def _paper_of(item) -> str:
    """The paper a test reads the smoke run of: a contract test's parameter, else its folder tests/papers/<paper>/."""
    callspec = getattr(item, "callspec", None)
    if _is_contract(item) and callspec is not None:
        return callspec.params.get("paper", "")
    parts = item.nodeid.split("/")
    return parts[2] if len(parts) > 3 and parts[:2] == ["tests", "papers"] else ""


def pytest_collection_modifyitems(items):
    """Order the session so that no worker waits for another one's smoke run: first, for each paper, one test that
    asks for its smoke run, the longest run first (pytest-xdist deals the first tests out to the workers in turn, so
    the long runs start at once, in parallel, and the short tests fill the time around them); then every test that
    does not ask for one; then the paper's other tests that read its run, which is made by then; the contract tests
    last."""
    first: set[str] = set()

    def order(item) -> tuple[int, float]:
        if _is_contract(item):
            return (3, 0.0)
        paper = _paper_of(item)
        if not _reads_smoke(item) or paper not in SMOKE:
            return (1, 0.0)
        if paper in first:
            return (2, 0.0)
        first.add(paper)
        return (0, -SMOKE[paper].seconds)

    unmarked = [
        item.nodeid
        for item in items
        if _reads_smoke(item) and SMOKE.get(_paper_of(item), Smoke()).slow and item.get_closest_marker("slow") is None
    ]
    if unmarked:  # it would make a smoke run left to `make test-all` in `make test`
        raise pytest.UsageError(
            "tests that read a smoke run left to make test-all must be marked slow (tests/papers/conftest.py SMOKE): "
            + ", ".join(unmarked)
        )
    keys = {id(item): order(item) for item in items}  # in collection order, so `first` is each paper's first test
    items.sort(key=lambda item: keys[id(item)])  # stable: the collection order within each group

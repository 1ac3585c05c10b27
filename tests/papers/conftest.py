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


SMOKE = {
    "bess": Smoke(),
    "fp8_llm": Smoke(timeout=900),  # 3-4 minutes of CPU: more on a shared 2-core machine
    "gps": Smoke(timeout=1200),  # compilation of 3 arms: minutes on a shared 2-core machine
    "packing": Smoke(),
    "popsparse": Smoke(),
    "prng": Smoke(args=("prng.dieharder=true",), bare_path=True),
    "qm1b": Smoke(),
    "sparq": Smoke(),
    "umup": Smoke(),
    "unit_scaling": Smoke(timeout=900),  # ~3.5 minutes of CPU: more on a shared 2-core machine
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


def pytest_collection_modifyitems(items):
    """Run the contract tests after every other test of the session: by then each paper's own tests have made its
    smoke run, in this worker or the other, so a contract test reads the run (it waits only for a run still going
    at the end of the session)."""
    contract = {i.nodeid for i in items if i.nodeid.split("::")[0] == CONTRACT_MODULE}
    items[:] = [i for i in items if i.nodeid not in contract] + [i for i in items if i.nodeid in contract]

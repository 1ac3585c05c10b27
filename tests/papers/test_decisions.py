"""Every paper's decision and report, made from stored Results: the smoke Results in tests/fixtures/results/ (remade
by `make fixtures`), decided and rendered with the current code in a fresh process that never loads JAX, as
`make redecide` does. No paper runs here; what a run stores is tested by the contract test on the one smoke run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from core.claims import FACT_KINDS, Verdict
from tests.conftest import REPO_ROOT
from tests.papers.conftest import PAPERS

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "results"
PNG = b"\x89PNG\r\n\x1a\n"
HEAVY = ("jax", "flax", "optax", "jaxlib")

# decide and render a stored record twice in this order, then report what got imported
DECIDE = """
import json, sys
from core.record import decide_record, decided_values, read_record
run_dir = sys.argv[1]
first = decide_record(run_dir)
again = read_record(run_dir)
cfg = again.config()
second = again.paper.decide_results(cfg, again.results())
print(json.dumps({
    "same": decided_values(first) == decided_values(second),
    "heavy": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY),
}))
""".replace("HEAVY", repr(HEAVY))


@pytest.fixture(scope="module", params=PAPERS)
def decided(request, tmp_path_factory):
    paper = request.param
    stored = FIXTURES / paper / "results.json"
    assert stored.is_file(), f"{paper} has no stored smoke Results: run `make fixtures PAPER={paper}`"
    run_dir = tmp_path_factory.mktemp(paper)
    shutil.copy(stored, run_dir / "results.json")
    r = subprocess.run(
        [sys.executable, "-c", DECIDE, str(run_dir)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, (
        f"{paper}: deciding the stored smoke Results failed (if its Results type changed, remake them: `make "
        f"fixtures PAPER={paper}`):\n{r.stderr[-3000:]}"
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return paper, run_dir, out


def test_the_stored_results_decide_and_render_without_jax(decided):
    paper, run_dir, out = decided
    assert out["heavy"] == [], f"{paper}: deciding and rendering imported {out['heavy']}"
    assert out["same"], f"{paper}: deciding the same Results twice gave different values"

    decision = json.loads((run_dir / "claims.json").read_text())
    claims = decision["claims"]
    declared = decision["declared"]
    # each claim's declared keys (the labels a claim sets vary: core.claims.Claim.declaration)
    assert len(claims) == len(declared)
    assert [{k: c[k] for k in d} for c, d in zip(claims, declared, strict=True)] == declared
    counted = Counter(c["verdict"] for c in claims)
    assert decision["verdicts"] == {v.value: counted[v.value] for v in Verdict}
    assert all(f["kind"] in FACT_KINDS for f in decision["facts"])
    assert all(isinstance(k, str) and k for k in decision["estimates"])
    files = [f["file"] for f in decision["figures"]]
    assert all((run_dir / name).read_bytes()[:8] == PNG for name in files)
    assert sorted(files) == sorted(p.name for p in run_dir.glob("*.png"))
    report = (run_dir / "report.md").read_text()
    assert all(f"| {c['id']} |" in report for c in claims)
    assert all(f"]({name})" in report for name in files)

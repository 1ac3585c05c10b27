"""A run's record and what is made from it without recomputing: the decision re-made from the stored Results
(`make redecide`), the two fingerprints that say which code made and decided it, promotion to a reference
(`make reference`) and the comparison of a run with the reference (`make compare`). The toy paper of tests/fixtures
makes the runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.claims import Interval
from core.compare import compare, values_agree
from core.io import json_text
from core.paper import Paper
from core.provenance import compute_fingerprint, decision_fingerprint
from core.record import RecordError, decide_record, promote, read_record, reference_problems, status
from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """A finished default-scale toy run (5 chunks of 20000 points)."""
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("toy")
    r = run_cli(["paper=toy", "logger=none", f"output_root={root}"])
    assert r.returncode == 0, r.stderr
    return (root / "toy" / "latest").resolve()


def copy_run(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    return dest


def edit_results(run_dir: Path, **changes) -> None:
    """Change what the stored run computed, as if it had computed something else."""
    path = run_dir / "results.json"
    record = json.loads(path.read_text())
    for key, value in changes.items():
        if key in record["results"]:
            record["results"][key] = value
        else:
            record[key] = value
    path.write_text(json_text(record))


def hits(values: list[int]) -> dict:
    return {"__ndarray__": {"dtype": "int64", "shape": [len(values)], "data": values}}


def test_redecide_remakes_the_decision_from_the_stored_results_alone(toy_run, tmp_path):
    run = copy_run(toy_run, tmp_path / "run")
    before = json.loads((run / "claims.json").read_text())
    assert before["claims"][0]["verdict"] == "holds"
    # another computation stored in the record: every point inside the circle gives pi = 4, which fails both claims
    edit_results(run, hits=hits([20000] * 5))
    (run / "running_estimate.png").unlink()
    report = decide_record(run)
    after = json.loads((run / "claims.json").read_text())
    assert [c["ours"] for c in after["claims"]] == [4.0, 4.0] and report.verdict_summary().startswith("0 hold, 2 fail")
    assert (run / "running_estimate.png").is_file()  # the figures are re-made too
    assert "| pi-estimate |" in (run / "report.md").read_text()
    assert (
        after["declared"] == before["declared"]
        and after["decision"]["fingerprint"] == before["decision"]["fingerprint"]
    )


def test_redecide_needs_no_jax_and_is_what_the_script_runs(toy_run, tmp_path):
    run = copy_run(toy_run, tmp_path / "run")
    code = f"""
import sys
from core.record import decide_record
decide_record({str(run)!r})
print(sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "flax", "optax")))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_a_record_that_cannot_be_decided_says_why(tmp_path):
    with pytest.raises(RecordError, match=r"holds no results\.json: not a finished run"):
        read_record(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"paper": "toy", "claims": []}))
    with pytest.raises(RecordError, match="older format"):
        read_record(tmp_path)


def test_the_two_fingerprints_follow_the_code_each_side_runs(tmp_path):
    """In a tree of our own: a change to decision or report code changes only the decision fingerprint; a change
    to computing code, or to what both import, changes the compute fingerprint."""
    for sub in ("core", "papers/x/data"):
        (tmp_path / sub).mkdir(parents=True)
    files = {
        "core/__init__.py": "",
        "core/results.py": "def to_json(x):\n    return x\n\n\ndef from_json(t, x):\n    return x\n",
        "core/record.py": "def decide_record(run_dir):\n    return run_dir\n",
        "core/stats.py": "def mean(x):\n    return sum(x) / len(x)\n",
        "papers/__init__.py": "",
        "papers/x/__init__.py": "",
        "papers/x/config.py": "class Config:\n    steps = 3\n",
        "papers/x/results.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass Results:\n    x: int\n",
        "papers/x/train.py": "def train():\n    return 1\n",
        "papers/x/run.py": "from papers.x.results import Results\nfrom papers.x.train import train\n\n\n"
        "def run(cfg, ctx):\n    return Results(train())\n",
        "papers/x/claims.py": "from core.stats import mean\nfrom papers.x.results import Results\n\nLIMIT = 1\n\n\n"
        "def claims(cfg):\n    return [LIMIT]\n\n\ndef decide(cfg, results: Results):\n    return mean([results.x])\n",
        "papers/x/report.py": "from papers.x.results import Results\n\nWIDTH = 3\n\n\n"
        "def render(cfg, results: Results, decided):\n    return WIDTH\n",
        "papers/x/ledger.py": "LEDGER = []\n",
        "papers/x/data/reading.json": "[1]\n",  # a reading of a paper's figure: decision data
        "papers/x/table.json": "[1]\n",  # vendored data the run reads
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paper = Paper(
        "x", "X", "papers.x.config:Config", "papers.x.claims:claims", "papers.x.results:Results", "papers.x.run:run",
        "papers.x.claims:decide", "papers.x.report:render", "papers.x.ledger", decision_data=("data",),
    )  # fmt: skip

    def fingerprints():
        return compute_fingerprint(paper, root=tmp_path), decision_fingerprint(paper, root=tmp_path)

    compute, decision = fingerprints()
    for name, new in [
        ("papers/x/claims.py", "LIMIT = 2\n"),  # a decision changed
        ("papers/x/report.py", "WIDTH = 4\n"),  # a table's width changed
        ("core/stats.py", "def mean(x):\n    return sum(x) / max(len(x), 1)\n"),  # a statistic changed
        ("papers/x/data/reading.json", "[2]\n"),  # a figure read again
    ]:
        (tmp_path / name).write_text((tmp_path / name).read_text() + new)
        now = fingerprints()
        assert now[0] == compute and now[1] != decision, name
        decision = now[1]
    (tmp_path / "papers/x/train.py").write_text("def train():\n    return 2\n")
    now = fingerprints()
    assert now[0] != compute and now[1] == decision
    (tmp_path / "papers/x/table.json").write_text("[2]\n")  # other data of the package counts for both
    assert fingerprints()[0] != now[0]
    now = fingerprints()
    results = tmp_path / "papers/x/results.py"
    results.write_text(results.read_text() + "    y: int = 0\n")
    after = fingerprints()
    assert after[0] != now[0] and after[1] != now[1]  # the Results type: both sides read it


def test_a_reference_is_a_plain_default_run_of_this_code_from_a_clean_tree(toy_run, tmp_path):
    run = copy_run(toy_run, tmp_path / "run")
    record = read_record(run)
    clean = {
        "scale": "default",
        "modified": False,
        "commit": "abc1234",
        "overrides": ["paper=toy", "logger=none"],
        "compute_fingerprint": record.run["compute_fingerprint"],
    }
    edit_results(run, **clean)
    assert reference_problems(read_record(run)) == []
    cases = [
        ({"scale": "smoke"}, "a reference is the default scale's"),
        ({"modified": True}, "made from a modified tree"),
        ({"overrides": ["paper=toy", "toy.chunks=2"]}, "its command line changed what it computes (toy.chunks=2)"),
        ({"compute_fingerprint": "000000000000"}, "computed by other code than this checkout's"),
    ]
    for change, message in cases:
        edit_results(run, **{**clean, **change})
        problems = reference_problems(read_record(run))
        assert len(problems) == 1 and message in problems[0], problems
    edit_results(run, **clean)
    report = promote(run, tmp_path / "results" / "toy")
    kept = sorted(p.name for p in (tmp_path / "results" / "toy").iterdir())
    assert kept == ["claims.json", "report.md", "results.json", "running_estimate.png"]  # no logs, no checkpoints
    assert report.claims_holding == 1
    assert status(read_record(tmp_path / "results" / "toy")) == {"compute": "current", "decision": "current"}
    assert record.run["compute_fingerprint"] == read_record(tmp_path / "results" / "toy").run["compute_fingerprint"]


def test_compare_holds_a_run_against_the_reference_row_by_row(toy_run, tmp_path):
    reference = read_record(toy_run)
    same = compare(reference, reference)
    assert same.reproduces and "reproduces: all 4" in same.text()

    other = copy_run(toy_run, tmp_path / "other")  # a run whose estimate is pi = 4: both claims and pi differ
    edit_results(other, hits=hits([20000] * 5))
    diff = compare(reference, read_record(other))
    assert not diff.reproduces
    assert [(r.kind, r.id) for r in diff.differing] == [
        ("claim", "pi-estimate"),
        ("claim", "pi-exact"),
        ("estimate", "pi"),
    ]
    assert "verdict fails" in diff.differing[0].why and "differs: 3 of 4 rows" in diff.text()
    import core.compare

    core.compare.SHOWN = 0  # the summary names every claim and fact, and counts the key figures past SHOWN
    try:
        summary = diff.text().splitlines()[-1]
    finally:
        core.compare.SHOWN = 10
    assert summary == "differs: 3 of 4 rows: claim pi-estimate, claim pi-exact, and 1 more estimates (above)"

    seeded = copy_run(toy_run, tmp_path / "seeded")
    record = json.loads((seeded / "results.json").read_text())
    record["config"]["seed"] = 7
    (seeded / "results.json").write_text(json_text(record))
    assert "seed: 0 -> 7" in compare(reference, read_record(seeded)).text()


def test_values_agree_by_interval_overlap_or_relative_tolerance():
    a, b = Interval(1.0, 0.9, 1.1), Interval(1.25, 1.05, 1.45)
    assert values_agree(a, b)[0] and not values_agree(a, replace(b, low=1.2))[0]
    assert values_agree(a, 1.05)[0] and not values_agree(a, 1.2)[0]
    assert values_agree(1.0, 1.0 + 1e-9)[0] and not values_agree(1.0, 1.001)[0]
    assert values_agree("diverged", "diverged")[0] and not values_agree("diverged", 1.0)[0]
    assert values_agree(float("nan"), float("nan"))[0] and values_agree(None, None)[0]
    assert not values_agree(Interval(1.0, -np.inf, np.inf), 1.0)[0]  # an unbounded interval agrees with nothing


def test_the_record_script_names_what_it_cannot_do(tmp_path):
    def script(*args):
        cmd = [sys.executable, str(REPO_ROOT / "scripts" / "record.py"), *args]
        return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)

    r = script("redecide", "nope")
    assert r.returncode == 2 and "unknown paper 'nope'" in r.stderr
    r = script("compare", "prng", "--run", str(tmp_path / "none"), "--reference", str(tmp_path))
    assert r.returncode == 2 and "has no reference run" in r.stderr
    r = script("reference", "prng", "--run", str(tmp_path))
    assert r.returncode == 2 and "holds no results.json: not a finished run" in r.stderr


def test_a_record_of_another_fingerprint_form_is_re_keyed_from_its_commit_without_re_running(toy_run, tmp_path):
    from core.provenance import FORM
    from core.record import rekey

    run = copy_run(toy_run, tmp_path / "run")
    edit_results(run, commit="abc1234", modified=False, compute_fingerprint="0123456789ab", fingerprint_form=1)
    results_before = read_record(run).run["results"]
    state = status(read_record(run))["compute"]
    assert state.startswith("stale") and "form 1" in state and "rekey" in state
    old, new = rekey(run, REPO_ROOT)  # the tree of the commit that made it: here the checkout itself
    record = read_record(run)
    assert (old, new) == ("0123456789ab", compute_fingerprint(record.paper))
    assert record.run["fingerprint_form"] == FORM and record.run["rekeyed"]["from"] == old
    assert record.run["results"] == results_before and status(record)["compute"] == "current"
    edit_results(run, modified=True)
    with pytest.raises(RecordError, match="clean commit"):
        rekey(run, REPO_ROOT)


def test_cpu_description_names_the_model_cores_and_vector_sets():
    """What a record says of the processor (core.context.cpu_description), from /proc/cpuinfo texts of an x86 and an
    Arm machine written here."""
    from core.context import CPU_FEATURES, cpu_description

    x86 = "".join(
        f"processor\t: {i}\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n\n" for i in range(4)
    )
    assert cpu_description(x86) == "AMD EPYC 7B13, 4 logical cores, avx avx2 fma"
    arm = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU part\t: 0xd40\n\n"
    assert cpu_description(arm) == "0xd40, 1 logical cores, asimd sve"
    bare = "processor\t: 0\nmodel name\t: Old\nflags\t\t: fpu sse2\n"
    assert cpu_description(bare) == "Old, 1 logical cores, none of " + " ".join(CPU_FEATURES)

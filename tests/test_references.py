"""The committed reference runs (results/<paper>/), checked on every change without running any paper: each is a
plain default-scale record made from a clean tree, small, with nothing but its record in it; and each re-decides
with the current decision code to exactly its stored values and verdicts, except claims whose lock fingerprint
changed since the stored decision (every such change has a ledger entry: tests/core/test_ledger.py). A record
whose computation is stale is still re-decided when its Results fit the current type."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from core.record import REFERENCE_MAX_BYTES, read_record
from tests.conftest import REPO_ROOT

RESULTS = REPO_ROOT / "results"
REFERENCES = sorted(p.name for p in RESULTS.iterdir() if p.is_dir()) if RESULTS.is_dir() else []
KEPT = {"results.json", "claims.json", "report.md"}

# re-decide one stored record in memory (nothing written) in a fresh process, as `make redecide` would
REDECIDE = """
import json, sys
from core.record import decided_values, read_record, status
record = read_record(sys.argv[1])
try:
    results = record.results()
except Exception as e:  # a Results type changed since the run: the row is stale, and says so
    print(json.dumps({"unloadable": f"{type(e).__name__}: {e}", "status": status(record)}))
    raise SystemExit(0)
decided = record.paper.decide_results(record.config(), results)
print(json.dumps({"values": decided_values(decided), "status": status(record)}))
"""


def test_every_configured_paper_may_have_a_reference_and_nothing_else_is_there():
    papers = {p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml")}
    assert set(REFERENCES) <= papers, set(REFERENCES) - papers
    # results/pending.yaml names only papers that have no reference yet (their row says what staled their last run)
    import yaml

    pending = RESULTS / "pending.yaml"
    listed = set(yaml.safe_load(pending.read_text()) or {}) if pending.is_file() else set()
    assert listed <= papers and not listed & set(REFERENCES), listed & set(REFERENCES)
    assert {p.name for p in RESULTS.iterdir() if p.is_file()} <= {"pending.yaml"} if RESULTS.is_dir() else True


@pytest.mark.parametrize("paper", REFERENCES)
def test_a_reference_is_a_small_plain_default_run_from_a_clean_tree(paper):
    folder = RESULTS / paper
    files = {p.name for p in folder.iterdir()}
    # beside the record: its figures, and its step costed on the simulated IPU where made (core.ipusteps)
    assert KEPT <= files and files - KEPT <= {p.name for p in folder.glob("*.png")} | {"ipu_step.json"}, files
    assert sum(p.stat().st_size for p in folder.iterdir()) <= REFERENCE_MAX_BYTES
    record = read_record(folder)
    assert record.name == paper and record.run["scale"] == "default"
    assert record.run["commit"] and not record.run["modified"], "a reference is made from a clean tree"
    from core.record import changed_settings

    assert changed_settings(record.run) == []
    decided = record.claims
    assert decided["decision"]["claims"].keys() == {c["id"] for c in decided["claims"]}
    assert (folder / "report.md").read_text().startswith(f"# {decided['title']}")
    from core.ipusteps import read_steps

    steps = read_steps(folder)  # the paper's step on the simulated IPU: made from a clean tree, and shown (a file
    if steps is not None:  # a stopped command left incomplete says so in the table's caption: core.ipusteps)
        assert steps["paper"] == paper and steps["commit"] and not steps["modified"]
        tables = {t["name"]: t for t in decided["tables"]}
        assert "ipu_steps" in tables and len(tables["ipu_steps"]["rows"]) == len(steps["steps"])
        assert steps["complete"] or "incomplete" in tables["ipu_steps"]["caption"]


@pytest.mark.parametrize("paper", REFERENCES)
def test_a_reference_re_decides_to_its_stored_values_or_the_ledger_says_why(paper):
    folder = RESULTS / paper
    r = subprocess.run(
        [sys.executable, "-c", REDECIDE, str(folder)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if "unloadable" in out:
        assert out["status"]["compute"].startswith("stale"), (
            f"{paper}: its Results no longer load ({out['unloadable']}) though its computation is current"
        )
        pytest.skip(f"{paper}: stale reference whose Results no longer fit the current type: re-run it")
    stored = json.loads((folder / "claims.json").read_text())
    now = out["values"]
    from core.ledger import load_paper_claims

    fingerprints = load_paper_claims(paper).fingerprints()
    before = stored["decision"]["claims"]
    keys = ("id", "ours", "verdict", "holds", "detail", "rule_verdict")
    stored_claims = {c["id"]: {k: c.get(k) for k in keys} for c in stored["claims"]}
    added = {e.claim for e in importlib.import_module(f"papers.{paper}.ledger").LEDGER if e.kind == "added"}
    for c in now["claims"]:
        current = {k: c.get(k) for k in keys}
        if stored_claims.get(c["id"]) == current:
            continue
        if c["id"] not in stored_claims and c["id"] not in before:  # declared after the reference was made
            assert c["id"] in added, f"{paper}: claim {c['id']!r} is not in its reference and has no ledger entry"
            continue
        assert c["id"] in before and before[c["id"]] != fingerprints[c["id"]]["fingerprint"], (
            f"{paper}: claim {c['id']!r} re-decides to {current} but the reference holds {stored_claims.get(c['id'])}, "
            "and its declaration and decision code are unchanged: the decision is not a function of the stored "
            f"Results, or changed without a ledger entry (then `make redecide PAPER={paper} RUN=results/{paper}`)"
        )
    if out["status"]["decision"] == "current":
        assert now["facts"] == stored["facts"] and now["estimates"] == stored["estimates"], (
            f"{paper}: facts or estimates re-decide differently with the decision code that made them"
        )


# Issue 57's demonstration: decision helpers that several papers wrote for themselves, moved into core.stats and the
# affected references re-decided from their stored Results with no training (values and verdicts identical but for
# u-muP's gaps, now a / b - 1 where they were (a - b) / b: the last bits of a float, in its ledger). What keeps the
# move: each paper decides with core.stats' function itself, and the re-decision test above holds its references.
SHARED_HELPERS = {
    "unit_scaling": {"claims": ("paired_relative_gap",)},
    "umup": {"claims": ("paired_relative_gap", "relative_gaps")},
    "fp8_llm": {"claims": ("relative_gaps",)},
    "gps": {"claims": ("relative_gaps", "paired_relative_gap")},
    "popsparse": {"claims": ("paired_speedup",)},
    "sparq": {"claims": ("paired_speedup",)},
}


@pytest.mark.parametrize("paper", sorted(SHARED_HELPERS))
def test_a_moved_decision_helper_is_core_stats_own_in_every_paper_that_used_it(paper):
    import importlib

    import core.stats

    for module, names in SHARED_HELPERS[paper].items():
        mod = importlib.import_module(f"papers.{paper}.{module}")
        for name in names:
            assert getattr(mod, name, None) is getattr(core.stats, name), f"papers.{paper}.{module}.{name}"
    # and no private copy of the per-seed relative gap is left in the paper's decision code
    private = {"_rel", "rel_gap", "_gaps", "_relative_gap"}  # the names the copies had
    for module in ("claims", "decide", "report"):
        path = REPO_ROOT / "papers" / paper / f"{module}.py"
        if path.is_file():
            text = path.read_text()
            assert not [n for n in private if f"def {n}(" in text], f"papers/{paper}/{module}.py"

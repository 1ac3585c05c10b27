"""The claims lock and ledger (core.ledger): every paper's claims agree with its committed lock, a change without a
ledger entry fails the suite, and the report shows a re-specified claim's original verdict."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import textwrap

import pytest

from core.claims import Claim, Interval, at_least, at_most, interval_above
from core.ledger import (
    Change,
    PaperClaims,
    check_lock,
    claim_fingerprint,
    latest_entries,
    load_paper_claims,
    papers_with_claims,
    write_lock,
)
from core.provenance import callable_units
from core.report import Report
from tests.conftest import REPO_ROOT, repo_copy

CONFIGURED = sorted(p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml"))


def test_every_configured_paper_declares_its_claims_in_claims_py():
    assert papers_with_claims() == CONFIGURED


@pytest.mark.parametrize("paper", papers_with_claims())
def test_claims_agree_with_the_lock_and_the_ledger(paper):
    """The guard: a claim's declaration or the code that measures and decides it changed without a ledger entry."""
    pc = load_paper_claims(paper)
    assert pc.lock_path.is_file(), f"{paper}: no claims.lock.json (python scripts/claims.py lock {paper})"
    problems = check_lock(pc)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("paper", papers_with_claims())
def test_every_claim_states_its_design(paper):
    for c in load_paper_claims(paper).claims:
        missing = [k for k in ("source", "statistic", "unit", "resolution") if not getattr(c, k).strip()]
        assert not missing, f"{paper} {c.id}: no {', '.join(missing)}"
        assert 0 < c.confidence <= 1  # 1: a deterministic quantity against a printed figure


@pytest.mark.parametrize("paper", papers_with_claims())
def test_every_claim_labels_the_source_of_its_figure_and_margin(paper):
    """Issue 62: every figure is labelled paper, authors, secondary or none (core.claims.Claim raises on any other
    kind), and every rule with a margin says whether the margin is the paper's, the authors' or ours."""
    for c in load_paper_claims(paper).claims:
        assert c.figure_source, f"{paper} {c.id}: no figure_source (paper/authors/secondary/none: where)"
        if c.rule.region is not None:
            assert c.margin_source, f"{paper} {c.id}: its rule has a margin ({c.rule.description}): no margin_source"


@pytest.mark.parametrize("paper", papers_with_claims())
def test_removed_claims_say_where_they_went(paper):
    # a claim removed and later added again (a newer "added" entry) is declared again; one whose newest entry is
    # its removal is not
    ids = {c.id for c in load_paper_claims(paper).claims}
    for cid, e in latest_entries(load_paper_claims(paper).ledger).items():
        if e.kind == "removed" and cid in ids:
            pytest.fail(f"{paper}: {cid} is recorded as removed but still declared")


def test_a_threshold_changed_without_a_ledger_entry_fails_the_suite():
    """The demonstration the issue asks for, on a real paper: loosen one claim's threshold and the guard above fails
    naming it."""
    paper = papers_with_claims()[0]
    pc = load_paper_claims(paper)
    assert not check_lock(pc)
    changed = dataclasses.replace(pc.claims[0], rule=at_most(12345.0))
    pc.claims = [changed, *pc.claims[1:]]
    problems = check_lock(pc)
    assert len(problems) == 1 and repr(changed.id) in problems[0] and "its declaration" in problems[0]
    assert "ledger.py" in problems[0]


# ---------------------------------------------------------------------------------------------- a synthetic paper


def measure_gap(x: float) -> float:
    return _helper(x) - 1.0


def _helper(x: float) -> float:
    return 2.0 * x


def synthetic(tmp_path, threshold: float = 0.05, ledger: list[Change] | None = None) -> PaperClaims:
    claims = [
        Claim(
            "gap",
            "A matches B",
            0.0,
            at_most(threshold),
            source="T1",
            statistic="gap",
            unit="3 seeds",
            resolution="0.01",
            measure=measure_gap,
        ),
        Claim(
            "gain",
            "A beats C",
            "A beats C",
            interval_above(0.0),
            source="T2",
            statistic="gain",
            unit="3 seeds",
            resolution="0.01",
        ),
    ]
    return PaperClaims("synthetic", claims, list(ledger or []), measure_gap, tmp_path / "claims.lock.json")


def test_a_lock_records_a_baseline_and_refuses_changes_without_an_entry(tmp_path):
    pc = synthetic(tmp_path)
    assert write_lock(pc) == [] and check_lock(pc) == []
    lock = json.loads(pc.lock_path.read_text())
    assert lock["baseline"] == lock["claims"] and set(lock["claims"]) == {"gap", "gain"}

    moved = synthetic(tmp_path, threshold=0.10)
    problems = check_lock(moved)
    assert len(problems) == 1 and "'gap'" in problems[0] and "declaration" in problems[0]
    refused = write_lock(moved)
    new_fp = claim_fingerprint(moved.claims[0], measure_gap)["fingerprint"]
    assert refused == [f"gap (fingerprint {new_fp})"]
    assert json.loads(pc.lock_path.read_text()) == lock  # nothing written

    entry = Change(
        "2026-11-25",
        "gap",
        "respecified",
        "ours <= 0.05",
        "ours <= 0.1",
        "the paper's margin is 10%",
        old_rule=at_most(0.05),
        fingerprint=new_fp,
    )
    ledgered = synthetic(tmp_path, threshold=0.10, ledger=[entry])
    assert write_lock(ledgered) == [] and check_lock(ledgered) == []


def test_a_lock_rewritten_by_hand_is_caught(tmp_path):
    pc = synthetic(tmp_path)
    write_lock(pc)
    moved = synthetic(tmp_path, threshold=0.10)
    lock = json.loads(pc.lock_path.read_text())
    lock["claims"] = moved.fingerprints()  # the lock edited to match, no ledger entry
    pc.lock_path.write_text(json.dumps(lock))
    problems = check_lock(moved)
    assert len(problems) == 1 and "rewritten without a ledger entry" in problems[0]


def test_dropping_a_claim_needs_a_removed_entry(tmp_path):
    pc = synthetic(tmp_path)
    write_lock(pc)
    pc.claims = pc.claims[:1]
    assert any("'gain'" in p and "no longer declared" in p for p in check_lock(pc))
    assert write_lock(pc) == ["gain (dropped: needs a 'removed' entry saying where it went)"]
    pc.ledger = [
        Change(
            "2026-11-25",
            "gain",
            "removed",
            "interval low > 0",
            "",
            "holds by construction",
            moved_to="fact gain (construction)",
        )
    ]
    assert write_lock(pc) == [] and check_lock(pc) == []
    assert "gain" not in json.loads(pc.lock_path.read_text())["claims"]
    with pytest.raises(ValueError, match="must say where it went"):
        Change("2026-11-25", "gain", "removed", "x", "", "why")
    with pytest.raises(ValueError, match="not YYYY-MM-DD"):
        Change("25/11/2026", "gain", "code", "x", "x", "why")


def test_a_ledger_entry_edited_or_removed_after_it_was_recorded_fails_the_check(tmp_path):
    """The ledger is append-only: the lock keeps a digest of every entry it was written with."""
    first = Change("2026-11-25", "gap", "code", "x", "x", "a helper moved", fingerprint="")
    pc = synthetic(tmp_path, ledger=[first])
    assert write_lock(pc) == [] and check_lock(pc) == []
    assert len(json.loads(pc.lock_path.read_text())["ledger"]) == 1
    lock = pc.lock_path.read_text()

    later = Change("2026-11-26", "gain", "code", "y", "y", "another helper moved", fingerprint="")
    appended = synthetic(tmp_path, ledger=[first, later])
    assert check_lock(appended) == [] and write_lock(appended) == []  # appending is what a ledger is for
    for edit in (
        {"reason": "a helper moved (and a word changed)"},
        {"date": "2026-11-24"},
        {"old_verdict": "holds"},
        {"old_rule": at_most(0.2)},
    ):
        edited = synthetic(tmp_path, ledger=[dataclasses.replace(first, **edit), later])
        problems = check_lock(edited)
        assert len(problems) == 1 and "entry 1 (2026-" in problems[0] and "append-only" in problems[0], edit
        before = pc.lock_path.read_text()
        assert write_lock(edited) == problems and pc.lock_path.read_text() == before  # refused, nothing written
    removed = synthetic(tmp_path, ledger=[later])
    assert any("append-only" in p for p in check_lock(removed))
    shortened = synthetic(tmp_path, ledger=[first])
    assert any("was removed" in p for p in check_lock(shortened))
    pc.lock_path.write_text(lock)


def test_the_lock_writes_the_code_entry_itself_only_when_the_reference_re_decides_identically(tmp_path):
    """In a copy of the repository with prng's reference record: a change to the code deciding a claim that leaves
    every value as it was gets its `code` entry written by `claims.py lock`, naming the record; a change that moves
    a value is refused, and asks for an entry by hand."""
    import subprocess

    repo = repo_copy(tmp_path, ("core", "ipu_model", "papers", "configs", "scripts", "results"))

    def lock() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "scripts/claims.py", "lock", "prng"], cwd=repo, capture_output=True, text=True, timeout=300
        )

    claims_py, ledger_py = repo / "papers/prng/claims.py", repo / "papers/prng/ledger.py"
    original = claims_py.read_text()
    claims_py.write_text(original.replace("min(r.hw_p for r in aox),", "min([r.hw_p for r in aox]),"))  # the same value
    ledger_before = ledger_py.read_text()
    r = lock()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "re-decided results/prng identically; wrote the code entry of aox-hamming-weight" in r.stdout
    added = ledger_py.read_text()[len(ledger_before) :]
    assert "LEDGER += code_changes(" in added and 'run="results/prng"' in added and "aox-hamming-weight" in added
    check = subprocess.run([sys.executable, "scripts/claims.py", "check", "prng"], cwd=repo, capture_output=True)
    assert check.returncode == 0, check.stdout

    claims_py.write_text(original.replace("min(r.hw_p for r in aox),", "min(r.hw_p for r in aox) * 1.5,"))  # another
    ledger_before = ledger_py.read_text()
    r = lock()
    assert r.returncode == 1 and "gives other values; write the entry by hand" in r.stdout
    assert "claim aox-hamming-weight" in r.stdout and ledger_py.read_text() == ledger_before


def test_the_code_fingerprint_follows_the_measuring_code_and_its_helpers(tmp_path, monkeypatch):
    source = textwrap.dedent('''
        def measure(x):
            """Docstring."""
            return helper(x) + 1  # a comment

        def helper(x):
            return Box(2 * x).value

        class Box:
            def __init__(self, value):
                self.value = value

            def __str__(self):
                return f"{self.value:.3g}"
    ''')

    def fingerprint(text: str, variant: str) -> dict[str, str]:
        """The units of `measure` in module m, written in a folder of its own (the same module name each time)."""
        folder = tmp_path / variant
        folder.mkdir()
        (folder / "m.py").write_text(text)
        monkeypatch.syspath_prepend(str(folder))
        importlib.invalidate_caches()
        sys.modules.pop("m", None)
        module = importlib.import_module("m")
        try:
            return callable_units(module.measure)
        finally:
            sys.modules.pop("m", None)

    base = fingerprint(source, "m_base")
    assert fingerprint(source.replace("# a comment", "# another").replace("Docstring", "Doc"), "m_doc") == base
    assert fingerprint(source.replace("Box(2 * x)", "Box(3 * x)"), "m_helper") != base
    # a class it uses counts whole: how its value is shown goes into a claim's detail
    assert fingerprint(source.replace(":.3g", ":.4g"), "m_class") != base
    assert fingerprint(source.replace("+ 1", "+ 2"), "m_body") != base


def test_the_report_shows_the_original_rules_verdict_beside_the_new_one():
    claim = Claim("gap", "A matches B", 0.0, at_most(0.10), unit="3 seeds").measured(Interval(0.07, 0.06, 0.08))
    evaluable = Change(
        "2026-11-20",
        "gap",
        "respecified",
        "ours <= 0.05",
        "ours <= 0.1",
        "margin from the paper",
        old_rule=at_most(0.05),
    )
    recorded = Change(
        "2026-11-21",
        "gain",
        "respecified",
        "ours >= 5%",
        "interval low > 0",
        "asked for",
        old_verdict="fails (+3.0%)",
        commit="abc1234",
        run="README row",
    )
    report = Report("p", "P", claims=[claim], ledger=[evaluable, recorded])
    assert claim.verdict.value == "holds"
    assert report.original_verdict(claim) == "ours <= 0.05: fails on this run"
    md = report.to_markdown(header={}, config_yaml="", versions={})
    assert "## Ledger" in md and "fails (+3.0%) (last recorded: commit abc1234, README row)" in md
    d = report.to_dict()
    assert d["claims"][0]["original_verdict"] == "ours <= 0.05: fails on this run"
    assert [e["kind"] for e in d["ledger"]] == ["respecified", "respecified"]
    assert at_least(0.0).verdict(1.0, None).value == "holds"

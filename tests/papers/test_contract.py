"""What every paper's smoke run must write, whatever the paper (README.md, "Output" and "How a claim is decided"):
the claims declared before the run and kept by the report, verdicts and their counts, facts apart from claims, the
paper's ledger, figures that exist, the config and the code fingerprint. Each paper's own tests
(tests/papers/<paper>/test_reproduce.py) check its figures against independent computations; the run is shared
(tests/papers/conftest.py)."""

from __future__ import annotations

import datetime as dt
import importlib
from collections import Counter

import pytest

from core.claims import FACT_KINDS, Verdict
from core.ledger import latest_entries
from tests.conftest import REPO_ROOT
from tests.papers.conftest import PAPERS

RESULTS_KEYS = {
    "paper", "title", "claims", "verdicts", "facts", "ledger", "metrics", "tables", "figures", "notes", "config",
    "config_key", "code_fingerprint", "seed", "scale", "versions", "started", "wall_seconds", "claims_holding",
    "claims_total",
}  # fmt: skip
DECLARATION_KEYS = [
    "id", "statement", "paper", "tolerance", "decision", "source", "statistic", "confidence", "unit", "resolution",
]  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n"


def test_every_paper_has_a_smoke_run():
    assert PAPERS == sorted(p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml"))


@pytest.mark.parametrize("paper", PAPERS)
def test_the_smoke_run_writes_the_run_record(smoke_run, paper):
    run = smoke_run(paper)
    results, declared = run.results, run.declared
    assert RESULTS_KEYS <= set(results), RESULTS_KEYS - set(results)
    assert (results["paper"], results["scale"], results["seed"]) == (paper, "smoke", 0)
    assert results["title"] and results["config_key"] and results["wall_seconds"] > 0
    dt.datetime.fromisoformat(results["started"])
    assert paper in results["config"] and "jax" in results["versions"]
    assert results["code_fingerprint"] == run.fingerprint  # the code that made the run: this checkout's
    assert run.run_dir.parent == run.output_root / paper  # outputs/<paper>/<timestamp>/

    # claims: declared (claims.json, written before any work) exactly as the report keeps them, each with its design
    claims = results["claims"]
    assert [list(c) for c in declared] == [DECLARATION_KEYS] * len(declared)
    assert [{k: c[k] for k in DECLARATION_KEYS} for c in claims] == declared
    ids = [c["id"] for c in claims]
    assert len(set(ids)) == len(ids), ids
    for c in claims:
        assert c["statement"] and c["source"] and c["statistic"] and c["unit"] and c["resolution"], c["id"]
        assert c["verdict"] in {v.value for v in Verdict}, c
        assert c["holds"] == {"holds": True, "fails": False}.get(c["verdict"]), c
    counted = Counter(c["verdict"] for c in claims)
    assert results["verdicts"] == {v.value: counted[v.value] for v in Verdict}
    assert (results["claims_holding"], results["claims_total"]) == (counted["holds"], len(claims))

    # facts are never claims; the ledger is the paper's, and a removed claim is not declared again
    facts = results["facts"]
    assert all(f["kind"] in FACT_KINDS for f in facts), facts
    assert not {f["id"] for f in facts} & set(ids)
    ledger = importlib.import_module(f"papers.{paper}.ledger").LEDGER
    recorded = [(e["date"], e["claim"], e["kind"]) for e in results["ledger"]]
    assert recorded == [(e.date, e.claim, e.kind) for e in ledger]
    assert not {c for c, e in latest_entries(ledger).items() if e.kind == "removed"} & set(ids)

    # figures and tables: every listed figure is a PNG in the run directory, and every PNG there is listed
    files = [f["file"] for f in results["figures"]]
    for name in files:
        assert (run.run_dir / name).read_bytes()[:8] == PNG, name
    assert sorted(files) == sorted(p.name for p in run.run_dir.glob("*.png"))
    for t in results["tables"]:
        assert t["name"] and all(len(row) == len(t["columns"]) for row in t["rows"]), t["name"]

    # report.md: every claim with its verdict, every fact and every figure
    report = (run.run_dir / "report.md").read_text()
    assert report.startswith(f"# {results['title']}")
    for c in claims:
        assert f"| {c['id']} |" in report and c["verdict"] in report, c["id"]
    assert all(f"| {f['id']} |" in report for f in facts)
    assert all(f"]({name})" in report for name in files)

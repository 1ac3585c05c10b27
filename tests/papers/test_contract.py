"""What every paper's smoke run must write, whatever the paper (README.md, "Output" and "How a claim is decided"):
results.json with the stored Results and the compute fingerprint, claims.json with the claims declared before the
run and kept by the decision, verdicts and their counts, facts apart from claims, the paper's ledger, figures that
exist, and report.md. Each paper's own tests (tests/papers/<paper>/test_reproduce.py) check its figures against
independent computations; the run is shared (tests/papers/conftest.py)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

from core.claims import FACT_KINDS, Verdict
from core.context import cpu_description
from core.ledger import latest_entries
from core.paper import find_paper
from core.provenance import compute_fingerprint, decision_fingerprint
from core.record import RECORD_FORMAT, read_record
from core.results import to_json
from tests.conftest import REPO_ROOT
from tests.papers.conftest import PAPERS, SMOKE

RUN_KEYS = {
    "format", "paper", "scale", "seed", "config_key", "compute_fingerprint", "commit", "modified", "started",
    "wall_seconds", "versions", "overrides", "config", "results", "profile", "computed_on",
}  # fmt: skip
DECISION_KEYS = {
    "paper", "declared", "decision", "title", "claims", "verdicts", "facts", "ledger", "estimates", "metrics",
    "tables", "figures", "notes",
}  # fmt: skip
DECLARATION_KEYS = [
    "id", "statement", "paper", "tolerance", "decision", "source", "statistic", "confidence", "unit", "resolution",
]  # fmt: skip
LABEL_KEYS = {"unverified", "figure_source", "margin_source", "n", "n_of", "undecidable"}
PNG = b"\x89PNG\r\n\x1a\n"


def test_every_paper_has_a_smoke_run():
    assert PAPERS == sorted(p.stem for p in (REPO_ROOT / "configs" / "paper").glob("*.yaml"))


@pytest.mark.parametrize("paper", [pytest.param(p, marks=pytest.mark.slow) if SMOKE[p].slow else p for p in PAPERS])
def test_the_smoke_run_writes_the_run_record(smoke_run, paper):
    run = smoke_run(paper)
    record, decision, declared = run.record, run.decision, run.declared
    spec = find_paper(f"papers.{paper}")

    # results.json: the computation, tied to the code that made it
    assert RUN_KEYS <= set(record), RUN_KEYS - set(record)
    assert (record["format"], record["paper"], record["scale"], record["seed"]) == (RECORD_FORMAT, paper, "smoke", 0)
    assert record["config_key"] and record["wall_seconds"] > 0
    # where its time went (core.profile): sampled phases, its compilations, the cores; and what it computed on
    profile = record["profile"]
    assert profile["samples"] > 0 and profile["phases"] and profile["wall_seconds"] > 0
    assert profile["compilations"] + profile["compile_cache_hits"] > 0 and profile["cpu_seconds"] > 0
    assert {k: v["matmul_gflops"] > 0 for k, v in profile["machine_speed"].items()} == {"start": True, "end": True}
    assert record["computed_on"].startswith(("cpu", "gpu"))
    dt.datetime.fromisoformat(record["started"])
    assert paper in record["config"] and "jax" in record["versions"]
    assert record["versions"]["cpu"] == cpu_description()  # the processor: float32 results may differ between them
    assert record["compute_fingerprint"] == run.fingerprint == compute_fingerprint(spec)
    assert run.run_dir.parent == run.output_root / paper  # outputs/<paper>/<timestamp>/
    results = read_record(run.run_dir).results()  # the stored Results rebuild as the paper's type, exactly
    assert isinstance(results, spec.Results) and to_json(results) == record["results"]

    # claims.json: declared (before any work) exactly as the decision keeps them, each with its design
    assert DECISION_KEYS <= set(decision), DECISION_KEYS - set(decision)
    assert decision["decision"]["fingerprint"] == decision_fingerprint(spec)
    claims = decision["claims"]
    # the required keys in order, then the labels a claim sets (core.claims.Claim.declaration)
    assert [list(c)[: len(DECLARATION_KEYS)] for c in declared] == [DECLARATION_KEYS] * len(declared)
    assert all(set(c) - set(DECLARATION_KEYS) <= LABEL_KEYS for c in declared), declared
    assert [{k: c[k] for k in c} for c in declared] == [
        {k: c[k] for k in d} for c, d in zip(claims, declared, strict=True)
    ]
    ids = [c["id"] for c in claims]
    assert len(set(ids)) == len(ids), ids
    for c in claims:
        assert c["statement"] and c["source"] and c["statistic"] and c["unit"] and c["resolution"], c["id"]
        assert c["verdict"] in {v.value for v in Verdict}, c
        assert c["holds"] == {"holds": True, "fails": False}.get(c["verdict"]), c
    counted = Counter(c["verdict"] for c in claims)
    assert decision["verdicts"] == {v.value: counted[v.value] for v in Verdict}

    # facts are never claims; the ledger is the paper's, and a removed claim is not declared again
    facts = decision["facts"]
    assert all(f["kind"] in FACT_KINDS for f in facts), facts
    assert not {f["id"] for f in facts} & set(ids)
    ledger = spec.load("ledger")
    recorded = [(e["date"], e["claim"], e["kind"]) for e in decision["ledger"]]
    assert recorded == [(e.date, e.claim, e.kind) for e in ledger]
    assert not {c for c, e in latest_entries(ledger).items() if e.kind == "removed"} & set(ids)

    # figures and tables: every listed figure is a PNG in the run directory, and every PNG there is listed
    files = [f["file"] for f in decision["figures"]]
    for name in files:
        assert (run.run_dir / name).read_bytes()[:8] == PNG, name
    assert sorted(files) == sorted(p.name for p in run.run_dir.glob("*.png"))
    for t in decision["tables"]:
        assert t["name"] and all(len(row) == len(t["columns"]) for row in t["rows"]), t["name"]

    # report.md: every claim with its verdict, every fact and figure, and the code that made and decided the run
    report = (run.run_dir / "report.md").read_text()
    assert report.startswith(f"# {decision['title']}")
    for c in claims:
        assert f"| {c['id']} |" in report and c["verdict"] in report, c["id"]
    assert all(f"| {f['id']} |" in report for f in facts)
    assert all(f"]({name})" in report for name in files)
    assert files, f"{paper}: every report has at least one figure"
    assert record["compute_fingerprint"] in report and decision["decision"]["fingerprint"] in report
    assert f"**commit**: {record['commit'] or '-'}" in report  # and the commit that made the run
    assert "these verdicts check the plumbing" in report  # a smoke run says what its verdicts are worth

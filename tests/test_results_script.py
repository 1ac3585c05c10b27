"""scripts/results.py (`make results`, `make readme`): the README's table of papers from the reference runs in
results/ (here a fake tree of records), the record each row is read from, the code column, and the errors; and the
check CI makes on every change: the README's table and each paper's reference block are what `make readme` writes
from the committed results/. The expected rows are written out by hand here, not produced by the script's helpers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.paper import find_paper
from core.provenance import FORM, compute_fingerprint, decision_fingerprint
from tests.conftest import REPO_ROOT


def _results_script():
    spec = importlib.util.spec_from_file_location("results_script", REPO_ROOT / "scripts" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = _results_script()


def claim(cid, paper, ours, verdict, **extra):
    holds = {"holds": True, "fails": False}.get(verdict)
    return {"id": cid, "paper": paper, "ours": ours, "tolerance": "-", "verdict": verdict, "holds": holds, **extra}


PRNG_CLAIMS = [
    claim("a", 0, 0, "holds", original_verdict="ours <= 1: holds on this run"),
    claim("b", 0.553, 0.2375, "holds"),
    claim("c", "fails", False, "fails"),
]
INTERVAL = {"estimate": 0.0234, "low": -0.0101, "high": 0.0402, "confidence": 0.95, "method": "paired bootstrap"}
UNIT_CLAIMS = [
    claim("gain", None, INTERVAL, "undecided"),
    claim("gap", -0.0095, 0.0801, "fails"),
    claim("skipped", 1.0, None, "not measured"),
    claim("cited", 0.7, 0.71, "unverified", rule_verdict="holds"),
]
VERDICTS = ("holds", "fails", "undecided", "not measured", "unverified")


def fingerprints(paper: str) -> tuple[str, str]:
    spec = find_paper(f"papers.{paper}")
    return compute_fingerprint(spec), decision_fingerprint(spec)


def write_record(root: Path, paper: str, claims, wall: float, *, compute=None, decision=None, overrides=()) -> Path:
    """A record as `make reference` leaves it (results.json and claims.json), made by this checkout's code unless
    `compute` or `decision` says otherwise."""
    run = root / paper
    run.mkdir(parents=True)
    now = fingerprints(paper)
    record = {
        "format": 2,
        "paper": paper,
        "scale": "default",
        "seed": 0,
        "compute_fingerprint": compute or now[0],
        "fingerprint_form": FORM,
        "commit": "abc1234",
        "modified": False,
        "started": "2026-11-20T10:00:00+00:00",
        "wall_seconds": wall,
        "versions": {},
        "overrides": [f"paper={paper}", *overrides],
        "config": {"paper": {"module": f"papers.{paper}"}},
        "results": {},
    }
    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    decided = {"decision": {"fingerprint": decision or now[1]}, "claims": claims, "verdicts": counts, "facts": []}
    (run / "results.json").write_text(json.dumps(record))
    (run / "claims.json").write_text(json.dumps(decided))
    return run


@pytest.fixture
def references(tmp_path):
    root = tmp_path / "results"
    write_record(root, "prng", PRNG_CLAIMS, 35.2)
    write_record(root, "unit_scaling", UNIT_CLAIMS, 612.0, compute="0123456789ab")
    write_record(root, "gps", PRNG_CLAIMS[:2], 100.0, decision="ba5eba11dead", overrides=["gps.seeds=[0]"])
    return root


def rows_by_paper(lines):
    return {line.split("](papers/")[1].split("/")[0]: line for line in lines[2:]}


def test_rows_count_the_three_verdicts_and_say_which_code_made_and_decided_them(references):
    lines, sources = RESULTS.table(["prng", "unit_scaling", "gps", "bess"], references)
    assert lines[:2] == RESULTS.HEADER
    rows = rows_by_paper(lines)
    assert list(rows) == ["prng", "unit_scaling", "gps", "bess"]
    report = lambda paper: f"[abc1234]({references / paper / 'report.md'})"  # outside the checkout
    assert rows["prng"] == (
        "| [xoroshiro128aox, the IPU's PRNG (Hanlon & Felix, 2022)](papers/prng/README.md) | 2 | 1 | 0 "
        f"| 35 s (default scale, 2026-11-20) | {report('prng')} | current |"
    )
    # undecided counted apart from unverified and not measured; a record computed by other code is stale
    assert rows["unit_scaling"] == (
        "| [Unit Scaling (Blake et al., ICML 2023)](papers/unit_scaling/README.md) | 0 | 1 "
        "| 1 (1 unverified, 1 not measured) "
        f"| 10.2 min (default scale, 2026-11-20) | {report('unit_scaling')} "
        f"| stale: made by compute code 0123456789ab, this checkout's is {fingerprints('unit_scaling')[0]} |"
    )
    # decided by other decision code only: current computation, to be re-decided (seconds, no training)
    assert rows["gps"].endswith(
        f"| 2 | 0 | 0 | 1.7 min (default scale, 2026-11-20); overrides: gps.seeds=[0] | {report('gps')} "
        f"| re-decide: decided by code ba5eba11dead, this checkout's is {fingerprints('gps')[1]} |"
    )
    assert rows["bess"] == (
        "| [BESS (Cattaneo et al., 2022)](papers/bess/README.md) | - | - | - "
        "| no reference run: `make reproduce PAPER=bess`, then `make reference PAPER=bess` | - | - |"
    )
    assert sources[0] == f"prng: {references / 'prng'}"
    assert sources[3] == f"{references / 'bess'}: none"  # no folder at all, and no pending.yaml entry
    # a paper whose last default run predates its compute code: pending.yaml says which run and what staled it
    (references / "pending.yaml").write_text(
        "bess:\n  last_run: 2026-11-26 (9 hold, 0 fail, 1 undecided)\n  staled_by: issue 57's run -> Results\n"
    )
    try:
        stale = rows_by_paper(RESULTS.table(["bess"], references)[0])["bess"]
        section = RESULTS.paper_section("bess", references)
    finally:
        (references / "pending.yaml").unlink()
    why = "stale: last default run 2026-11-26 (9 hold, 0 fail, 1 undecided), before issue 57's run -> Results"
    assert stale.endswith(
        f"| no reference run: `make reproduce PAPER=bess`, then `make reference PAPER=bess` | - | {why} |"
    )
    assert section == [f"No reference run in results/bess/ yet ({why}): {RESULTS.command('bess')}, then `make readme`."]


def test_the_table_is_written_between_the_readme_markers(references, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{RESULTS.BEGIN}\nold table\n{RESULTS.END}\n\n## Running\n")
    lines, _ = RESULTS.table(["prng"], references)
    RESULTS.write_into(readme, lines)
    text = readme.read_text()
    assert text.startswith("# Title\n\n") and text.endswith(f"{RESULTS.END}\n\n## Running\n")
    assert "old table" not in text and lines[2] in text
    (tmp_path / "other.md").write_text("x")
    with pytest.raises(SystemExit, match="no table markers"):
        RESULTS.write_into(tmp_path / "other.md", lines)


def run_script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ""}
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "results.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)


def test_command_line_prints_the_table_and_names_its_sources(references, tmp_path):
    r = run_script("--references", str(references), "--paper", "prng", "--paper", "gps")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| [xoroshiro128aox") and lines[3].startswith("| [GPS++")
    assert "| 2 | 1 | 0 |" in lines[2] and "re-decide" in lines[3]
    assert "read prng: " in r.stderr
    # your own runs: outputs/<paper>/latest
    outputs = tmp_path / "outputs"
    run = write_record(outputs / "prng", "prng", PRNG_CLAIMS[:1], 5.0)
    (outputs / "prng" / "latest").symlink_to(run.name)
    r = run_script("--outputs", str(outputs), "--paper", "prng", "--paper", "bess")
    assert r.returncode == 0, r.stderr
    assert "| 1 | 0 | 0 | 5 s" in r.stdout and "no run: `make reproduce PAPER=bess`" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--paper", "nope"], "unknown paper(s) nope: choose from bess, prng, packing"),
        (["--write", "README.md", "--outputs", "outputs"], "--write writes the README from the reference runs only"),
    ],
)
def test_bad_arguments_are_named(args, message):
    r = run_script(*args)
    assert r.returncode == 2 and message in r.stderr and r.stdout == ""


def test_a_paper_readme_gets_its_reference_runs_claims_and_facts(references, tmp_path):
    decided = json.loads((references / "prng" / "claims.json").read_text())
    decided["facts"] = [{"id": "gate-ratio", "kind": "analytic", "paper": 0.553, "value": 0.2375}]
    (references / "prng" / "claims.json").write_text(json.dumps(decided))
    lines = RESULTS.paper_section("prng", references)
    assert lines[0].startswith("35 s (default scale, 2026-11-20), commit abc1234, code current: 2 hold, 1 fail, ")
    assert lines[0].endswith(f"([report](../../{references / 'prng' / 'report.md'})).")
    assert "| a | 0 | 0 | - | - | holds | ours <= 1: holds on this run |" in lines
    assert "| c | fails | no | - | - | fails | - |" in lines
    assert "| gate-ratio | analytic | 0.553 | 0.2375 |" in lines
    assert RESULTS.paper_section("bess", references)[0].startswith("No reference run in results/bess/ yet")
    unit = RESULTS.paper_section("unit_scaling", references)
    assert "1 undecided, 1 unverified, 1 not measured" in unit[0] and "code stale: made by compute code" in unit[0]
    assert "| cited | 0.7 | 0.71 | - | - | unverified (rule: holds) | - |" in unit

    readme = tmp_path / "README.md"
    readme.write_text(f"# P\n\n## Reference run\n\n{RESULTS.CLAIMS_BEGIN}\nstale block\n{RESULTS.CLAIMS_END}\n")
    RESULTS.write_into(readme, lines, RESULTS.CLAIMS_BEGIN, RESULTS.CLAIMS_END)
    assert "stale block" not in readme.read_text() and lines[0] in readme.read_text()


def test_writing_the_readme_keeps_a_row_and_block_whose_evidence_it_cannot_see(references, tmp_path, capsys):
    """A paper with neither a reference record nor a results/pending.yaml entry keeps its row and block (a fresh
    clone's `make readme` after a record was deleted or could not be read must not erase it); the others are
    rewritten; and a pending paper's row says why it has no reference."""
    site = tmp_path / "site"
    old_rows = {p: f"| [{p}](papers/{p}/README.md) | 9 | 9 | 9 | old | old | old |" for p in ("prng", "bess", "qm1b")}
    table = "\n".join([*RESULTS.HEADER, *old_rows.values()])
    (site / "README.md").parent.mkdir()
    (site / "README.md").write_text(f"# T\n\n{RESULTS.BEGIN}\n{table}\n{RESULTS.END}\n")
    for paper in old_rows:
        page = site / "papers" / paper / "README.md"
        page.parent.mkdir(parents=True)
        page.write_text(f"# {paper}\n\n{RESULTS.CLAIMS_BEGIN}\nold block of {paper}\n{RESULTS.CLAIMS_END}\n")
    (references / "pending.yaml").write_text("qm1b:\n  last_run: 2026-11-01 (1 hold)\n  staled_by: a change\n")
    papers = ["--paper", "prng", "--paper", "bess", "--paper", "qm1b"]
    assert RESULTS.main(["--references", str(references), "--write", str(site / "README.md"), *papers]) == 0
    err = capsys.readouterr().err
    rows = rows_by_paper(RESULTS.between(site / "README.md"))
    assert rows["bess"] == old_rows["bess"] and "warning: kept" in err and "row of bess" in err
    assert "old block of bess" in (site / "papers" / "bess" / "README.md").read_text()
    assert rows["prng"] != old_rows["prng"] and "| 2 | 1 | 0 |" in rows["prng"]
    assert "old block of prng" not in (site / "papers" / "prng" / "README.md").read_text()
    assert "stale: last default run 2026-11-01 (1 hold), before a change" in rows["qm1b"]  # pending: rewritten
    assert "No reference run in results/qm1b/ yet" in (site / "papers" / "qm1b" / "README.md").read_text()
    assert [w for w in err.splitlines() if w.startswith("warning")] == [w for w in err.splitlines() if "kept" in w]
    assert not any("prng" in w or "qm1b" in w for w in err.splitlines() if w.startswith("warning"))


def test_the_readme_is_what_make_readme_writes_from_the_committed_results():
    """The CI check: README.md's table and every paper README's reference block equal what `make readme` writes
    from results/ with this checkout's code; after a change that stales a row, `make readme` marks it."""
    text = (REPO_ROOT / "README.md").read_text()
    assert text.count(RESULTS.BEGIN) == 1 and text.count(RESULTS.END) == 1
    table = text.split(RESULTS.BEGIN)[1].split(RESULTS.END)[0].strip().splitlines()
    expected, _ = RESULTS.table(RESULTS.configured_papers(), REPO_ROOT / "results")
    assert table == expected, "README.md's table is not what `make readme` writes from results/: run `make readme`"
    for paper in RESULTS.configured_papers():
        page = (REPO_ROOT / "papers" / paper / "README.md").read_text()
        assert page.count(RESULTS.CLAIMS_BEGIN) == 1 and page.count(RESULTS.CLAIMS_END) == 1, paper
        block = page.split(RESULTS.CLAIMS_BEGIN)[1].split(RESULTS.CLAIMS_END)[0].strip("\n").splitlines()
        assert block == RESULTS.paper_section(paper, REPO_ROOT / "results"), (
            f"papers/{paper}/README.md's reference block is not what `make readme` writes: run `make readme`"
        )


def test_a_resumed_runs_time_says_it_is_the_resumed_part():
    run = {"started": "2026-11-28T03:56:31+00:00", "wall_seconds": 1130.9, "scale": "default"}
    assert RESULTS.time_text({**run, "overrides": ["paper=popsparse"]}) == "18.8 min (default scale, 2026-11-28)"
    assert RESULTS.time_text({**run, "overrides": ["paper=popsparse", "logger=none", "resume=true"]}) == (
        "18.8 min (default scale, 2026-11-28); resumed from a killed run's checkpoint: the time is the resumed part's"
    )
    reused = [
        {"kind": "memo", "what": "features", "entries": 1},  # kept work alone is not a resume
        {"kind": "checkpoint", "what": "fp32_unit", "from_step": 1200, "of": 4000},
    ]
    assert RESULTS.time_text({**run, "overrides": [], "reused": reused[:1]}) == "18.8 min (default scale, 2026-11-28)"
    assert RESULTS.time_text({**run, "overrides": [], "reused": reused}) == (
        "18.8 min (default scale, 2026-11-28); resumed from a killed run's checkpoint (fp32_unit from step 1200 of "
        "4000): the time is the resumed part's"
    )
    seeds = [{"kind": "checkpoint", "what": "nations/transe", "from_step": 1000, "of": 1000}] * 5  # one per seed
    assert RESULTS.time_text({**run, "overrides": [], "reused": [*seeds, reused[1]]}) == (
        "18.8 min (default scale, 2026-11-28); resumed from a killed run's checkpoint (nations/transe from step 1000 "
        "of 1000 (x5), fp32_unit from step 1200 of 4000): the time is the resumed part's"
    )


def test_drop_pending_removes_one_entry_and_keeps_the_header_and_notes(tmp_path):
    results = RESULTS
    text = (
        "# header line one\n# header line two\n"
        "bess:\n  last_run: x\n  staled_by: y\n  note: >-\n    a long\n    note\n"
        "gps:\n  last_run: z\n  staled_by: w\n"
    )
    (tmp_path / "pending.yaml").write_text(text)
    results.drop_pending("gps", tmp_path)
    after = (tmp_path / "pending.yaml").read_text()
    assert after.startswith("# header line one\n# header line two\n")
    assert results.pending(tmp_path) == {"bess": {"last_run": "x", "staled_by": "y", "note": "a long note"}}
    results.drop_pending("gps", tmp_path)  # gone already: nothing changes
    assert (tmp_path / "pending.yaml").read_text() == after

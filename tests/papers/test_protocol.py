"""The paper contract as every package keeps it (core.paper): one PAPER object naming config, claims, Results, run,
decide, render and the ledger; the declarations and the decision import without JAX; the compute fingerprint covers
no decision or report code; and the report code calls no measuring function: it imports neither the paper's decide
module nor the statistics that decide claims (core.stats), so every interval it shows was decided."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.paper import PARTS, Paper, find_paper
from core.provenance import REPO_ROOT, compute_units, decision_units, dependencies, modules_of
from core.results import check_type
from tests.papers.conftest import PAPERS

# what the compute fingerprint never covers: how runs are recorded, decided and reported
DECISION_MACHINERY = {"core.record", "core.report", "core.claims", "core.compare", "core.ledger"}
HEAVY = ("jax", "jaxlib", "flax", "optax")


def spec(paper: str) -> Paper:
    return find_paper(f"papers.{paper}")


@pytest.mark.parametrize("paper", PAPERS)
def test_every_part_of_the_contract_is_where_the_paper_says(paper):
    p = spec(paper)
    assert p.name == paper
    for part in PARTS:
        if part == "ipu_steps" and not p.ipu_steps:  # optional: PopSparse's report is its own simulated IPU
            continue
        assert p.module_path(part, REPO_ROOT) is not None, f"{paper}: {part} ({getattr(p, part)}) has no module"
    assert check_type(p.Results, f"{paper} Results") == []
    assert callable(p.load("run")) and callable(p.load("decide")) and callable(p.load("render"))


def test_the_declarations_and_the_decision_import_without_jax():
    """In a fresh process: `import papers.<name>` and loading every part but `run` leaves JAX unloaded."""
    code = f"""
import json, sys
from core.paper import find_paper
out = {{}}
for paper in {PAPERS!r}:
    p = find_paper("papers." + paper)
    for part in ("config", "claims", "results", "decide", "render", "ledger"):
        p.load(part)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
        if heavy:
            out[paper + " " + part] = heavy
            break
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {}


@pytest.mark.parametrize("paper", PAPERS)
def test_the_compute_fingerprint_covers_no_decision_code(paper):
    p = spec(paper)
    compute = modules_of(compute_units(p))
    decision_parts = {p.module(part) for part in ("claims", "decide", "render", "ledger")}
    assert not compute & (DECISION_MACHINERY | decision_parts), sorted(compute & (DECISION_MACHINERY | decision_parts))
    assert p.module("run") in compute
    assert "core.record" in modules_of(decision_units(p))


@pytest.mark.parametrize("paper", PAPERS)
def test_the_report_code_calls_no_measuring_function(paper):
    p = spec(paper)
    render = str(p.module_path("render", REPO_ROOT).relative_to(REPO_ROOT))
    decide = str(p.module_path("decide", REPO_ROOT).relative_to(REPO_ROOT))
    run = str(p.module_path("run", REPO_ROOT).relative_to(REPO_ROOT))
    assert render != decide, f"{paper}: render and decide share {render}"
    reached = set(dependencies(render))
    assert decide not in reached, f"{paper}: the report code ({render}) imports the decision ({decide})"
    assert run not in reached, f"{paper}: the report code ({render}) imports the run ({run})"
    assert "core/stats.py" not in reached, f"{paper}: the report code ({render}) imports core.stats"

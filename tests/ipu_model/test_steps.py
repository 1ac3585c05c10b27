"""A paper's main step on the simulated IPU, costed apart from its run (ipu_model/steps.py) and shown in its report
(core/ipusteps.py): the toy paper of tests/fixtures names two steps, one that lowers and one that does not."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.ipusteps import IPU_STEP_FILE, read_steps, step_status, step_table
from core.record import decide_record
from ipu_model import get_device
from ipu_model.lowering import UnsupportedError, lower
from ipu_model.steps import Step, cost_step, write_steps
from tests.conftest import REPO_ROOT
from tests.core.test_record import toy_run  # noqa: F401  (the module's toy run fixture)
from tests.fixtures.toy_paper.ipu import IPU_POINTS, in_circle


@pytest.fixture
def costed(toy_run, tmp_path):  # noqa: F811
    run_dir = shutil.copytree(toy_run, tmp_path / "run")
    write_steps(run_dir, device="mk2")
    return run_dir


def test_the_steps_are_costed_beside_the_run_and_the_report_shows_them(costed):
    data = read_steps(costed)
    assert data["paper"] == "toy" and data["device"] == "mk2" and data["complete"]
    fits, refused = data["steps"]
    # the first lowers: its cycles are the simulator's for the same function lowered by hand here
    direct = lower(in_circle, jax.ShapeDtypeStruct((IPU_POINTS, 2), jnp.float32), device="mk2").cost()
    assert fits["status"] == "fits" and fits["cycles"] == direct.cycles > 0
    assert fits["phases"]["compute"] > 0 and fits["memory_peak_bytes"] <= fits["memory_per_tile"]
    assert fits["paper_figure"] == "pi, exactly" and fits["equations"] >= 3 and fits["vertices"] > 0
    # the second does not: the primitive is named and counted, nothing is costed
    assert refused["status"] == "does not lower" and refused["missing"] == {"sort": 1} and "cycles" not in refused
    decide_record(costed)
    report = (costed / "report.md").read_text()
    assert "The main step on a simulated IPU" in report
    assert "does not lower: no rule for sort (x1)" in report and "none published" in report
    table = json.loads((costed / "claims.json").read_text())["tables"]
    assert [t["name"] for t in table][-1] == "ipu_steps"
    assert step_status(data) == "current"


def test_a_stopped_command_resumes_and_other_code_re_costs(costed, monkeypatch):
    import ipu_model.steps as steps

    made = json.loads((costed / IPU_STEP_FILE).read_text())
    monkeypatch.setattr(steps, "cost_step", lambda *a: pytest.fail("a kept row was costed again"))
    write_steps(costed)  # the run's own device (mk2), same code, same steps: every row kept
    assert json.loads((costed / IPU_STEP_FILE).read_text())["steps"] == made["steps"]
    # rows made by other code are not kept, and the file says it is stale until they are made again
    made["units"] = {**made["units"], "ipu_model.steps:cost_step": "0" * 12}
    made["fingerprint"] = "0" * 12
    (costed / IPU_STEP_FILE).write_text(json.dumps(made))
    assert step_status(read_steps(costed)).startswith("stale: made by code 000000000000; changed since: ipu_model")
    assert "stale" in step_table(read_steps(costed), step_status(read_steps(costed))).caption
    (costed / IPU_STEP_FILE).write_text(json.dumps({**made, "complete": False}))  # stale and a row short: both said
    assert step_status(read_steps(costed)).endswith("; incomplete (a stopped command: run it again to finish)")
    (costed / IPU_STEP_FILE).write_text(json.dumps(made))
    with pytest.raises(pytest.fail.Exception, match="costed again"):
        write_steps(costed, device="mk2")


def test_a_step_that_does_not_fit_is_costed_as_if_it_did():
    x = jax.ShapeDtypeStruct((4096, 64), jnp.float32)  # 1 MiB in and 1 MiB out: more than two 624 KiB tiles hold
    step = Step("big", jax.jit(lambda a: a * 2.0 + 1.0), (x,), "1 MiB")
    row = cost_step(step, get_device("mk2", tiles=2))
    assert row["status"] == "does not fit" and "out of memory on tile" in row["message"]
    assert row["cycles"] > 0 and row["memory_peak_bytes"] > row["memory_per_tile"]
    # the plain cost of the same program says only that it does not fit
    plain = lower(step.fn, x, device=get_device("mk2", tiles=2)).cost()
    assert not plain.fits and plain.cycles == 0 and plain.message == row["message"]


def test_a_step_that_outgrows_the_hosts_memory_stops_between_equations_and_says_so(monkeypatch):
    """The lowering checks its resident memory every 16 equations against the budget it is given: over it, it stops
    with HostMemoryError (the equation it reached); the row says the host could not cost it, the table shows no
    cycles, and the next command tries that row again (a bigger host can), keeping the others."""
    import ipu_model.steps as steps
    from ipu_model.lowering import HostMemoryError

    def many(a):
        for _ in range(40):
            a = a * 1.01 + 0.5
        return a

    x = jax.ShapeDtypeStruct((64,), jnp.float32)
    with pytest.raises(HostMemoryError, match=r"lowering stopped at equation 1 \(mul; the jaxpr has 80"):
        lower(many, x, device=4, max_host_bytes=1)
    lower(many, x, device=4, max_host_bytes=1 << 50)  # a budget it stays under: no error
    monkeypatch.setattr(steps, "host_budget", lambda: 1)
    small, big = Step("small", jax.jit(lambda a: a + 1.0), (x,), "64"), Step("big", jax.jit(many), (x,), "64")
    rows = steps.cost_steps([small, big], get_device("mk2", tiles=4))
    assert [r["status"] for r in rows] == ["too large for this host"] * 2 and "cycles" not in rows[1]
    table = step_table({"device": "mk2", "fingerprint": "abc", "steps": rows})
    assert table.rows[1][2].startswith("not costed: lowering stopped at equation") and table.rows[1][3] == "-"
    monkeypatch.setattr(steps, "host_budget", lambda: None)  # no limit: both are made again
    again = steps.cost_steps([small, big], get_device("mk2", tiles=4), kept={r["key"]: r for r in rows})
    assert [r["status"] for r in again] == ["fits", "fits"]


def test_unsupported_error_counts_what_is_missing():
    def f(x):
        return jnp.sort(x) + jnp.cumsum(x) + jnp.sort(x * 2)

    with pytest.raises(UnsupportedError) as e:
        lower(f, jax.ShapeDtypeStruct((8,), jnp.float32), device=4)
    assert e.value.missing == {"cumsum": 1, "sort": 2} and e.value.problems == []


def test_the_command_writes_the_file_and_remakes_the_report(toy_run, tmp_path):  # noqa: F811
    run_dir = shutil.copytree(toy_run, tmp_path / "run")
    r = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "ipu_step.py"), str(run_dir), "--device", "bow"],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert read_steps(run_dir)["device"] == "bow" and "simulated bow" in (run_dir / "report.md").read_text()
    bad = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "ipu_step.py"), str(tmp_path / "nothing")],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "not a run directory" in bad.stderr


def test_every_paper_names_its_step_but_popsparse_whose_report_is_the_simulated_ipu():
    from core.paper import find_paper

    papers = sorted(p.name for p in (REPO_ROOT / "papers").iterdir() if (p / "__init__.py").is_file())
    named = {p: bool(find_paper(f"papers.{p}").ipu_steps) for p in papers}
    assert named == {p: p != "popsparse" for p in papers}


def test_the_table_formats_each_row():
    data = {
        "device": "mk2", "fingerprint": "abc", "commit": "1234567", "modified": False, "made": "2026-11-30",
        "steps": [{"name": "s", "what": "w", "status": "fits", "cycles": 1500.0, "seconds": 1500 / 1.33e9,
                   "phases": {"compute": 1000.0, "exchange": 250.0, "sync": 250.0, "stream": 0.0},
                   "memory_peak_bytes": 2048.0, "memory_per_tile": 638976, "wall": {"lower": 1.2}}],
    }  # fmt: skip
    row = step_table(data).rows[0]
    assert row[2] == "yes (2 of 624 KiB)" and row[3] == "1,500" and row[4] == "1.13 us"
    assert row[5] == "67% / 17% / 17% / 0%" and row[6] == "lower 1" and row[7] == "none published"
    assert np.isclose(float(row[4].split()[0]), 1500 / 1.33e9 * 1e6, rtol=1e-2)


def test_the_fingerprint_of_a_step_covers_every_rule_of_the_lowering():
    """The rules reach the lowering's table through decorators, which a static closure cannot follow: `lower` names
    their modules, so a change to any rule makes the steps stale (and a run that lowers, SparQ's)."""
    from core.paper import find_paper
    from core.provenance import compute_units, ipu_step_units

    rules = {"gather:gather", "gather:scatter_add", "keys:random_bits", "keys:derive", "control:scan",
             "rules:elementwise", "rules:dot_general", "topk:top_k"}  # fmt: skip
    want = {f"ipu_model.lowering.{r}" for r in rules}
    assert want <= set(ipu_step_units(find_paper("tests.fixtures.toy_paper")))
    assert want <= set(compute_units(find_paper("papers.sparq")))


def test_steps_follow_their_run_to_a_reference_and_say_when_the_settings_differ(costed, tmp_path):
    from core.record import promote, read_record

    dest = tmp_path / "results" / "toy"
    promote(costed, dest)
    assert read_steps(dest)["steps"] == read_steps(costed)["steps"]
    assert "The main step on a simulated IPU" in (dest / "report.md").read_text()
    run = read_record(dest).run
    assert step_status(read_steps(dest), run=run) == "current"
    other = json.loads(json.dumps(run))
    other["config"]["toy"]["chunks"] += 1
    assert step_status(read_steps(dest), run=other).startswith("stale: made for other settings")


def test_the_results_table_says_when_a_papers_step_is_stale(costed):
    import importlib.util

    from core.record import read_record

    spec = importlib.util.spec_from_file_location("results_script", REPO_ROOT / "scripts" / "results.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert "IPU step" not in script.code_text(read_record(costed))
    made = json.loads((costed / IPU_STEP_FILE).read_text())
    made["units"] = {**made["units"], "ipu_model.steps:cost_step": "0" * 12}
    (costed / IPU_STEP_FILE).write_text(json.dumps(made))
    assert "IPU step stale: made by code" in script.code_text(read_record(costed))
    assert "(make ipu-step PAPER=toy)" in script.code_text(read_record(costed))

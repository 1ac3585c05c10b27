"""The benchmark script runs and writes its record, and every section runs at size "tiny" (no timing is asserted:
only ratios are reported)."""

import importlib.util
import json
import math
import subprocess
import sys

import pytest

from core.bench import Comparison
from tests.conftest import REPO_ROOT


def _bench_script():
    spec = importlib.util.spec_from_file_location("bench_script", REPO_ROOT / "scripts" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench_script()
SECTIONS = BENCH.discover()  # read from the bench modules' sources: nothing heavy is imported at collection
# sections that stay slow at size tiny, and why
SLOW_AT_TINY = {
    # ~50 s on an idle 2-core machine, minutes under load, even at one layer
    "gps": "compiling GPS++'s init and training step, for the packed and the padded shapes",
    # ~57 s in CI (2026-11-25): six jitted training steps; each arm's step is tested in tests/papers/unit_scaling
    "unit_scaling": "compiling the unit-scaled and regular training steps of the FP32, FP16 and FP8 arms",
    # ~42 s (2026-11-28): PySCF's SCF at several tolerances beside ours; the labeller is tested in tests/papers/qm1b
    "qm1b": "timing our DFT against PySCF at several convergence settings",
    # ~27 s (2026-11-28): jitted FP8 training steps; each policy's step is tested in tests/papers/fp8_llm
    "fp8_llm": "compiling the FP32 and FP8 training steps",
    # ~24 s (2026-11-28): sharded steps on several simulated devices; BESS's sharding is tested in tests/papers/bess
    "bess": "compiling the sharded BESS steps for each device count",
    # ~23 s (2026-11-28): the generators' throughput at every stream width; the streams are tested in tests/core/random
    "prng": "timing every generator's stream",
}


@pytest.mark.slow  # ~19 s (2026-11-29): make test has the section (test_section_runs_at_tiny_size[numerics]), main()
# writing its record (test_the_default_full_size_is_said_before_the_work_and_a_named_size_is_not) and the script
# run as a command (test_bench_rejects_unknown_sections)
def test_bench_quick_numerics_writes_json_and_markdown(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "bench.py"),
            "--section",
            "numerics",
            "--quick",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    (record,) = tmp_path.glob("*.json")
    rows = json.loads(record.read_text())["rows"]
    assert {row["peer"] for row in rows} >= {"ml_dtypes astype round-trip", "gfloat round_ndarray"}
    assert all(row["ours_seconds"] > 0 and row["speedup"] > 0 for row in rows)
    assert len(list(tmp_path.glob("*.md"))) == 1 and "| numerics |" in r.stdout


def test_bench_rejects_unknown_sections():
    r = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--section", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert (
        "unknown section(s) nope: choose from numerics, ipu_model, bess, fp8_llm, gps, packing, popsparse, prng, "
        "qm1b, sparq, unit_scaling" in r.stderr
    )


def test_every_paper_bench_module_is_discovered():
    papers = {p.parent.name for p in (REPO_ROOT / "papers").glob("*/bench.py")}
    modules = set(SECTIONS.values())
    assert {"core.numerics.bench", "ipu_model.bench"} <= modules
    assert {f"papers.{name}.bench" for name in papers} <= modules


@pytest.mark.parametrize(
    "name", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_AT_TINY else s for s in SECTIONS]
)
def test_section_runs_at_tiny_size(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # sections that cache data (gps) write it here, not into the checkout
    rows = BENCH.load(name, SECTIONS)("tiny")
    assert rows, f"section {name} returned no rows"
    for row in rows:
        assert isinstance(row, Comparison)
        assert row.section == name
        assert row.ours_seconds > 0 and row.peer_seconds > 0, row
        assert math.isfinite(row.speedup), row


def test_sections_reject_unknown_sizes():
    with pytest.raises(ValueError, match=r"'huge'.*tiny, quick, full"):
        BENCH.load("packing", SECTIONS)("huge")


def test_the_default_full_size_is_said_before_the_work_and_a_named_size_is_not(tmp_path, monkeypatch, capsys):
    sizes = []

    def fake(size):  # a section that records the size it was given and returns one row
        sizes.append(size)
        return [Comparison("fake", "case", "ours", "peer", 1.0, 2.0)]

    monkeypatch.setattr(BENCH, "discover", lambda: {"fake": "tests.fake"})
    monkeypatch.setattr(BENCH, "load", lambda name, sections=None: fake)
    assert BENCH.main(["--section", "fake", "--out", str(tmp_path / "a")]) == 0
    said = capsys.readouterr().err
    assert sizes == ["full"] and "full size (the default)" in said and "--size quick" in said
    assert said.index("full size (the default)") < said.index("[bench] fake (full)")  # before the long work
    assert BENCH.main(["--section", "fake", "--size", "tiny", "--out", str(tmp_path / "b")]) == 0
    assert sizes == ["full", "tiny"] and "the default" not in capsys.readouterr().err

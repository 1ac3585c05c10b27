"""The unit-scaling report from stored Results (the smoke fixture, tests/fixtures/results/unit_scaling), and the
JAX-free stand-ins that the config and the report use for core code that imports JAX: they must agree with it."""

import itertools
import json
import math
from types import SimpleNamespace as NS

import pytest

from core.claims import Interval
from core.results import from_json
from tests.conftest import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "results" / "unit_scaling" / "results.json"


@pytest.fixture(scope="module")
def stored():
    from core.config import validate_section
    from papers.unit_scaling.config import Config
    from papers.unit_scaling.results import Results

    record = json.loads(FIXTURE.read_text())
    cfg, _ = validate_section(record["config"]["unit_scaling"], Config, "unit_scaling")
    return NS(unit_scaling=cfg, scale=NS(name=NS(value=record["scale"]))), from_json(Results, record["results"])


def test_the_report_shows_the_decided_intervals_and_the_stored_figures(stored):
    from core.plots import close
    from papers.unit_scaling.arms import ARMS
    from papers.unit_scaling.claims import decide
    from papers.unit_scaling.report import render

    cfg, results = stored
    decided = decide(cfg, results)
    report = render(cfg, results, decided)
    assert report.claims == [] and report.facts == []  # the record adds the decision's
    tables = {t.name: t for t in report.tables}
    assert list(tables) == [
        "paper-table", "arms", "gaps", "init-scales", "gradient-error", "lr-sweep", "scale-tracks",
    ]  # fmt: skip
    gaps = {row[0]: row for row in tables["gaps"].rows}
    for arm in ("fp16_unit", "fp8_unit"):  # vs its own FP32 and vs FP32 regular, both the decision's estimates
        assert gaps[ARMS[arm].label][1] is decided.estimates[f"gap/{arm}/fp32_unit"]
        assert gaps[ARMS[arm].label][3] is decided.estimates[f"gap/{arm}/fp32_regular"]
    assert isinstance(gaps["FP32 unit-scaled (the parametrization effect)"][3], Interval)
    claims = {c.id: c for c in decided.claims}
    assert gaps[ARMS["fp8_regular"].label][1] == claims["fp8-regular-fails"].ours
    sweep = tables["lr-sweep"].rows
    assert len(sweep) == len(results.sweep.rows) and sum(row[4] == "yes" for row in sweep) == len(results.sweep.best)
    assert [f.name for f in report.figures] == [
        "init_scales", "training_curves", "scale_tracks_fp8_regular", "scale_tracks_fp8_unit", "grad_underflow",
    ]  # fmt: skip
    for f in report.figures:
        close(f.figure)
    assert report.metrics["test_bpc/fp32_unit"] == pytest.approx(sum(results.arms["fp32_unit"].test_bpc) / 2)


def test_the_fp8_section_is_core_fp8casts_and_defaults_to_simulate_fp8():
    import dataclasses

    from core.charlm import SIMULATE_FP8, FP8Casts
    from papers.unit_scaling.config import Config
    from papers.unit_scaling.train import recipe

    assert isinstance(Config().fp8, FP8Casts) and Config().fp8 == SIMULATE_FP8
    for rounding, saturate, head in itertools.product(("nearest", "stochastic"), (False, True), ("fp32", "low")):
        ours = FP8Casts(rounding, saturate, head)
        assert recipe(NS(fp8=ours)) == ours and dataclasses.asdict(ours)["head"] == head


def test_the_report_reads_the_stored_format_ranges_as_core_numerics_defines_them():
    from core.numerics.formats import get_format
    from core.scales import FormatRange, out_of_range
    from papers.unit_scaling.results import TensorScale

    stds = [0.0, 1e-9, 2.0**-16, 2.0**-14, 2.0**-9, 2.0**-6, 0.5, 1.0, 300.0, 448.0, 449.0, 6e4, math.inf, math.nan]
    kinds = ("activation", "activation grad", "weight", "weight grad")
    rows = [TensorScale(f"t{i}", kind, std, (2,)) for i, std in enumerate(stds) for kind in kinds]
    for fmt in ("e4m3", "e5m2"):
        stored = FormatRange.of(fmt)  # what run stores, and the report reads back
        f = get_format(fmt)
        assert (stored.smallest_normal, stored.max) == (float(f.smallest_normal), float(f.max))
        outside = [t for _, t in out_of_range({0: rows}, stored, kinds)]
        expected = [r for r in rows if not float(f.smallest_normal) <= r.std <= float(f.max)]  # NaN is outside
        assert outside == expected

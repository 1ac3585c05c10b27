"""The PopSparse reproduction end to end at the smoke scale, the CPU sweep's checks and the config checks."""

from types import SimpleNamespace

import numpy as np
import pytest

from core.config import ConfigError, validate_section
from core.sparsity import BlockPattern
from papers import popsparse
from papers.popsparse import Config, CpuConfig, IpuConfig
from papers.popsparse.claims import (
    PAPER_DENSE,
    PAPER_FIGURE_SPEEDUPS,
    PUBLISHED,
    crossover_sparsity,
    facts,
    measure,
    planned_cells,
)
from papers.popsparse.cpu import crossover_density, speedup_interval, time_cell
from papers.popsparse.ledger import LEDGER


def test_smoke_run_writes_claims_tables_and_figures(smoke_run):
    run = smoke_run("popsparse")  # what every run record holds: tests/papers/test_contract.py
    results = run.results
    claims = {c["id"]: c for c in results["claims"]}
    assert set(claims) == {  # FP16 only, one crossover block: no table or fall-with-block claims
        "ipu-static-beats-dynamic",
        "ipu-grows-with-block-float16",
        "ipu-headline-crossover",
        "cpu-static-beats-dynamic",
        "cpu-grows-with-block",
    }
    tables = {t["name"]: t for t in results["tables"]}
    assert set(tables) == {"paper_table", "ipu_grid", "ipu_crossover", "cpu", "cpu_crossover"}
    assert [(row[0], row[1]) for row in tables["paper_table"]["rows"]] == list(PUBLISHED)
    assert len(tables["ipu_grid"]["rows"]) == 4 and len(tables["cpu"]["rows"]) == 4
    for fig in ("paper_ratio", "ipu_speedup", "cpu_speedup"):
        assert (run.run_dir / f"{fig}.png").stat().st_size > 1000

    # the IPU claims, re-derived here from the grid the report prints (speed-ups to 2 decimals)
    grid = [dict(zip(tables["ipu_grid"]["columns"], row, strict=True)) for row in tables["ipu_grid"]["rows"]]
    static = {(r["block"], r["density"]): float(r["static"]) for r in grid}
    dynamic = {(r["block"], r["density"]): float(r["dynamic"]) for r in grid}
    wins = sum(static[c] > dynamic[c] for c in static)
    assert claims["ipu-static-beats-dynamic"]["ours"] == (wins == len(static))
    assert f"static faster in {wins} of {len(static)} cells" in claims["ipu-static-beats-dynamic"]["detail"]
    assert claims["ipu-grows-with-block-float16"]["ours"] == (static[(16, "1/16")] >= static[(1, "1/16")])
    # crossover: log-linear interpolation of the b=4 static speed-up through 1 between 1/4 and 1/16, or the
    # grid's edge when it does not cross inside it
    (row,) = tables["ipu_crossover"]["rows"]
    assert row[0] == 4
    s4, s16 = float(row[1]), float(row[2])
    crossing = claims["ipu-headline-crossover"]["ours"]
    if s4 < 1 <= s16:
        t = np.log(s4) / (np.log(s4) - np.log(s16))
        expected = 1 - np.exp(np.log(1 / 4) + t * (np.log(1 / 16) - np.log(1 / 4)))
        assert crossing == pytest.approx(expected, abs=0.01)  # the grid's speed-ups are rounded
    else:
        assert crossing == pytest.approx(0.75 if s4 >= 1 else 0.9375)
    # its verdict against the sparsity interpolated here (within 0.05 of 90% holds; decided where the grid's rounding
    # to 2 decimals cannot move it across the margin)
    independent = expected if s4 < 1 <= s16 else crossing
    if abs(abs(independent - 0.9) - 0.05) > 0.01:
        want = "holds" if abs(independent - 0.9) < 0.05 else "fails"
        assert claims["ipu-headline-crossover"]["verdict"] == want
    # no claim of this run is measured at the figures' m = k = 4096: no calibration fact; the ledger rides along
    assert results["facts"] == []
    assert {e["claim"]: e["moved_to"] for e in results["ledger"] if e["kind"] == "removed"} == {
        "ipu-dense-rate": "fact ipu-dense-rate (calibration)"
    }

    # the CPU table: speed-up = dense ms / method ms of the same row, medians of the same rounds
    cpu_rows = [dict(zip(tables["cpu"]["columns"], row, strict=True)) for row in tables["cpu"]["rows"]]
    for row in cpu_rows:
        for k in ("static", "dynamic", "scipy", "bcsr"):
            assert float(row[f"{k} speed-up"]) == pytest.approx(
                float(row["dense ms"]) / float(row[f"{k} ms"]), rel=0.02, abs=0.006
            )
        interval = row["static speed-up: median of per-round ratios [95% interval]"]
        assert interval["low"] <= interval["estimate"] <= interval["high"]
    grows = claims["cpu-grows-with-block"]
    assert grows["ours"]["low"] <= grows["ours"]["estimate"] <= grows["ours"]["high"]
    assert grows["paper"] == pytest.approx(np.log2(4.9 / 0.7) / 4, abs=1e-3)  # REFERENCES.md, the speed-up table


def _cell(block: int, dense: list[float], static: list[float], dynamic: list[float], density: float = 1 / 16):
    return {
        "block": block,
        "density": density,
        "dense": float(np.median(dense)),
        "static": float(np.median(static)),
        "dynamic": float(np.median(dynamic)),
        "rounds": {"dense": dense, "static": static, "dynamic": dynamic},
    }


def _cpu_only(blocks):
    cpu = CpuConfig(m=64, k=64, n=8, blocks=blocks, densities=[1 / 16], peers=[])
    return SimpleNamespace(popsparse=Config(ipu=IpuConfig(enabled=False), cpu=cpu))


def test_cpu_claims_decide_on_the_spread_of_the_timing_rounds():
    rng = np.random.default_rng(0)

    def noise():  # 2% round-to-round jitter
        return np.exp(rng.normal(0, 0.02, 5))

    dense = list(1.0 * noise())
    # static speed-up 1x, 2x, 4x at blocks 1, 4, 16: 0.5 doublings per doubling of the block; dynamic 3x slower
    cells = [_cell(b, dense, list(s * noise()), list(3 * s * noise())) for b, s in ((1, 1.0), (4, 0.5), (16, 0.25))]
    cfg = _cpu_only([1, 4, 16])
    got = {c.id: c for c in measure(cfg, [], cells)}
    x = [np.log2(c["block"]) for c in cells for _ in range(5)]
    y = [np.log2(d / s) for c in cells for d, s in zip(c["rounds"]["dense"], c["rounds"]["static"], strict=True)]
    assert got["cpu-grows-with-block"].ours.estimate == pytest.approx(np.polyfit(x, y, 1)[0])
    assert got["cpu-grows-with-block"].ours.estimate == pytest.approx(0.5, abs=0.03)
    assert got["cpu-grows-with-block"].holds and got["cpu-static-beats-dynamic"].holds
    assert "significantly faster in 3, significantly slower in 0" in got["cpu-static-beats-dynamic"].detail

    # a b=8 vs b=16 flip inside the noise: the old rule (every step non-decreasing) would fail on it; the trend's
    # interval decides instead, and with a flat trend it does not hold
    flat = [_cell(b, dense, list(0.2 * (1.05 if b == 16 else 1.0) * noise()), list(noise())) for b in (4, 8, 16)]
    got = {c.id: c for c in measure(_cpu_only([4, 8, 16]), [], flat)}
    assert got["cpu-grows-with-block"].verdict in ("undecided", "fails")
    # one cell where static and dynamic tie within the noise: "faster in every cell" does not hold
    tie = [_cell(4, dense, list(0.5 * noise()), list(0.5 * noise())), *cells[1:]]
    got = {c.id: c for c in measure(cfg, [], tie)}
    assert got["cpu-static-beats-dynamic"].verdict == "fails"
    assert "significantly faster in 2" in got["cpu-static-beats-dynamic"].detail


def test_speedup_interval_is_the_median_ratio_of_paired_rounds():
    cell = {"rounds": {"dense": [1.0, 2.0, 1.0, 1.0, 1.0], "static": [0.5, 1.0, 0.25, 0.5, 0.5]}}
    r = speedup_interval(cell, "static")
    assert r.estimate == pytest.approx(2.0)  # per-round ratios 2, 2, 4, 2, 2
    assert 2.0 <= r.low <= r.estimate <= r.high <= 4.0


def test_declared_claims_follow_the_cells_the_config_asks_for():
    # 48 x 48 in blocks of 16 is 9 blocks: density 1/16 rounds to one block, 1/9, so only block 4 sits at 1/16
    cpu = CpuConfig(m=48, k=48, n=8, blocks=[4, 16], densities=[0.25, 1 / 16], dynamic=False)
    cfg = SimpleNamespace(popsparse=Config(ipu=IpuConfig(enabled=False), cpu=cpu))
    assert [c.id for c in popsparse.claims(cfg)] == []
    _, cells = planned_cells(cfg)
    assert [c["density"] for c in cells] == [
        BlockPattern.random((48, 48), b, d).density for b in (4, 16) for d in (0.25, 1 / 16)
    ]
    ipu = IpuConfig(m=256, k=256, blocks=[1, 16], densities=[0.25, 1 / 16], dtypes=["float32", "float16"])
    cfg = SimpleNamespace(popsparse=Config(ipu=ipu, cpu=CpuConfig(m=64, k=64, blocks=[4, 16])))
    assert [c.id for c in popsparse.claims(cfg)] == [
        "ipu-paper-table",
        "ipu-static-beats-dynamic",
        "ipu-grows-with-block-float16",
        "ipu-grows-with-block-float32",
        "ipu-headline-crossover",
        "ipu-crossover-falls-with-block",
        "cpu-static-beats-dynamic",
        "cpu-grows-with-block",
    ]
    ipu = IpuConfig(m=256, k=256, blocks=[16], densities=[1 / 16], crossover_blocks=[16])
    cfg = SimpleNamespace(popsparse=Config(ipu=ipu, cpu=CpuConfig(enabled=False)))
    assert [c.id for c in popsparse.claims(cfg)] == ["ipu-static-beats-dynamic"]  # b=16 alone: no headline


def _ipu_row(dtype, block, density, static, dynamic):
    return {"dtype": dtype, "block": block, "density": density, "static_speedup": static, "dynamic_speedup": dynamic}


def test_ipu_claims_on_known_speedups():
    """The paper-table claim takes max(sim/paper, paper/sim) per cell; the headline takes the crossover sparsity
    nearest 90% among b = 1, 4, 8, a crossover beyond the grid counting as the grid's edge."""
    ipu = IpuConfig(m=256, k=256, blocks=[1, 16], densities=[1 / 16], crossover_blocks=[1, 4, 8])
    cfg = SimpleNamespace(popsparse=Config(ipu=ipu, cpu=CpuConfig(enabled=False)))
    scale = {(1, "float16"): (1.4, 0.5), (1, "float32"): (1.0, 1.0), (16, "float16"): (1.0, 1.0)}
    rows = [
        _ipu_row(t, b, 1 / 16, p_s * scale.get((b, t), (1.1, 1.1))[0], p_d * scale.get((b, t), (1.1, 1.1))[1])
        for (b, t), (p_s, p_d) in PUBLISHED.items()
    ]
    dens = [1 / 4, 1 / 8, 1 / 16, 1 / 32]
    speed = {1: [0.2, 0.3, 0.7, 1.3], 4: [0.5, 2.0, 3.0, 4.0], 8: [1.5, 2.5, 4.0, 6.0]}
    cross = [
        _ipu_row("float16", b, d, s, float("nan")) for b, ss in speed.items() for d, s in zip(dens, ss, strict=True)
    ]
    got = {c.id: c for c in measure(cfg, rows, [], cross)}
    table = got["ipu-paper-table"]
    assert "7 of 8 cells within 1.5x" in table.detail  # b=1 FP16 dynamic: 1 / 0.5 = 2
    assert (
        "worst 2.00 [1.75, 2.25] (b=1 float16 dynamic)" in table.detail and "median factor 1.05" in table.detail
    )  # 1, 1, 1, 1, 1.1, 1.1, 1.4, 2
    # by hand: sim 0.2 against a printed 0.4, any value in [0.35, 0.45], is a factor 1.75 .. 2.25: beyond 1.5 for
    # every value the figure rounds from, so it fails; the statistic is max(worst / 1.5, median / 1.2)
    assert table.ours.estimate == pytest.approx(2 / 1.5)
    assert (table.ours.low, table.ours.high) == (pytest.approx(1.75 / 1.5), pytest.approx(2.25 / 1.5))
    assert table.verdict == "fails"
    # b=1 crosses between 1/16 and 1/32, b=4 between 1/4 and 1/8 at 1 - 2^-2.5 = 82.3%, b=8 below 75% (edge)
    b4 = 1 - 2**-2.5
    b1 = 1 - 2 ** (-4 - np.log(1 / 0.7) / np.log(1.3 / 0.7))
    headline = got["ipu-headline-crossover"]
    assert headline.ours == pytest.approx(b1 if abs(b1 - 0.9) < abs(b4 - 0.9) else b4)
    assert "b=8: below 75.0%" in headline.detail
    assert got["ipu-crossover-falls-with-block"].ours is True  # b1 > b4 > 0.75


def test_table_claim_is_undecided_where_the_printed_rounding_straddles_a_target():
    """The README run of 2026-11-25 04:28: every cell right but b=16 FP16 dynamic at 1.51x the printed 1.9. The
    printed 1.9 is any value in [1.85, 1.95], so that cell's factor is 2.869 / 1.95 = 1.471 .. 2.869 / 1.85 = 1.551:
    it straddles 1.5, and the claim is undecided; the rule before issue 41 (exact points) failed it."""
    ipu = IpuConfig(m=256, k=256, blocks=[1, 16], densities=[1 / 16], crossover_blocks=[])
    cfg = SimpleNamespace(popsparse=Config(ipu=ipu, cpu=CpuConfig(enabled=False)))
    rows = [
        _ipu_row(t, b, 1 / 16, s, d * (1.51 if (b, t) == (16, "float16") else 1.0))
        for (b, t), (s, d) in PUBLISHED.items()
    ]
    table = {c.id: c for c in measure(cfg, rows, [])}["ipu-paper-table"]
    assert table.ours.low == pytest.approx(1.51 * 1.9 / 1.95 / 1.5)
    assert table.ours.high == pytest.approx(1.51 * 1.9 / 1.85 / 1.5)
    assert table.verdict == "undecided" and table.holds is None
    (entry,) = [e for e in LEDGER if e.claim == "ipu-paper-table" and e.kind == "respecified"]
    assert entry.original_verdict(table) == "fails on this run"
    # 1.6x instead: 1.56 .. 1.64 for every value the 1.9 rounds from: fails under both rules
    rows[2]["dynamic_speedup"] = 1.9 * 1.6  # (16, "float16")
    table = {c.id: c for c in measure(cfg, rows, [])}["ipu-paper-table"]
    assert table.verdict == "fails" and entry.original_verdict(table) == "fails on this run"


def _mk2_cell(n, tflops_at_bow_clock):
    """A simulated cell on a 1.33 GHz Mk2 that would run at `tflops_at_bow_clock` on the paper's 1.85 GHz Bow."""
    seconds = 1e-3
    return {"n": n, "fits": True, "tflops": tflops_at_bow_clock * 1.33 / 1.85, "seconds": seconds, "cycles": 1.33e6}


def test_dense_and_figure_claims_on_known_rates():
    """At m = k = 4096 the dense rate is reported (a calibration fact) against the paper's dense figure at every n
    both have (the factor either way, the simulated cycles taken to the paper's Bow clock), and the FP16 speed-ups
    decided against its figures in the cells outside the table: the grid's first, the crossover sweep's static cells
    where the grid has none."""
    ipu = IpuConfig(blocks=[1, 16], densities=[1 / 4, 1 / 16], ns=[1024, 4096], crossover_blocks=[1, 4])
    cfg = SimpleNamespace(popsparse=Config(ipu=ipu, cpu=CpuConfig(enabled=False)))
    declared = [c.id for c in popsparse.claims(cfg)]
    assert "ipu-dense-rate" not in declared and "ipu-paper-figures" in declared  # dense: a fact (issue 41)
    scale = {("float16", 1024): 0.7, ("float16", 4096): 1.0, ("float32", 1024): 1.6, ("float32", 4096): 1.0}
    rows = []
    for t in ("float16", "float32"):
        cells = [_mk2_cell(n, PAPER_DENSE[t][n] * scale[(t, n)]) for n in (1024, 4096)]
        dense = {**cells[1], "cells": cells}
        for b in (1, 16):
            for d in (1 / 4, 1 / 16):
                s = PAPER_FIGURE_SPEEDUPS.get(("static", b, d), 1.0) * (1.3 if (b, d) == (16, 1 / 4) else 1.0)
                y = PAPER_FIGURE_SPEEDUPS.get(("dynamic", b, d), 1.0)
                rows.append({**_ipu_row(t, b, d, s, y), "dense": dense})
    # the sweep's b=1 at 1/8 is off by 2x; its b=1 at 1/4 is ignored (the grid has that cell)
    cross = [_ipu_row("float16", 1, 1 / 8, 2 * 0.41, float("nan")), _ipu_row("float16", 1, 1 / 4, 9.0, 9.0)]
    cross.append(_ipu_row("float16", 4, 1 / 16, 1.52, float("nan")))
    got = {c.id: c for c in measure(cfg, rows, [], cross)}
    assert "ipu-dense-rate" not in got  # a calibration fact since issue 41
    (dense,) = facts(cfg, rows)
    assert dense.id == "ipu-dense-rate" and dense.kind == "calibration"
    assert dense.value == pytest.approx(1.6)  # FP32 n=1024 at 1.6x; FP16 n=1024 1/0.7 = 1.43
    assert "float16 n=1024: 0.70" in dense.detail and "factor 1.60" in dense.detail
    figures = got["ipu-paper-figures"]
    # cells: static b1 1/4 (1.0), static b16 1/4 (1.3), dynamic b1 1/4, dynamic b16 1/4 (1.0), static b1 1/8 (2.0),
    # static b4 1/16 (1.0): median 1.0, worst 2.0; 0.82 against a recorded 0.41 ([0.405, 0.415]) is 1.98 .. 2.02
    assert "5 of 6 cells within 1.5x" in figures.detail
    assert "median factor 1.00" in figures.detail and "worst 2.00 [1.98, 2.02] (static b=1 at 1/8)" in figures.detail
    assert figures.ours.low == pytest.approx(0.82 / 0.415 / 1.5) and figures.verdict == "fails"
    for t, n in scale:
        scale[(t, n)] = 1.2
    rows_ok = [
        {**r, "static_speedup": r["static_speedup"] / (1.3 if (r["block"], r["density"]) == (16, 1 / 4) else 1.0)}
        for r in rows
    ]
    for r in rows_ok:
        cells = [_mk2_cell(n, PAPER_DENSE[r["dtype"]][n] * 1.2) for n in (1024, 4096)]
        r["dense"] = {**cells[1], "cells": cells}
    got = {c.id: c for c in measure(cfg, rows_ok, [], cross[1:])}
    assert facts(cfg, rows_ok)[0].value == pytest.approx(1.2)
    # every cell at the recorded figure: factors 1 .. 1 + 0.005 / figure, far inside both targets
    assert got["ipu-paper-figures"].verdict == "holds" and got["ipu-paper-figures"].ours.high < 1


def test_crossover_density_interpolates_in_log_density():
    # speed-up 2 at 1/16 and 1/2 at 1/4: log-linear, so it crosses 1 half way, at 1/8
    assert crossover_density([1 / 4, 1 / 16], [0.5, 2.0]) == pytest.approx(1 / 8)
    assert crossover_density([1 / 16, 1 / 4, 1 / 8], [2.0, 0.5, 1.0]) == pytest.approx(1 / 8)  # any order
    assert crossover_density([1 / 4, 1 / 16], [0.5, 0.9]) is None  # never beats dense
    assert crossover_density([1 / 4, 1 / 16], [1.5, 3.0]) == 1 / 4  # beats it everywhere on the grid


def test_crossover_sparsity_bounds_beyond_the_grid():
    assert crossover_sparsity([1 / 4, 1 / 16], [0.5, 2.0]) == (pytest.approx(7 / 8), "87.5%")
    assert crossover_sparsity([1 / 4, 1 / 16], [1.5, 3.0])[0] == 0.75  # faster everywhere: below 75%
    assert crossover_sparsity([1 / 4, 1 / 16], [0.5, 0.9])[0] == 1 - 1 / 16  # never faster: above 93.75%


def test_time_cell_checks_every_product_and_times_each_method_in_the_same_rounds():
    cell = time_cell(64, 128, 32, 8, 0.25, repeat=3, min_seconds=0.0)
    assert cell["nnz_blocks"] == round(0.25 * 8 * 16) and cell["error"] < 1e-5
    for k in ("dense", "static", "dynamic", "scipy", "bcsr"):
        assert len(cell["rounds"][k]) == 3 and cell[k] == np.median(cell["rounds"][k])  # one statistic for all
    with pytest.raises(ValueError, match="unknown CPU peer 'mkl'"):
        time_cell(64, 64, 8, 8, 0.25, peers=["mkl"])


def test_a_wrong_product_is_not_timed():
    from papers.popsparse import cpu

    with pytest.raises(ValueError, match=r"relative error .* exceeds"):
        cpu._check("static", np.ones((2, 2)), np.zeros((2, 2)) + 2, 1e-4)


def test_config_errors_name_the_key():
    validate_section({}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"popsparse.ipu.blocks=3 is not allowed"):
        validate_section({"ipu": {"blocks": [3]}}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"popsparse.cpu.densities=1.5 is out of range"):
        validate_section({"cpu": {"densities": [1.5]}}, Config, "popsparse")
    with pytest.raises(ConfigError, match="must be divisible by every block size"):
        validate_section({"cpu": {"m": 100, "blocks": [16]}}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"popsparse.cpu.repeat=1 is out of range"):
        validate_section({"cpu": {"repeat": 1}}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"popsparse.ipu.dtypes='bfloat16' is not allowed"):
        validate_section({"ipu": {"dtypes": ["bfloat16"]}}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"both popsparse.ipu.enabled and popsparse.cpu.enabled are false"):
        validate_section({"ipu": {"enabled": False}, "cpu": {"enabled": False}}, Config, "popsparse")

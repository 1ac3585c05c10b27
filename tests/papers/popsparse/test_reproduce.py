"""The PopSparse reproduction end to end at the smoke scale, the CPU sweep's checks and the config checks."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from core.config import ConfigError, validate_section
from core.sparsity import BlockPattern
from papers import popsparse
from papers.popsparse import Config, CpuConfig, IpuConfig
from papers.popsparse.cpu import crossover_density, time_cell
from papers.popsparse.report import PUBLISHED, planned_cells


def test_smoke_run_writes_claims_tables_and_figures(cli, tmp_path):
    r = cli(["paper=popsparse", "scale=smoke", "logger=none", f"output_root={tmp_path}"], toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "popsparse" / "latest"
    results = json.loads((run / "results.json").read_text())
    claims = {c["id"]: c for c in results["claims"]}
    declared = json.loads((run / "claims.json").read_text())["declared"]
    assert [c["id"] for c in declared] == list(claims)  # declared before the run, kept by the report
    assert set(claims) == {
        "ipu-static-beats-dynamic",
        "ipu-grows-with-block-float16",
        "ipu-headline-crossover",
        "cpu-static-beats-dynamic",
        "cpu-grows-with-block",
    }
    assert all(c["ours"] is not None for c in claims.values())
    tables = {t["name"]: t for t in results["tables"]}
    assert set(tables) == {"paper_table", "ipu_grid", "cpu", "cpu_crossover"}
    assert [(row[0], row[1]) for row in tables["paper_table"]["rows"]] == list(PUBLISHED)
    assert len(tables["ipu_grid"]["rows"]) == 4 and len(tables["cpu"]["rows"]) == 4
    for fig in ("ipu_speedup", "cpu_speedup"):
        assert (run / f"{fig}.png").stat().st_size > 1000


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
        "ipu-static-beats-dynamic",
        "ipu-grows-with-block-float16",
        "ipu-grows-with-block-float32",
        "ipu-headline-crossover",
        "cpu-static-beats-dynamic",
        "cpu-grows-with-block",
    ]


def test_crossover_density_interpolates_in_log_density():
    # speed-up 2 at 1/16 and 1/2 at 1/4: log-linear, so it crosses 1 half way, at 1/8
    assert crossover_density([1 / 4, 1 / 16], [0.5, 2.0]) == pytest.approx(1 / 8)
    assert crossover_density([1 / 16, 1 / 4, 1 / 8], [2.0, 0.5, 1.0]) == pytest.approx(1 / 8)  # any order
    assert crossover_density([1 / 4, 1 / 16], [0.5, 0.9]) is None  # never beats dense
    assert crossover_density([1 / 4, 1 / 16], [1.5, 3.0]) == 1 / 4  # beats it everywhere on the grid


def test_time_cell_checks_every_product_and_times_each_method():
    cell = time_cell(64, 128, 32, 8, 0.25, repeat=1)
    assert cell["nnz_blocks"] == round(0.25 * 8 * 16) and cell["error"] < 1e-5
    assert all(cell[k] > 0 for k in ("dense", "static", "dynamic", "scipy", "bcsr"))
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
    with pytest.raises(ConfigError, match=r"popsparse.ipu.dtypes='bfloat16' is not allowed"):
        validate_section({"ipu": {"dtypes": ["bfloat16"]}}, Config, "popsparse")
    with pytest.raises(ConfigError, match=r"both popsparse.ipu.enabled and popsparse.cpu.enabled are false"):
        validate_section({"ipu": {"enabled": False}, "cpu": {"enabled": False}}, Config, "popsparse")

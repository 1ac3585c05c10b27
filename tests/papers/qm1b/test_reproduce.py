"""The QM1B reproduction end to end at the smoke scale: claims (their intervals recomputed here from the per-seed
MAEs and the drop counts the run records), Parquet shards with QM1B's columns keyed by the labelling code, reuse of
the generated data by a second run, a single-shard generate job, and config checks."""

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from core.config import ConfigError, validate_section
from papers.qm1b import Config
from papers.qm1b.generate import labelling_fingerprint


def _t_interval(values):
    v = np.asarray(values, float)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean(), v.mean() - half, v.mean() + half


def _ols_slope(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def test_smoke_run_generates_validates_trains_and_reuses_its_data(smoke_run, cli):
    run = smoke_run("qm1b")  # what every run record holds: tests/papers/test_contract.py
    results = run.results
    ids = ["gap-within-0.1mev", "energy-within-1mev", "drop-share", "valid-mae-falls", "beats-mean-predictor"]
    assert [c["id"] for c in results["claims"]] == [*ids, "gap-narrows"]
    claims = {c["id"]: c for c in results["claims"]}
    m = results["metrics"]
    # the labels' accuracy: the largest validated errors (meV; ~0.1 and ~0.02 in float32)
    assert claims["gap-within-0.1mev"]["ours"] == m["validate/gap_max_mev"] < 1.0
    assert claims["energy-within-1mev"]["ours"] == m["validate/energy_max_mev"] < 10.0
    assert "Fig. 2" in claims["gap-within-0.1mev"]["paper"]  # the paper's statement beside
    # the drop sample: QM1B's 20 fixed iterations, its share with the exact binomial interval
    drop = claims["drop-share"]["ours"]
    k, n = m["drops/dropped"], m["drops/conformers"]
    assert (
        n == 4
        and drop["estimate"] == k / n
        and drop["high"] == pytest.approx(stats.binomtest(k, n).proportion_ci(method="exact").high)
    )
    # the claims' intervals, recomputed here from the per-seed MAEs the run records: one slope per seed
    sizes = sorted({int(k.split("/")[2]) for k in m if k.startswith("schnet/mean_mae/")})
    seeds = sorted({k.split("/")[3] for k in m if k.startswith("schnet/valid_mae/") and k.count("/") == 3})
    assert len(sizes) >= 2 and len(seeds) == 2
    last = sizes[-1]
    expected = _t_interval([m[f"schnet/valid_mae/{last}/{s}"] - m[f"schnet/mean_mae/{last}/{s}"] for s in seeds])
    ours = claims["beats-mean-predictor"]["ours"]
    assert (ours["estimate"], ours["low"], ours["high"]) == pytest.approx(expected, rel=1e-6)
    x = [math.log(n) for n in sizes]
    rel = [
        _ols_slope(x, [m[f"schnet/valid_mae/{n}/{s}"] / m[f"schnet/mean_mae/{n}/{s}"] for n in sizes]) for s in seeds
    ]
    gap = [
        _ols_slope(x, [m[f"schnet/valid_mae/{n}/{s}"] - m[f"schnet/train_mae/{n}/{s}"] for n in sizes]) for s in seeds
    ]
    for cid, slopes in (("valid-mae-falls", rel), ("gap-narrows", gap)):
        ours = claims[cid]["ours"]
        assert (ours["estimate"], ours["low"], ours["high"]) == pytest.approx(_t_interval(slopes), rel=1e-6), cid
    for cid in ("valid-mae-falls", "beats-mean-predictor", "gap-narrows"):  # decided on intervals over 2 seeds
        ours = claims[cid]["ours"]
        assert ours["low"] <= ours["estimate"] <= ours["high"] and ours["confidence"] == 0.95, (cid, ours)
        assert claims[cid]["verdict"] in ("holds", "fails", "undecided")
    assert any(e["claim"] == "gap-accuracy" and e["kind"] == "removed" for e in results["ledger"])
    (scaling,) = [t for t in results["tables"] if t["name"] == "schnet_scaling"]
    assert "+-" in scaling["rows"][0][2]  # validation MAE as mean +- std over the seeds
    shards = list((run.output_root / "qm1b" / "data").glob("*/shard_00000_of_00001"))
    manifests = {json.loads((d / "manifest.json").read_text())["dft"]["early_stop"]: d for d in shards}
    assert len(shards) == 2 and set(manifests) == {True, False}  # the dataset, and the drop sample at 20 iterations
    shard = manifests[True]
    manifest = json.loads((shard / "manifest.json").read_text())
    assert len(manifest["done"]) == 6
    assert manifest["code"] == labelling_fingerprint()  # the labelling code, part of the dataset's key
    table = pq.read_table(shard / manifest["parts"][0]["file"])
    assert table.column_names[:10] == ["smile", "atoms", "z", "energy", "homo", "lumo", "N", "std", "y", "pos"]
    assert b"versions" in table.schema.metadata and b"selection" in table.schema.metadata
    assert json.loads(table.schema.metadata[b"code"]) == manifest["code"]
    again = cli(run.args(), toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((shard / "manifest.json").read_text())["seconds"] == manifest["seconds"]  # nothing recomputed


def test_generate_stage_makes_only_its_shard(cli, tmp_path):
    args = ["paper=qm1b", "scale=smoke", "logger=none", f"output_root={tmp_path}", "qm1b.stage=generate"]
    r = cli([*args, "shard=1", "num_shards=3"], toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    (shard,) = (tmp_path / "qm1b" / "data").glob("*/shard_*")
    assert shard.name == "shard_00001_of_00003"
    assert len(json.loads((shard / "manifest.json").read_text())["done"]) == 2  # molecules 1 and 4 of 6
    run = tmp_path / "qm1b" / "latest"
    assert json.loads((run / "claims.json").read_text())["declared"] == []  # a generate job checks no claims
    assert json.loads((run / "results.json").read_text())["claims"] == []


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"qm1b\.stage"):
        validate_section({"stage": "train"}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"qm1b\.dft\.dtype"):
        validate_section({"dft": {"dtype": "float16"}}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"qm1b\.schnet\.sizes=\[100, 50\] must be at least two increasing sizes"):
        validate_section({"schnet": {"sizes": [100, 50]}}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"sizes ends at 5000 training conformers"):
        validate_section({"schnet": {"sizes": [10, 5000]}}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"qm1b\.schnet\.seeds=0 is out of range"):
        validate_section({"schnet": {"seeds": 0}}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"qm1b\.data\.source"):
        validate_section({"data": {"source": "gdb11"}}, Config, "qm1b")

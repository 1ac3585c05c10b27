"""The QM1B reproduction end to end at the smoke scale, made once (tests/papers/conftest.py): its claims, recomputed
here from the Results it stored (the validated rows' errors, the drop counts, the per-seed MAEs), and the Parquet
shards with QM1B's columns keyed by the labelling code. Reuse of the labelled data by the next run is checked on the
stage that keeps it (run.label_dataset and label_drops with a stand-in DFT), and a generate-only job in process; the
same checks through a second command-line run are slow tests. Config checks last."""

import functools
import json
import math
from collections import Counter
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf
from scipy import stats

import papers.qm1b.generate as generate_module
import papers.qm1b.run as run_module
from core.config import ConfigError, validate_section
from core.context import RunContext
from core.provenance import REPO_ROOT
from papers.qm1b import PAPER
from papers.qm1b.config import Config, drop_dft, drop_selection, selection
from papers.qm1b.generate import dataset_key, generate_shard, labelling_fingerprint, read_dataset
from tests.papers.qm1b.test_generate import fake_dft


def _t_interval(values):
    v = np.asarray(values, float)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean(), v.mean() - half, v.mean() + half


def _ols_slope(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def _shards(output_root):
    """{early_stop: the shard folder}: the dataset (early stopping) and the drop sample (20 fixed iterations)."""
    shards = list((output_root / "qm1b" / "data").glob("*/shard_00000_of_00001"))
    manifests = {json.loads((d / "manifest.json").read_text())["dft"]["early_stop"]: d for d in shards}
    assert len(shards) == 2 and set(manifests) == {True, False}
    return manifests


@pytest.mark.slow  # the smoke run: make test-all (tests/papers/conftest.py SMOKE says what covers it)
def test_smoke_run_generates_validates_and_trains(smoke_run):
    run = smoke_run("qm1b")  # what every run record holds: tests/papers/test_contract.py
    results, decision, claims = run.results, run.decision, run.claims
    assert list(claims) == ["drop-share", "valid-mae-falls", "gap-narrows"]
    assert results.stage == "all"
    # the labels' accuracy (a test's since issue 62, test_dft.py): the run's largest validated errors, in the metrics
    gap, energy = np.abs(results.validation.gap_mev), np.abs(results.validation.energy_mev)
    assert gap.size == energy.size == 2  # qm1b.validate.rows at the smoke scale
    assert decision["metrics"]["validate/gap_max_mev"] == gap.max() < 1.0
    assert decision["metrics"]["validate/energy_max_mev"] == energy.max() < 10.0
    # the drop sample: QM1B's 20 fixed iterations, its share with the exact binomial interval
    drops = results.drops
    assert (drops.iterations, drops.early_stop) == (20, False)
    k = sum(v for r, v in drops.dropped.items() if r in ("std", "zero_gap", "not_finite"))
    n = drops.rows + k
    drop = claims["drop-share"]["ours"]
    assert (
        n == 4
        and drop["estimate"] == k / n
        and drop["high"] == pytest.approx(stats.binomtest(k, n).proportion_ci(method="exact").high)
    )
    assert (decision["estimates"]["drops/computed"], decision["estimates"]["drops/dropped"]) == (n, k)
    # the claims' intervals, recomputed here from the per-seed MAEs the run stored: one slope per seed
    scaling = results.scaling
    sizes = [r.size for r in scaling]
    assert sizes == [2, 4] and all(len(r.valid_mae) == len(r.seeds) == 2 for r in scaling)
    last = scaling[-1]
    expected = _t_interval([v - m for v, m in zip(last.valid_mae, last.mean_mae, strict=True)])
    (fact,) = decision["facts"]  # beats-mean-predictor: a fact (construction) since issue 62
    ours = fact["value"]
    assert fact["id"] == "beats-mean-predictor" and fact["kind"] == "construction"
    assert (ours["estimate"], ours["low"], ours["high"]) == pytest.approx(expected, rel=1e-6)
    x = [math.log(n) for n in sizes]
    rel = [_ols_slope(x, [r.valid_mae[s] / r.mean_mae[s] for r in scaling]) for s in range(2)]
    gap_slopes = [_ols_slope(x, [r.valid_mae[s] - r.train_mae[s] for r in scaling]) for s in range(2)]
    for cid, slopes in (("valid-mae-falls", rel), ("gap-narrows", gap_slopes)):
        ours = claims[cid]["ours"]
        assert (ours["estimate"], ours["low"], ours["high"]) == pytest.approx(_t_interval(slopes), rel=1e-6), cid
    for cid in ("valid-mae-falls", "gap-narrows"):  # decided on intervals over 2 seeds
        ours = claims[cid]["ours"]
        assert ours["low"] <= ours["estimate"] <= ours["high"] and ours["confidence"] == 0.95, (cid, ours)
        assert claims[cid]["verdict"] in ("holds", "fails", "undecided")
    est = decision["estimates"]["schnet/valid_mae/4"]
    assert (est["estimate"], est["low"], est["high"]) == pytest.approx(_t_interval(last.valid_mae), rel=1e-6)
    removed = {e["claim"] for e in decision["ledger"] if e["kind"] == "removed"}
    assert {"gap-accuracy", "gap-within-0.1mev", "energy-within-1mev", "beats-mean-predictor"} <= removed
    (table,) = [t for t in decision["tables"] if t["name"] == "schnet_scaling"]
    assert "+-" in table["rows"][0][2]  # validation MAE as mean +- std over the seeds

    # the Parquet shards, keyed by the labelling code, and the counts the Results hold of them
    shards = _shards(run.output_root)
    for labelled, shard in ((results.dataset, shards[True]), (drops, shards[False])):
        manifest = json.loads((shard / "manifest.json").read_text())
        assert labelled.key == shard.parent.name == manifest["key"]
        assert (labelled.rows, labelled.dropped, labelled.seconds) == (
            manifest["rows"],
            manifest["dropped"],
            manifest["seconds"],
        )
    manifest = json.loads((shards[True] / "manifest.json").read_text())
    assert len(manifest["done"]) == 6
    assert manifest["code"] == labelling_fingerprint()  # the labelling code, part of the dataset's key
    parquet = pq.read_table(shards[True] / manifest["parts"][0]["file"])
    assert parquet.column_names[:10] == ["smile", "atoms", "z", "energy", "homo", "lumo", "N", "std", "y", "pos"]
    assert b"versions" in parquet.schema.metadata and b"selection" in parquet.schema.metadata
    assert json.loads(parquet.schema.metadata[b"versions"])["pyscf"]
    assert json.loads(parquet.schema.metadata[b"code"]) == manifest["code"]


@pytest.mark.slow
def test_a_second_smoke_run_reuses_its_data(smoke_run, cli):
    """The whole smoke run again into the same output root: it labels nothing (the fast check of the same reuse:
    test_the_labelled_datasets_are_kept_and_reused_by_the_next_run)."""
    run = smoke_run("qm1b")
    before = {k: json.loads((d / "manifest.json").read_text()) for k, d in _shards(run.output_root).items()}
    again = cli(run.args(), toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    after = {k: json.loads((d / "manifest.json").read_text()) for k, d in _shards(run.output_root).items()}
    assert after == before  # nothing recomputed: the same parts, counts and labelling seconds


# ---------------------------------------------------------------------------------------------- reuse, in process


# QM9-like SMILES of 1-3 heavy atoms: the smoke selection (2-3 heavy atoms) scans most of QM9 for its few
# molecules that small (about a minute on a busy 2-core machine), so these tests select from this list instead
SMALL_SMILES = [
    "C", "CC", "CCC", "CO", "CCO", "COC", "CC=O", "CN", "CCN", "C#N", "CC#N", "O", "OC=O", "NC=O", "C1CC1", "CF",
    "N", "C=O",
]  # fmt: skip


def _smoke_config(output_root, **shared):
    """The smoke scale's run config (configs/paper_scale/qm1b/smoke.yaml) as `run` gets it."""
    section = OmegaConf.load(REPO_ROOT / "configs" / "paper_scale" / "qm1b" / "smoke.yaml")["qm1b"]
    c, _ = validate_section(section, Config, "qm1b")
    keys = {"seed": 0, "output_root": str(output_root), "shard": 0, "num_shards": 1, **shared}
    return SimpleNamespace(qm1b=c, **keys)


@pytest.fixture
def stand_in(monkeypatch):
    """The run's generator with test_generate's stand-in DFT, selecting from SMALL_SMILES: the conformers it
    labels, by early_stop (True: the dataset, False: the drop sample at fixed iterations)."""
    monkeypatch.setattr(generate_module, "qm9_smiles", lambda: SMALL_SMILES)
    labelled = Counter()

    def counting(atoms, **dft):
        labelled[dft["early_stop"]] += len(atoms)
        return fake_dft(atoms, **dft)

    monkeypatch.setattr(
        run_module, "generate_shard", functools.partial(generate_shard, run_batch=counting, show_progress=False)
    )
    return labelled


def test_the_labelled_datasets_are_kept_and_reused_by_the_next_run(tmp_path, stand_in):
    """The run's data stage at the smoke scale: the dataset and the drop sample are labelled into output_root,
    keyed by their selection, DFT and labelling code; the next run (any compute code, resumed or not) finds them done
    and labels nothing, and the Results count what the manifests hold."""
    cfg = _smoke_config(tmp_path)
    c = cfg.qm1b
    directory, manifests = run_module.label_dataset(cfg)
    drops_dir, drops = run_module.label_drops(cfg)
    assert stand_in == {True: 6 * 2, False: 2 * 2}  # 6 molecules and 2 of the drop sample, 2 conformers each
    code = labelling_fingerprint()
    assert directory == tmp_path / "qm1b" / "data" / dataset_key(selection(c, 0), asdict(c.dft), code)
    assert drops_dir == tmp_path / "qm1b" / "data" / dataset_key(drop_selection(c, 0), drop_dft(c), code)
    assert [m["code"] for m in (*manifests, drops)] == [code, code]

    again_dir, again = run_module.label_dataset(cfg)
    again_drops = run_module.label_drops(cfg)
    assert stand_in == {True: 12, False: 4}  # nothing labelled again
    assert (again_dir, again, again_drops) == (directory, manifests, (drops_dir, drops))
    counted = run_module.labelled(again, again_dir)
    assert counted.key == directory.name and counted.rows == read_dataset(directory, 1).num_rows == manifests[0]["rows"]
    assert counted.conformers == 12 and (counted.iterations, counted.early_stop) == (c.dft.iterations, True)
    off = _smoke_config(tmp_path)
    off.qm1b.drops.molecules = 0
    assert run_module.label_drops(off) is None  # no drop sample: nothing labelled for it


def test_a_generate_job_labels_only_its_shard_and_declares_no_claims(tmp_path, stand_in):
    cfg = _smoke_config(tmp_path, shard=1, num_shards=3)
    cfg.qm1b.stage = "generate"
    assert PAPER.declare(cfg) == []
    results = PAPER.compute(cfg, RunContext.detached())
    (shard,) = (tmp_path / "qm1b" / "data").glob("*/shard_*")
    assert shard.name == "shard_00001_of_00003"
    manifest = json.loads((shard / "manifest.json").read_text())
    assert len(manifest["done"]) == 2  # molecules 1 and 4 of 6
    assert stand_in == {True: 2 * 2}  # no drop sample, no validation, no training
    assert results.stage == "generate" and results.drops is None and results.validation is None
    assert (results.dataset.key, results.dataset.rows, results.dataset.shards) == (
        shard.parent.name,
        manifest["rows"],
        1,
    )
    assert PAPER.decide_results(cfg, results).claims == []


@pytest.mark.slow
def test_the_generate_command_makes_only_its_shard(cli, tmp_path):
    """A generate job from the command line, with the real DFT (the cluster's job: README)."""
    args = ["paper=qm1b", "scale=smoke", "logger=none", f"output_root={tmp_path}", "qm1b.stage=generate"]
    r = cli([*args, "shard=1", "num_shards=3"], toy=False)
    assert r.returncode == 0, r.stderr[-3000:]
    (shard,) = (tmp_path / "qm1b" / "data").glob("*/shard_*")
    assert shard.name == "shard_00001_of_00003"
    assert len(json.loads((shard / "manifest.json").read_text())["done"]) == 2  # molecules 1 and 4 of 6
    run = tmp_path / "qm1b" / "latest"
    decision = json.loads((run / "claims.json").read_text())
    assert decision["declared"] == [] and decision["claims"] == []  # a generate job checks no claims
    assert json.loads((run / "results.json").read_text())["results"]["stage"] == "generate"


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

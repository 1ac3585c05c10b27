"""GPS++ training: it learns (far below the mean predictor on a structural target), compiles once, resumes from a
checkpoint to the same parameters as an uninterrupted run, and data parallelism over 2 devices equals 1 device."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from papers.gps.batching import PackLimits
from papers.gps.model import GPSConfig
from papers.gps.train import TrainConfig, Trainer, train_gps

LIMITS = PackLimits(nodes=24, edges=48, graphs=4)
TINY = GPSConfig(
    layers=1, node=32, edge=16, globals=8, heads=4, ffn=64, encoder=8, embedding=16, kernels=8,
    node_dropout=0.0, edge_dropout=0.0, global_dropout=0.0, attention_dropout=0.0, drop_path=0.0,
)  # fmt: skip


def test_learns_far_below_the_mean_predictor_and_compiles_once(molecules):
    index = np.arange(len(molecules))
    tc = TrainConfig(steps=150, packs_per_batch=2, lr=3e-3, warmup=10, eval_every=150, noise=0.0, masking=False)
    _, info = train_gps(TINY, molecules, index, index, tc, LIMITS)
    mean_mae = np.abs(molecules.target - molecules.target.mean()).mean() * 1000
    assert info["valid_mae"] < 0.25 * mean_mae, (info["valid_mae"], mean_mae)
    assert info["traces"] == 1  # one compiled step served every batch, the padded last one included
    assert info["graphs_per_second"] > 0 and info["packing"]["nodes"] > 0


@pytest.mark.slow  # ~45 s; test_reproduce checks that a rerun resumes without retraining
def test_a_killed_run_resumes_to_the_same_parameters(molecules, tmp_path, monkeypatch):
    index = np.arange(len(molecules))
    tc = TrainConfig(steps=6, packs_per_batch=2, warmup=1, eval_every=3, checkpoint_every=2)
    reference, _ = train_gps(TINY, molecules, index, index[:4], tc, LIMITS)

    real_step = Trainer.step

    def dies_at_step_5(self, params, opt_state, batch, step):
        if step == 5:
            raise KeyboardInterrupt("killed")
        return real_step(self, params, opt_state, batch, step)

    monkeypatch.setattr(Trainer, "step", dies_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        train_gps(TINY, molecules, index, index[:4], tc, LIMITS, checkpoint_dir=tmp_path)
    monkeypatch.setattr(Trainer, "step", real_step)
    assert sorted(p.name for p in tmp_path.iterdir())[-1] == "step_000000004.msgpack"
    resumed, info = train_gps(TINY, molecules, index, index[:4], tc, LIMITS, checkpoint_dir=tmp_path)
    for a, b in zip(jax.tree.leaves(reference), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert [c[0] for c in info["curve"]] == [3, 6]


def test_bad_batch_for_the_mesh_is_named():
    with pytest.raises(ValueError, match="packs_per_batch=3 must be a multiple of the 2 devices"):
        from jax.sharding import Mesh

        Trainer(TINY, TrainConfig(packs_per_batch=3), LIMITS, 0.0, 1.0, Mesh(np.array(jax.devices() * 2), ("data",)))
    with pytest.raises(ValueError, match="warmup=10 must be in"):
        TrainConfig(steps=5, warmup=10)


_DATA_PARALLEL = """
import json, sys
import jax, numpy as np
sys.path.insert(0, {tests!r})
from conftest import SMILES, _geometries
from papers.gps.cache import featurise_many
from papers.gps.features import featurise
from papers.gps.train import TrainConfig, train_gps, data_mesh
from test_train import TINY, LIMITS
el, pos = _geometries(SMILES)
target = np.array([featurise(s).num_nodes for s in SMILES], float)
g = featurise_many(SMILES, positions=pos, elements=el, target=target)
idx = np.arange(len(g))
tc = TrainConfig(steps=3, packs_per_batch=2, warmup=1, eval_every=3)
out = {{}}
for n in (1, 2):
    params, info = train_gps(TINY, g, idx, idx, tc, LIMITS, mesh=data_mesh(jax.devices()[:n]))
    leaves = [np.asarray(x).ravel().tolist() for x in jax.tree.leaves(params)[:6]]
    out[n] = leaves + [info["valid_mae"], info["devices"]]
print(json.dumps(out))
"""


@pytest.mark.slow  # ~70 s (a subprocess compiling for 1 and 2 devices); BESS tests multi-device in make test
def test_two_devices_train_like_one():
    tests = str(Path(__file__).parent)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", TQDM_DISABLE="1")
    r = subprocess.run(
        [sys.executable, "-c", _DATA_PARALLEL.format(tests=tests)], capture_output=True, text=True, env=env, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    one, two = out["1"], out["2"]
    assert one[-1] == 1 and two[-1] == 2
    for a, b in zip(one[:-2], two[:-2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert one[-2] == pytest.approx(two[-2], rel=1e-4)

"""The arms of one training seed are paired: the modules they share start from the same weights and drop the same
units, and every arm sees the same packs, masking groups and noise (an unmasked arm the same groups, unapplied);
another seed gives other numbers. What the paired claims (papers/gps/claims.py) rest on."""

from dataclasses import replace

import flax.linen as nn
import jax
import numpy as np
import pytest
from flax.traverse_util import flatten_dict

from papers.gps.batching import PackLimits
from papers.gps.config import ARMS, Config
from papers.gps.model import DropPath, GPSConfig, GPSPlusPlus
from papers.gps.run import arm_training
from papers.gps.train import Epochs, TrainConfig, Trainer

LIMITS = PackLimits(nodes=24, edges=48, graphs=4)
TC = TrainConfig(steps=10, packs_per_batch=2, warmup=1)
TINY = GPSConfig(layers=1, node=16, edge=8, globals=8, heads=4, ffn=32, encoder=8, embedding=8, kernels=8)


def _params(arm: str, seed: int) -> dict:
    cfg = replace(TINY, **ARMS[arm].model)
    params, _ = Trainer(cfg, TC, LIMITS, 0.0, 1.0).init(seed)
    return {k: np.asarray(v) for k, v in flatten_dict(params, sep="/").items()}


def test_the_modules_two_arms_share_start_identical():
    full, other_seed = _params("full", 7), _params("full", 8)
    drawn = [k for k in full if k.endswith(("kernel", "embedding"))]  # the randomly initialised weights
    assert all(not np.array_equal(full[k], other_seed[k]) for k in drawn)  # another seed, other weights
    mpnn = _params("mpnn_only", 7)
    assert set(mpnn) < set(full) and any("attention" in k for k in set(full) - set(mpnn))
    for k, v in mpnn.items():
        np.testing.assert_array_equal(v, full[k], err_msg=k)
    for k, v in _params("full_unmasked", 7).items():  # the same model: only its training differs
        np.testing.assert_array_equal(v, full[k], err_msg=k)
    no_3d = _params("no_3d", 7)
    # the input projections read fewer features without 3D (other shapes); every other module matches full's
    differ = {k for k, v in no_3d.items() if v.shape != full[k].shape or not np.array_equal(v, full[k])}
    assert differ == {"encoder/node_in/kernel", "encoder/edge_in/kernel"}
    assert all(no_3d[k].shape != full[k].shape for k in differ)


@pytest.mark.slow  # ~1 min (two models traced op by op); the initialisation test above runs in the fast suite
def test_the_ffn_branch_drops_the_same_molecules_with_or_without_attention(molecules):
    """With the same dropout key, the FFN branch's stochastic depth keeps the same molecules in full GPS++ and in
    MPNN only (its key derives from the module's name, not from how many draws came before it)."""
    index = np.arange(len(molecules))
    batch = Epochs(molecules, index, LIMITS, TC).batch(0)
    model_batch = {k: v for k, v in batch.items() if k not in ("atoms_clean", "bonds_clean", "target")}
    kept = {}
    for arm in ("full", "mpnn_only"):
        cfg = replace(TINY, layers=2, drop_path=0.5, **ARMS[arm].model)  # the second layer drops at rate 0.5
        model = GPSPlusPlus(cfg)
        params = model.init(jax.random.key(0), model_batch, deterministic=True)["params"]
        seen = []

        def record(f, args, kwargs, context, seen=seen):
            out = f(*args, **kwargs)
            module = context.module
            if isinstance(module, DropPath) and module.name == "ffn_drop" and module.rate > 0:
                seen.append(np.asarray(out != 0).any(-1))  # a node's FFN branch survives or is zeroed
            return out

        with nn.intercept_methods(record):
            model.apply({"params": params}, model_batch, deterministic=False, rngs={"dropout": jax.random.key(3)})
        (kept[arm],) = seen
    real = batch["node_mask"]
    assert 0 < kept["full"][real].mean() < 1  # some molecules dropped, some kept
    np.testing.assert_array_equal(kept["full"][real], kept["mpnn_only"][real])


def test_every_arm_sees_the_same_packs_masks_and_noise(molecules):
    many = molecules.take(np.repeat(np.arange(len(molecules)), 20))
    index = np.arange(len(many))
    c = Config()
    steps = (0, 3, 40)  # the last one in a later epoch
    seen = {arm: [Epochs(many, index, LIMITS, arm_training(c, arm), 5).batch(k) for k in steps] for arm in ARMS}
    for arm, batches in seen.items():
        for k, batch, reference in zip(steps, batches, seen["full"], strict=True):
            for key, value in batch.items():
                if key in ("keep_spd", "keep_3d") and not ARMS[arm].masking:
                    continue  # the unmasked arms keep every feature
                np.testing.assert_array_equal(value, reference[key], err_msg=f"{arm}, step {k}, {key}")
    masked, unmasked = seen["full"][0], seen["full_unmasked"][0]
    real = masked["node_mask"]
    assert (~masked["keep_spd"][real]).any() and unmasked["keep_spd"][real].all()
    assert (masked["atoms"] != masked["atoms_clean"]).any() or (masked["bonds"] != masked["bonds_clean"]).any()
    for a, b in zip(seen["no_3d"], seen["full_unmasked"], strict=True):  # the 3D contrast: same masks too
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    other = Epochs(many, index, LIMITS, arm_training(c, "full"), 6).batch(0)
    assert not np.array_equal(other["atoms"], masked["atoms"])  # another seed, other batches


@pytest.mark.parametrize("arm", list(ARMS))
def test_each_ablation_differs_from_its_comparator_in_one_thing(arm):
    a, comparator = ARMS[arm], ARMS[arm].comparator
    if comparator is None:
        assert arm == "full"
        return
    b = ARMS[comparator]
    changes = len(a.model.keys() ^ b.model.keys()) + (a.masking != b.masking)
    assert changes == 1, (arm, comparator)

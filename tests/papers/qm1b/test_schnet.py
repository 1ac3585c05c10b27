"""SchNet: size of QM1B's preset by hand count, symmetries, neighbour selection by brute force, and learning."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from papers.qm1b.schnet import (
    PRESETS,
    SchNet,
    SchNetConfig,
    Shuffled,
    TrainConfig,
    molecules_from_rows,
    neighbour_mask,
    parameter_count,
    split_by_smiles,
    train_schnet,
)


def hand_count(c: SchNetConfig) -> int:
    dense = lambda i, o, bias=True: i * o + (o if bias else 0)
    block = (
        dense(c.gaussians, c.filters)
        + dense(c.filters, c.filters)
        + dense(c.features, c.filters, False)
        + dense(c.filters, c.features)
        + dense(c.features, c.features)
    )
    return 10 * c.features + c.interactions * block + dense(c.features, c.features // 2) + dense(c.features // 2, 1)


def test_qm1b_preset_is_the_9m_parameter_schnet():
    n = parameter_count(PRESETS["schnet_9m"])
    assert n == hand_count(PRESETS["schnet_9m"])
    assert 8.5e6 < n < 9.5e6  # "SchNet 9M" in the paper


def _molecule(seed, atoms=7):
    rng = np.random.default_rng(seed)
    z = rng.choice([1, 6, 7, 8, 9], atoms)
    pos = rng.normal(0, 2.0, (atoms, 3))
    return z, pos


def test_output_is_invariant_to_rotation_translation_permutation_and_padding():
    cfg = SchNetConfig(features=16, filters=8, interactions=2, gaussians=12, cutoff=6.0, neighbours=4)
    model = SchNet(cfg)
    z, pos = _molecule(0)
    m = molecules_from_rows([z.tolist()], [pos.reshape(-1).tolist()], [0.0], atoms=10)
    params = model.init(jax.random.key(1), m.z, m.pos, m.mask)
    out = model.apply(params, m.z, m.pos, m.mask)
    q, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(3, 3)))
    perm = np.random.default_rng(3).permutation(len(z))
    moved = pos[perm] @ q.T + np.array([1.0, -2.0, 0.5])
    m2 = molecules_from_rows([z[perm].tolist()], [moved.reshape(-1).tolist()], [0.0], atoms=12)
    out2 = model.apply(params, m2.z, m2.pos, m2.mask)
    np.testing.assert_allclose(out, out2, rtol=1e-5, atol=1e-6)


def test_neighbour_mask_equals_brute_force():
    z, pos = _molecule(4, atoms=9)
    m = molecules_from_rows([z.tolist()], [pos.reshape(-1).tolist()], [0.0], atoms=11)
    d = jnp.linalg.norm(m.pos[:, :, None] - m.pos[:, None], axis=-1)
    got = np.asarray(neighbour_mask(d, jnp.asarray(m.mask), k=3, cutoff=4.0))[0]
    want = np.zeros((11, 11), bool)
    for i in range(9):
        others = sorted((np.linalg.norm(pos[i] - pos[j]), j) for j in range(9) if j != i)
        for dist, j in others[:3]:
            want[i, j] = dist < 4.0
    np.testing.assert_array_equal(got, want)


def test_split_by_smiles_keeps_conformers_together():
    smiles = [s for s in "ABCDEFGHIJ" for _ in range(4)]
    train, valid = split_by_smiles(smiles, 0.2, seed=0)
    assert len(train) + len(valid) == 40 and len(valid) == 8
    assert not {smiles[i] for i in train} & {smiles[i] for i in valid}
    with pytest.raises(ValueError, match=r"valid_fraction=1\.5"):
        split_by_smiles(smiles, 1.5, 0)


def _geometric_data(n=400):
    # y: the mean inverse distance to the other atoms, weighted by element, an intensive geometric quantity
    rng = np.random.default_rng(0)
    zs, ps, ys = [], [], []
    for _ in range(n):
        k = rng.integers(4, 9)
        z, pos = rng.choice([1, 6, 8], k), rng.normal(0, 1.5, (k, 3))
        inv = 1 / (np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(k))
        ys.append(float(((inv - np.diag(np.diag(inv))).sum(1) * (z / 8)).mean()))
        zs.append(z.tolist())
        ps.append(pos.reshape(-1).tolist())
    return molecules_from_rows(zs, ps, ys)


@pytest.mark.slow  # ~26 s (2026-11-28); the smoke run trains SchNet in make test
def test_learns_a_geometric_target_far_below_the_mean_predictor():
    data = _geometric_data()
    train, valid = data.take(slice(0, 320)), data.take(slice(320, 400))
    cfg = SchNetConfig(features=32, filters=32, interactions=2, gaussians=25, cutoff=8.0, neighbours=28)
    tc = TrainConfig(steps=300, batch_size=32, lr=3e-3, warmup=20, eval_every=150)
    _, info = train_schnet(cfg, train, valid, tc, seeds=[0, 1])
    baseline = np.abs(valid.y - train.y.mean()).mean() * 1000
    assert info["seeds"] == [0, 1] and len(info["valid_mae"]) == 2
    for seed in range(2):
        assert info["valid_mae"][seed] < 0.35 * baseline, (info, baseline)
        assert info["curve"][-1][1][seed] < info["curve"][0][1][seed]
    assert info["valid_mae"][0] != info["valid_mae"][1]  # different initialisations and batch orders


@pytest.mark.slow  # ~37 s (2026-11-28): three trainings; make test-all
def test_seeds_trained_together_equal_each_seed_trained_alone():
    data = _geometric_data(60)
    train, valid = data.take(slice(0, 40)), data.take(slice(40, 60))
    cfg = SchNetConfig(features=16, filters=8, interactions=1, gaussians=10, cutoff=8.0, neighbours=28)
    tc = TrainConfig(steps=12, batch_size=8, lr=3e-3, warmup=2, eval_every=6)
    params, together = train_schnet(cfg, train, valid, tc, seeds=[3, 5])
    alone_params, alone = train_schnet(cfg, train, valid, tc, seeds=[5])
    np.testing.assert_allclose(together["valid_mae"][1], alone["valid_mae"][0], rtol=1e-4)
    np.testing.assert_allclose(together["train_mae"][1], alone["train_mae"][0], rtol=1e-4)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(alone_params), strict=True):
        np.testing.assert_allclose(np.asarray(a)[1], np.asarray(b)[0], rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"seeds=\[1, 1\]: give at least one seed, none repeated"):
        train_schnet(cfg, train, valid, tc, seeds=[1, 1])
    # one training set per seed (independent replicates): seed 5 on its own set, trained beside seed 3 on another,
    # equals seed 5 trained alone on it, its training MAE on its own set and its own standardisation
    other = data.take(slice(20, 60))
    replicate_params, replicates = train_schnet(cfg, [other, train], valid, tc, seeds=[3, 5])
    np.testing.assert_allclose(replicates["valid_mae"][1], alone["valid_mae"][0], rtol=1e-4)
    np.testing.assert_allclose(replicates["train_mae"][1], alone["train_mae"][0], rtol=1e-4)
    for a, b in zip(jax.tree.leaves(replicate_params), jax.tree.leaves(alone_params), strict=True):
        np.testing.assert_allclose(np.asarray(a)[1], np.asarray(b)[0], rtol=1e-4, atol=1e-6)
    _, other_alone = train_schnet(cfg, other, valid, tc, seeds=[3])
    np.testing.assert_allclose(replicates["train_mae"][0], other_alone["train_mae"][0], rtol=1e-4)
    with pytest.raises(ValueError, match=r"2 training sets of sizes \[20, 40\] for 2 seeds"):
        train_schnet(cfg, [train, data.take(slice(0, 20))], valid, tc, seeds=[3, 5])


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="interactions=0"):
        SchNetConfig(interactions=0)
    with pytest.raises(ValueError, match="cutoff=0"):
        SchNetConfig(cutoff=0)
    with pytest.raises(ValueError, match="molecule 0 has 3 atoms, more than atoms=2"):
        molecules_from_rows([[1, 1, 8]], [[0.0] * 9], [1.0], atoms=2)


def test_shuffled_batches_cover_each_epoch_once_and_replay_from_any_step():
    data = molecules_from_rows([[1, 6]] * 10, [[0.0] * 6] * 10, np.arange(10.0))
    in_order = Shuffled(data, batch=3, seed=4)
    seen = [in_order(k).y.tolist() for k in range(9)]
    for epoch in range(3):  # 3 batches of 3 per epoch: 9 distinct molecules, the 10th left for a later epoch
        ys = [y for batch in seen[3 * epoch : 3 * epoch + 3] for y in batch]
        assert len(set(ys)) == 9
    assert seen[0:3] != seen[3:6]  # a new permutation every epoch
    for k in (8, 0, 4):  # a resumed run starting at step k
        assert Shuffled(data, batch=3, seed=4)(k).y.tolist() == seen[k]

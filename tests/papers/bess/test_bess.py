"""BESS equals the single-device computation: for the same balanced batch, the embedding-moving step (and the
all-gather scheme it avoids) on n = 1, 2 and 4 (simulated) devices gives the reference's scores, loss and gradients;
sharding and sampling are balanced; the block weights make the expected step loss the plain mean over training
triples (enumerated on a tiny graph); the bytes read from the compiled programs' collectives equal the analytic count
of what BESS and the all-gather scheme move, and the entity table's memory per device halves with the mesh."""

import itertools
import json
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from papers.bess.bess import BalancedSampler, Batch, bytes_per_step, reference_loss, shard_entities
from papers.bess.kg import load_builtin
from papers.bess.losses import Loss
from papers.bess.scaling import collective_bytes

_EQUIVALENCE = """
import json
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh
from papers.bess.bess import BalancedSampler, all_gather_loss_fn, bess_loss_fn, reference_loss, shard_entities
from papers.bess.kg import load_builtin
from papers.bess.losses import Loss
from papers.bess.scoring import relation_width
kg = load_builtin("nations")
out = {}
schemes = {"bess": bess_loss_fn, "all_gather": all_gather_loss_fn}
# the scorers and losses are checked against their formulas elsewhere; here, the data movement (a distance scorer
# and a bilinear one, which scores negatives as a matmul)
cases = (("rotate", Loss("log_sigmoid", adversarial=1.0)), ("complex", Loss("softmax", num_entities=14)))
for model, objective in cases:
    for n in (1, 2, 4):
        dim = 8
        rng = np.random.default_rng(0)
        E = rng.normal(size=(kg.num_entities, dim)).astype(np.float32)
        R = rng.normal(size=(kg.num_relations, relation_width(model, dim))).astype(np.float32)
        sh = shard_entities(kg.num_entities, n, seed=1)
        batch = BalancedSampler(kg.train, sh, b=3, n_neg=5, seed=2).sample()
        mesh = Mesh(np.array(jax.devices()[:n]), ("shard",))
        ref = jax.jit(jax.value_and_grad(
            lambda e, r: reference_loss(e, r, batch, model, 6.0, objective), argnums=(0, 1), has_aux=True))
        (rloss, (rpos, rneg)), (rgE, rgR) = ref(jnp.asarray(E), jnp.asarray(R))
        def err(a, b):
            a, b = np.asarray(a), np.asarray(b)
            return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-12))
        padding = np.ones((n, sh.size), bool)
        padding[sh.shard_of, sh.row_of] = False
        for scheme, build in schemes.items():
            if scheme == "all_gather" and model != "complex":
                continue  # the other scheme's data movement once: one scorer suffices
            fn = build(mesh, model, 6.0, objective)
            (loss, (pos, neg)), (gE, gR) = jax.jit(jax.value_and_grad(fn, argnums=(0, 1), has_aux=True))(
                jnp.asarray(sh.to_shards(E)), jnp.asarray(R), batch)
            out[f"{scheme}/{model}/{n}"] = {
                "loss": err(loss, rloss), "pos": err(pos, rpos), "neg": err(neg, rneg),
                "dE": err(sh.to_global(np.asarray(gE)), rgE), "dR": err(gR, rgR),
                "pad_grad": float(np.abs(np.asarray(gE)[padding]).max(initial=0.0)),
            }
# the training step as the scaling study compiles it: bytes its collectives deliver, and the entity table's memory
from papers.bess.scaling import measure, synthetic_kg
graph = synthetic_kg(400, 5, 3000, 0)
rows = [measure(n, kg=graph, dim=8, batch=64, negatives_per_triple=8, steps=1) for n in (1, 2, 4)]
print(json.dumps({"equivalence": out, "scaling": rows}))
"""


@pytest.fixture(scope="module")
def four_devices():
    """One process with 4 simulated devices runs the equivalence checks and compiles the scaling study's steps."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    r = subprocess.run([sys.executable, "-c", _EQUIVALENCE], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_bess_and_all_gather_equal_the_single_device_reference_on_1_2_4_devices(four_devices):
    out = four_devices["equivalence"]
    assert sorted(out) == sorted(
        [f"bess/{m}/{n}" for m in ("rotate", "complex") for n in (1, 2, 4)]
        + [f"all_gather/complex/{n}" for n in (1, 2, 4)]
    )
    for key, errors in out.items():
        for name in ("loss", "pos", "neg", "dE", "dR"):
            assert errors[name] < 1e-5, (key, name, errors[name])
        assert errors["pad_grad"] == 0.0, key  # padding rows (14 entities on 4 shards of 4) get no gradient


def test_bytes_read_from_the_compiled_steps_equal_the_analytic_count(four_devices):
    # 400 entities, width 8, 64 triples and 8 negatives per triple: b = 64 / n^2, n_neg = 8 / n per block
    rows = {r["devices"]: r for r in four_devices["scaling"]}
    relations = 2 * 5 * 8 * 4  # the replicated relation table's gradient, all-reduced by both schemes
    for n, r in rows.items():
        analytic = bytes_per_step(n, 64 // n**2, 8 // n, 8, 400 // n)
        assert r["bess_all_to_all_bytes_per_step"] == analytic["bess"], n
        # the rest of BESS's traffic is the all-reduce of the relations' gradient and of the loss (a ring: 2(n-1)/n)
        assert r["bess_bytes_per_step"] - analytic["bess"] == round(2 * (n - 1) / n * (relations + 4)) * n, n
        assert (
            r["all_gather_bytes_per_step"] - r["bess_bytes_per_step"] == analytic["naive_all_gather"] - analytic["bess"]
        )
    assert rows[1]["bess_bytes_per_step"] == 0 and rows[1]["all_gather_bytes_per_step"] == 0


def test_entity_table_memory_of_the_compiled_step_falls_as_one_over_n(four_devices):
    rows = {r["devices"]: r for r in four_devices["scaling"]}
    # 400 more entities cost a device their shards and two Adam moments, in the step's arguments and its outputs
    assert rows[1]["entity_bytes_per_device"] == 6 * 400 * 8 * 4
    for n in (2, 4):
        assert rows[n]["entity_bytes_per_device"] * n == rows[1]["entity_bytes_per_device"], n
        assert rows[n]["step_bytes_per_device"] < rows[1]["step_bytes_per_device"]


def test_collective_bytes_reads_each_kind_of_collective():
    hlo = """
  %all-to-all = (f32[1,8,8]{2,1,0}, f32[1,8,8]{2,1,0}) all-to-all(%a, %b), channel_id=1, replica_groups={{0,1}}
  %all_gather.3 = f32[1000,8]{1,0} all-gather(%c), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}
  %reduce_scatter.7 = bf16[250,8]{1,0} reduce-scatter(%d), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT %all-reduce.1 = (f32[20,8]{1,0}, f32[]) all-reduce(%e, %f), channel_id=4, replica_groups={{0,1,2,3}}
  %get-tuple-element.16 = f32[1,8,8]{2,1,0} get-tuple-element(%all-to-all), index=0
"""
    got = collective_bytes(hlo, 4)
    assert got["all-to-all"] == 2 * 8 * 8 * 4 / 2  # a group of 2: half of the result comes from the other device
    assert got["all-gather"] == 1000 * 8 * 4 * 3 / 4
    assert got["reduce-scatter"] == 250 * 8 * 2 * 3
    assert got["all-reduce"] == (20 * 8 + 1) * 4 * 2 * 3 / 4
    assert got["total"] == sum(got[k] for k in ("all-to-all", "all-gather", "reduce-scatter", "all-reduce"))
    with pytest.raises(ValueError, match="unknown HLO element type 'f8e9'"):
        collective_bytes("  %x = f8e9[2]{0} all-gather(%y), replica_groups={{0,1}}", 2)


def test_shards_are_equal_random_and_complete():
    s = shard_entities(14, 4, seed=0)
    counts = np.bincount(s.shard_of, minlength=4)
    assert counts.max() - counts.min() <= 1 and s.size == 4
    assert sorted(np.concatenate([s.members(k) for k in range(4)]).tolist()) == list(range(14))
    table = np.arange(14 * 2, dtype=float).reshape(14, 2)
    np.testing.assert_array_equal(s.to_global(s.to_shards(table)), table)
    assert not np.array_equal(s.shard_of, shard_entities(14, 4, seed=1).shard_of)
    with pytest.raises(ValueError, match="n=20 exceeds the 14 entities"):
        shard_entities(14, 20, seed=0)


def test_batches_draw_equally_from_every_block():
    kg = load_builtin("kinships")
    s = shard_entities(kg.num_entities, 4, seed=0)
    batch = BalancedSampler(kg.train, s, b=5, n_neg=7, seed=0).sample()
    for i in range(4):
        for j in range(4):
            assert np.all(s.shard_of[batch.head[i, j]] == i) and np.all(s.shard_of[batch.tail[i, j]] == j)
            assert np.all(s.shard_of[batch.negative[i, j]] == j)
            np.testing.assert_array_equal(s.row_of[batch.head[i, j]], batch.head_row[i, j])
            np.testing.assert_array_equal(s.row_of[batch.negative[i, j]], batch.negative_row[i, j])
    known = {tuple(t) for t in kg.train.tolist()}
    assert all(
        (h, r, t) in known
        for h, r, t in zip(batch.head.ravel(), batch.relation.ravel(), batch.tail.ravel(), strict=True)
    )


def test_analytic_bess_moves_less_than_all_gathering_the_table():
    for n in (2, 4, 8):
        moved = bytes_per_step(n, b=16, n_neg=32, dim=64, size=-(-135 * 100 // n))
        assert moved["bess"] < moved["naive_all_gather"]
    assert bytes_per_step(1, 16, 32, 64, 135)["bess"] == 0


def test_negatives_are_drawn_per_block_uniformly_and_replayably():
    kg = load_builtin("umls")
    s = shard_entities(kg.num_entities, 4, seed=0)
    sampler = BalancedSampler(kg.train, s, b=2, n_neg=64, seed=3)
    batch = sampler.sample(7)
    # blocks (i, j) and (k, j) draw from the same shard j, but independently
    for j in range(4):
        assert not np.array_equal(batch.negative[0, j], batch.negative[1, j])
    # the batch of a step depends on (seed, step) only: a resumed run replays it
    again = BalancedSampler(kg.train, s, b=2, n_neg=64, seed=3).sample(7)
    np.testing.assert_array_equal(again.negative, batch.negative)
    np.testing.assert_array_equal(again.head, batch.head)
    assert not np.array_equal(sampler.sample(8).negative, batch.negative)
    # every member of a shard is drawn about equally often (chi-square against uniform, 99.9% quantile)
    draws = np.concatenate([sampler.sample(k).negative[:, 2].ravel() for k in range(100)])
    members = s.members(2)
    counts = np.array([(draws == e).sum() for e in members])
    assert counts.sum() == len(draws)
    expected = len(draws) / len(members)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 70, chi2  # 33 degrees of freedom: the 99.9% quantile is 63.9


def test_an_empty_block_is_named():
    triples = np.array([[0, 0, 1], [1, 0, 0]])  # 4 entities on 2 shards: some (head, tail) blocks stay empty
    s = shard_entities(4, 2, seed=0)
    with pytest.raises(ValueError, match=r"blocks have no training triple.*fewer than n=2 shards"):
        BalancedSampler(triples, s, b=1, n_neg=1, seed=0)


def test_block_weights_are_each_blocks_share_of_the_training_set():
    kg = load_builtin("nations")
    s = shard_entities(kg.num_entities, 4, seed=0)
    sampler = BalancedSampler(kg.train, s, b=3, n_neg=2, seed=0)
    sizes = np.array([[len(sampler.buckets[i][j]) for j in range(4)] for i in range(4)])
    assert sizes.max() / sizes.min() > 2  # unequal blocks: unweighted, their triples would count unequally
    np.testing.assert_allclose(sampler.block_weights, 16 * sizes / len(kg.train), rtol=1e-6)
    assert sampler.block_weights.mean() == pytest.approx(1.0)
    batch = sampler.sample(5)
    np.testing.assert_array_equal(batch.weight, np.broadcast_to(sampler.block_weights[..., None], (4, 4, 3)))


def test_expected_weighted_step_loss_is_the_single_device_mean_loss():
    """Every batch a balanced sampler can draw on a tiny graph (b = 1 triple and n_neg = 1 negative per block,
    2 shards of 2 entities: 1 * 2 * 3 * 1 triple choices times 2^4 negative choices, each equally likely), scored by
    the sharded step's single-device reference: their mean is the plain mean over training triples of the
    log-sigmoid loss with negatives uniform over all entities, computed here in numpy."""
    s = shard_entities(4, 2, seed=0)
    (a0, a1), (b0, b1) = s.members(0), s.members(1)
    triples = np.array(
        [[a0, 0, a1], [a0, 0, b0], [a1, 1, b1], [b0, 0, a0], [b1, 1, a1], [b0, 1, a1], [b1, 0, b0]]
    )  # blocks (0, 0), (0, 1), (1, 0), (1, 1) hold 1, 2, 3 and 1 triples
    sampler = BalancedSampler(triples, s, b=1, n_neg=1, seed=0)
    rng = np.random.default_rng(0)
    E, R = rng.normal(size=(4, 6)), rng.normal(size=(2, 6))
    loss = Loss("log_sigmoid")

    def expected(weights):
        values = []
        for picks in itertools.product(*[sampler.buckets[i][j] for i in range(2) for j in range(2)]):
            t = triples[list(picks)].reshape(2, 2, 1, 3)
            for negs in itertools.product(*[sampler.members[j] for _ in range(2) for j in range(2)]):
                neg = np.array(negs).reshape(2, 2, 1)
                batch = Batch(
                    s.row_of[t[..., 0]],
                    t[..., 1],
                    s.row_of[t[..., 2]],
                    s.row_of[neg],
                    t[..., 0],
                    t[..., 2],
                    neg,
                    np.broadcast_to(weights[..., None], (2, 2, 1)).astype(np.float32),
                )
                value, _ = reference_loss(jnp.asarray(E), jnp.asarray(R), batch, "distmult", 0.0, loss)
                values.append(float(value) / 4)  # the step's loss: the sum over n^2 b = 4 triples, averaged
        assert len(values) == 6 * 16
        return np.mean(values)

    def log_sigmoid(x):
        return -np.logaddexp(0.0, -x)

    scores = np.einsum("td,td,ed->te", E[triples[:, 0]], R[triples[:, 1]], E)  # every entity as each triple's tail
    positive = scores[np.arange(len(triples)), triples[:, 2]]
    single_device = np.mean(-log_sigmoid(positive) - log_sigmoid(-scores).mean(1))
    assert expected(sampler.block_weights) == pytest.approx(single_device, rel=1e-5)
    # unweighted, the one triple of block (1, 1) counts three times as much as each of block (1, 0)'s
    assert abs(expected(np.ones((2, 2))) - single_device) > 1e-3

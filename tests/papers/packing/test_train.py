"""The packed/padded training plan: every epoch packs every training sequence exactly once, the run stops at the
sequence budget, evaluations follow the sequences seen, and any step replays the batch an uninterrupted run saw
(what resuming needs; the loop's resumption is tested in tests/core/test_train.py). A packed step computes the loss
and gradients of the same sequences unpacked (why the two runs converge alike), and the timing arms count the
plans' tokens."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.packing import pack_sequences
from papers.packing.train import Corpus, Plan, batch_arrays, build_model, masked, mlm_loss_fn


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    train = [np.concatenate([[9], rng.integers(1, 8, rng.integers(3, 30))]).astype(np.int32) for _ in range(40)]
    return Corpus(train, train[:4], vocab=10, mask_id=8, cls_id=9, truncated=0.0, packing=None)


CFG = SimpleNamespace(max_len=32, max_sequences_per_pack=4, sequences=100, eval_every=30, mask_prob=0.15)


@pytest.mark.parametrize("mode", ["padded", "packed"])
def test_plan_covers_each_epoch_and_stops_at_the_budget(corpus, mode):
    plan = Plan(CFG, corpus, mode, seed=3, rows=5)
    assert plan.seen[-1] >= CFG.sequences > plan.seen[-2]
    epoch0 = sorted(i for p in plan.packs[0] for i in p)
    assert epoch0 == list(range(len(corpus.train)))  # every sequence once per epoch
    if mode == "packed":
        assert all(sum(corpus.train[i].size for i in p) <= CFG.max_len for p in plan.packs[0])
        assert max(len(p) for p in plan.packs[0]) > 1
    evals = [d for d in range(1, len(plan.steps) + 1) if plan.evaluates(d)]
    crossings = [
        d for d in range(1, len(plan.steps)) if plan.seen[d - 1] // 30 > (plan.seen[d - 2] if d > 1 else 0) // 30
    ]
    assert evals == [*crossings, len(plan.steps)]


def test_any_step_replays_its_batch(corpus):
    in_order = Plan(CFG, corpus, "packed", seed=3, rows=5)
    seen = [in_order.batch(k) for k in range(len(in_order.steps))]
    for k in (len(seen) - 1, 0, 3):
        fresh = Plan(CFG, corpus, "packed", seed=3, rows=5).batch(k)
        for key, value in seen[k].items():
            np.testing.assert_array_equal(fresh[key], value, err_msg=f"step {k}, {key}")
    assert {"ids", "sequence_ids", "positions", "labels"} == set(seen[0])


@pytest.mark.slow  # ~40 s (2026-11-28); the smoke run's no-cross-contamination fact measures the same in make test
def test_packed_and_padded_steps_see_the_same_loss_and_gradients(corpus):
    # why packed and padded training converge alike (the former claim equal-convergence, papers/packing/ledger.py):
    # a step on packs of sequences computes the same loss (a mean over sequences) and the same gradients as a step
    # on the same sequences one per row, up to float32 rounding; the runs differ only in how sequences group into
    # steps. The control: the same packs with the sequence boundaries erased (one id per row) attend across
    # sequences, and the loss moves
    cfg = SimpleNamespace(max_len=32, max_sequences_per_pack=4, model=SimpleNamespace(d_model=16, depth=1, heads=2))
    seqs = corpus.train[:12]
    inputs, labels = masked(corpus, seqs, seed=1, epoch=0, prob=0.3)
    packs, _ = pack_sequences([s.size for s in seqs], 32, 4, "spfhp", seed=0)
    assert max(len(p) for p in packs) > 1
    model = build_model(cfg, corpus)
    z = jnp.zeros((1, 32), jnp.int32)
    params = model.init(jax.random.key(0), z, z, z)

    def loss_and_grads(packing, width, erase=False):
        b = batch_arrays(inputs, labels, packing, 32, width)
        b = {k: jnp.asarray(b[k]) for k in ("ids", "sequence_ids", "positions", "labels")}
        if erase:
            b["sequence_ids"] = jnp.where(b["sequence_ids"] > 0, 1, 0)
        return jax.value_and_grad(mlm_loss_fn(model, width))(params, b)

    padded_loss, padded_grads = loss_and_grads([[i] for i in range(len(seqs))], 1)
    packed_loss, packed_grads = loss_and_grads(packs, 4)
    assert float(packed_loss) == pytest.approx(float(padded_loss), rel=1e-5)
    for a, b in zip(jax.tree.leaves(packed_grads), jax.tree.leaves(padded_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    mixed_loss, _ = loss_and_grads(packs, 4, erase=True)
    assert abs(float(mixed_loss) - float(padded_loss)) > 1e-3


def test_the_timing_arms_share_their_rows_and_count_the_plans_tokens(corpus):
    # the throughput claim's arms (papers/packing/train.py: throughput_rounds): tokens per step are the plan's
    # average, recomputed here from the sequences' lengths
    plan = Plan(CFG, corpus, "packed", seed=3, rows=5)
    per_step = [
        sum(corpus.train[i].size for p in plan.packs[e][first : first + 5] for i in p) for e, first in plan.steps
    ]
    assert plan.mean_tokens_per_step() == pytest.approx(np.mean(per_step))
    batch = plan.batch(0)
    assert int((batch["sequence_ids"] > 0).sum()) == per_step[0]

"""The packed/padded training plan: every epoch packs every training sequence exactly once, the run stops at the
sequence budget, evaluations follow the sequences seen, and any step replays the batch an uninterrupted run saw
(what resuming needs; the loop's resumption is tested in tests/core/test_train.py)."""

from types import SimpleNamespace

import numpy as np
import pytest

from papers.packing.train import Corpus, Plan


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

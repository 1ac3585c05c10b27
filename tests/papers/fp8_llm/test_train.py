"""FP8 training of the LM: amax-scaled FP8 follows FP32 step for step on the same batches, the constant scale is
calibrated once and then held, post-training FP8 inference stays close to FP32, and seeds trained together (vmapped)
equal each seed trained alone. (Resumption is the shared loop's: tests/core/test_train.py.)"""

import jax
import numpy as np
import pytest

from core.data.shakespeare import load_shakespeare
from core.nn.transformer import TransformerLM
from papers.fp8_llm.config import RunConfig, SizeConfig
from papers.fp8_llm.train import (
    build_model,
    quantised_inference,
    seed_params,
    train_arm,
    validation_windows,
)

SIZE = SizeConfig("s", 16, 1, 2)
RC = RunConfig(steps=20, batch_size=4, seq_len=16, warmup=2, eval_every=10, stats_every=5, valid_windows=8)


@pytest.fixture(scope="module")
def corpus():
    return load_shakespeare()


def _biases_by_step(result, seed_index=0):
    """{step: every layer's (x, w, g) biases} of one seed (stats hold one (step, seed, layers) entry per recorded
    step and seed)."""
    seed = result.seeds[seed_index]
    return {
        step: np.array([v[i][1] for v in layers.values() for i in range(3)])
        for step, s, layers in result.stats
        if s == seed
    }


@pytest.mark.slow  # ~57 s (2026-11-28): three policies trained; the smoke run trains every policy in make test
def test_amax_fp8_follows_fp32_and_cscale_holds_its_calibration(corpus):
    p32, r32 = train_arm(corpus, SIZE, "fp32", RC)
    _, r8 = train_arm(corpus, SIZE, "amax", RC)
    _, rc = train_arm(corpus, SIZE, "cscale", RC)
    assert r32.curve[-1][2][0] < r32.curve[0][2][0]  # it learns
    assert abs(r8.loss(0) / r32.loss(0) - 1) < 0.01
    cscale = _biases_by_step(rc)
    first = cscale[min(cscale)]
    assert len(cscale) >= 3 and all(np.array_equal(b, first) for b in cscale.values())  # held constant
    amax = _biases_by_step(r8)
    assert not all(np.array_equal(b, amax[min(amax)]) for b in amax.values())  # amax moves
    loss, stats = quantised_inference(corpus, SIZE, seed_params(p32, 0), RC)
    windows = validation_windows(corpus, RC)
    fp32 = build_model(SIZE, corpus.vocab_size, RC.seq_len, "fp32").apply(
        {"params": seed_params(p32, 0)}, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss
    )
    assert float(fp32) == pytest.approx(r32.loss(0), rel=1e-5)  # the arm's own final validation loss
    assert abs(loss / float(fp32) - 1) < 0.01
    assert set(stats) == {"block_0/attention/qkv", "block_0/attention/out", "block_0/mlp/up", "block_0/mlp/down"}
    assert r32.parameters == sum(np.asarray(x).size for x in jax.tree.leaves(seed_params(p32, 0))) > 0


@pytest.mark.slow  # ~26 s (2026-11-28): three trainings; make test-all
def test_seeds_trained_together_equal_each_seed_trained_alone(corpus):
    rc = RunConfig(steps=6, batch_size=4, seq_len=16, warmup=2, eval_every=3, stats_every=2, valid_windows=8)
    params, together = train_arm(corpus, SIZE, "cscale", rc, seeds=[0, 7])
    alone_params, alone = train_arm(corpus, SIZE, "cscale", rc, seeds=[7])
    assert together.seeds == [0, 7] and alone.seeds == [7]
    assert together.loss(7) == pytest.approx(alone.loss(7), rel=1e-5)
    assert together.loss(0) != pytest.approx(together.loss(7), rel=1e-3)  # the seeds differ
    a, b = jax.tree.leaves(seed_params(params, 1)), jax.tree.leaves(seed_params(alone_params, 0))
    assert len(a) == len(b) == 10
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-5)
    # every recorded step holds one entry per seed, labelled with the seed
    assert [s for _, s, _ in together.stats] == [0, 7] * (len(together.stats) // 2) and len(together.stats) >= 4
    # cscale's calibration is per seed too: seed 7's constant biases equal those of seed 7 alone
    assert np.array_equal(_biases_by_step(together, 1)[1], _biases_by_step(alone, 0)[1])
    with pytest.raises(ValueError, match=r"seeds=\[2, 2\]: give at least one seed, none repeated"):
        train_arm(corpus, SIZE, "fp32", rc, seeds=[2, 2])

"""FP8 training of the LM: amax-scaled FP8 follows FP32 step for step on the same batches, the constant scale is
calibrated once and then held, and post-training FP8 inference stays close to FP32. (Resumption is the shared loop's:
tests/core/test_train.py.)"""

import numpy as np
import pytest

from core.data.shakespeare import load_shakespeare
from core.nn.transformer import TransformerLM
from papers.fp8_llm.train import RunConfig, SizeConfig, build_model, quantised_inference, train_arm, validation_windows

SIZE = SizeConfig("s", 16, 1, 2)
RC = RunConfig(steps=20, batch_size=4, seq_len=16, warmup=2, eval_every=10, stats_every=5, valid_windows=8)


@pytest.fixture(scope="module")
def corpus():
    return load_shakespeare()


def test_amax_fp8_follows_fp32_and_cscale_holds_its_calibration(corpus):
    p32, r32 = train_arm(corpus, SIZE, "fp32", RC)
    _, r8 = train_arm(corpus, SIZE, "amax", RC)
    _, rc = train_arm(corpus, SIZE, "cscale", RC)
    assert r32.curve[-1][2] < r32.curve[0][2]  # it learns
    assert abs(r8.valid_loss / r32.valid_loss - 1) < 0.01
    biases = {step: np.array([v[i][1] for v in stats.values() for i in range(3)]) for step, stats in rc.stats}
    first = biases[min(biases)]
    assert all(np.array_equal(b, first) for b in biases.values())  # held constant over training
    amax_biases = {step: np.array([v[i][1] for v in stats.values() for i in range(3)]) for step, stats in r8.stats}
    assert not all(np.array_equal(b, amax_biases[min(amax_biases)]) for b in amax_biases.values())  # amax moves
    loss, stats = quantised_inference(corpus, SIZE, p32, RC)
    windows = validation_windows(corpus, RC)
    fp32 = build_model(SIZE, corpus.vocab_size, RC.seq_len, "fp32").apply(
        {"params": p32}, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss
    )
    assert abs(loss / float(fp32) - 1) < 0.01
    assert set(stats) == {"block_0/attention/qkv", "block_0/attention/out", "block_0/mlp/up", "block_0/mlp/down"}

"""FP8 training of the LM: amax-scaled FP8 follows FP32 step for step on the same batches, the constant scale is
calibrated once and then held, a killed run resumes to the uninterrupted result, and post-training FP8 inference
stays close to FP32."""

import jax
import numpy as np
import pytest

from core.data.shakespeare import load_shakespeare
from core.nn.transformer import TransformerLM
from papers.fp8_llm.train import RunConfig, Size, build_model, quantised_inference, train_arm, validation_windows

SIZE = Size(16, 1, 2)
RC = RunConfig(steps=20, batch_size=4, seq_len=16, warmup=2, eval_every=10, stats_every=5, valid_windows=8)


@pytest.fixture(scope="module")
def corpus():
    return load_shakespeare()


def test_amax_fp8_follows_fp32_and_cscale_holds_its_calibration(corpus):
    p32, r32 = train_arm(corpus, "s", SIZE, "fp32", RC)
    _, r8 = train_arm(corpus, "s", SIZE, "amax", RC)
    _, rc = train_arm(corpus, "s", SIZE, "cscale", RC)
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


def test_a_killed_run_resumes_to_the_uninterrupted_result(corpus, tmp_path):
    rc = RunConfig(**{**RC.__dict__, "steps": 8, "eval_every": 4, "checkpoint_every": 4})
    straight, _ = train_arm(corpus, "s", SIZE, "delayed", rc)
    with pytest.raises(KeyboardInterrupt):  # killed during step 5, after the checkpoint of step 4
        train_arm(corpus, "s", SIZE, "delayed", rc, checkpoint_dir=tmp_path, progress_bar=_KillAfter(5))
    resumed, result = train_arm(corpus, "s", SIZE, "delayed", rc, checkpoint_dir=tmp_path)
    assert result.resumed_from == 4
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


class _KillAfter:
    """A progress bar that interrupts the run at its n-th update, as a kill would."""

    def __init__(self, n):
        self.n = n

    def update(self, k):
        self.n -= k
        if self.n <= 0:
            raise KeyboardInterrupt

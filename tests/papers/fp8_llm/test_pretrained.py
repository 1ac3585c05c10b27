"""Post-training FP8 inference of a pretrained Llama (papers.fp8_llm.pretrained), on a tiny random Llama with
SmolLM2's tokenizer so it runs in seconds: the float32 losses equal a direct computation, the forward-only biases
equal those the FP8 layers report through their probes' gradient, and a result survives its JSON round trip."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.nn import Formats
from core.nn.fp8 import fp8_statistics, split_fp8
from core.nn.llama import Llama
from papers.fp8_llm.config import PretrainedConfig
from papers.fp8_llm.pretrained import LAYER_TYPES, held_out_windows, pretrained_fp8_inference
from papers.fp8_llm.results import PretrainedResult


@pytest.fixture(scope="module")
def tiny(tiny_llama):
    model, params, tok = tiny_llama
    return model, jax.tree.map(lambda a: a * 3.0, params), tok  # larger weights: biases away from the clip


@pytest.fixture(scope="module")
def result(tiny):
    return pretrained_fp8_inference(3, 16, ("amax", "none", "mxfp8", "mxfp4", "mxfp8_ceil"), loader=lambda: tiny)


def test_float32_losses_and_bpc_match_a_direct_computation(tiny, result):
    model, params, tok = tiny
    data, chars = held_out_windows(tok, 3, 16)
    assert data.shape == (3, 17) and chars == result.characters
    for i, w in enumerate(data):
        logp = jax.nn.log_softmax(model.apply(params, jnp.asarray(w[None, :-1]))[0], -1)
        want = -float(jnp.mean(logp[jnp.arange(16), w[1:]]))
        assert result.nats["fp32"][i] == pytest.approx(want, rel=1e-5)
    total = sum(result.nats["fp32"]) * 16
    assert result.bpc("fp32") == pytest.approx(total / math.log(2) / chars)
    assert result.perplexity("fp32") == pytest.approx(math.exp(np.mean(result.nats["fp32"])))
    for p in ("amax", "none", "mxfp8", "mxfp4", "mxfp8_ceil"):
        assert all(math.isfinite(v) for v in result.nats[p]) and result.nats[p] != result.nats["fp32"]
    # the MX variants are different casts (the MX matmul itself is tested against numpy in tests/core/numerics)
    assert len({tuple(result.nats[p]) for p in ("mxfp8", "mxfp4", "mxfp8_ceil")}) == 3


@pytest.mark.slow  # ~19 s (2026-11-28): make test-all; the test above checks the same pass's losses and BPC
def test_forward_only_biases_equal_the_probe_gradient_statistics(tiny, result):
    model, params, tok = tiny
    data, _ = held_out_windows(tok, 1, 16)
    fp8 = Llama(model.config, formats=Formats(fp8="amax"))
    _, meta, probes = split_fp8(fp8.init(jax.random.key(1), jnp.zeros((1, 4), jnp.int32)))
    x = jnp.asarray(data[:, :-1])

    def f(probes):
        return jnp.sum(fp8.apply({**params, "fp8_meta": meta, "fp8_probe": probes}, x))

    stats = fp8_statistics(jax.grad(f)(probes))
    assert len(stats) == model.config.depth * len(LAYER_TYPES)
    by_type = {t: {"x": [], "w": []} for t in LAYER_TYPES}
    for path, s in stats.items():
        by_type[path.split("/")[-1]]["x"].append(int(s[0, 1]))
        by_type[path.split("/")[-1]]["w"].append(int(s[1, 1]))
    for t in LAYER_TYPES:
        assert result.biases["amax"][t] == {k: float(np.median(v)) for k, v in by_type[t].items()}, t
    assert set(result.biases) == {"amax"} == set(result.bias_values)  # no other policy has per-tensor biases


def test_result_round_trips_and_config_checks(result):
    again = PretrainedResult.from_json(result.to_json())
    assert again.nats == result.nats and again.biases == result.biases
    with pytest.raises(ValueError, match="windows"):
        PretrainedConfig(windows=1)
    with pytest.raises(ValueError, match="amax"):
        PretrainedConfig(policies=["none"])
    PretrainedConfig(windows=0)  # off

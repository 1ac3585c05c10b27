"""A Llama-family decoder in flax: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU, tied embeddings.

    cfg = LlamaConfig(vocab=49152, d_model=576, depth=30, heads=9, kv_heads=3, ffn=1536, rope_base=1e5)
    logits = Llama(cfg).apply(params, ids)                    # [B, T] -> [B, T, vocab]

`core.nn.gguf.load_smollm2()` gives a pretrained configuration and its parameters. The call signature is
`TransformerLM`'s, so `core.nn.decoding.prefill` / `decode_step` drive it with a KV cache: `positions` [B, T] are
the tokens' positions and `attend(layer, q, k, v)` replaces the causal attention of every block, with q
[B, heads, T, head_dim] and k, v [B, kv_heads, T, head_dim] (each KV head serves heads / kv_heads query heads).

Linear layers are `core.nn.transformer.Linear`, so `formats` decides their numerics (`Formats(fp8="amax")` runs
them in simulated FP8 for post-training FP8 inference); norms, rotary embeddings and the softmax stay in float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from core.nn.formats import FP32, Formats
from core.nn.parametrization import Standard
from core.nn.transformer import Linear, rotary

STANDARD = Standard()  # the linear layers' initialisation (GPT-2's std 0.02; loaded weights replace it)


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int
    d_model: int
    depth: int
    heads: int
    kv_heads: int
    ffn: int
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    context: int = 2048  # the longest sequence the model was trained on (RoPE positions beyond it extrapolate)

    def __post_init__(self) -> None:
        if self.d_model % self.heads:
            raise ValueError(f"LlamaConfig: d_model {self.d_model} is not a multiple of heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"LlamaConfig: heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if (self.d_model // self.heads) % 2:
            raise ValueError(f"LlamaConfig: head_dim {self.d_model // self.heads} must be even for rotary embeddings")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.heads // self.kv_heads

    @property
    def n_params(self) -> int:
        hd = self.head_dim
        attn = self.d_model * (self.heads * hd) * 2 + self.d_model * (self.kv_heads * hd) * 2
        block = attn + 3 * self.d_model * self.ffn + 2 * self.d_model
        return self.vocab * self.d_model + self.depth * block + self.d_model


def grouped(q: jax.Array, kv_heads: int) -> jax.Array:
    """[..., heads, T, d] -> [..., kv_heads, group, T, d]: query heads grouped by the KV head they share."""
    *lead, h, t, d = q.shape
    return q.reshape(*lead, kv_heads, h // kv_heads, t, d)


def causal_gqa_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """softmax(q k^T / sqrt(d) + causal mask) v with grouped queries: q [..., H, T, d], k, v [..., Hkv, T, d];
    query head h reads KV head h // (H / Hkv). Scores and softmax in float32."""
    T, d = q.shape[-2], q.shape[-1]
    qg = grouped(q, k.shape[-3])
    s = jnp.einsum("...gqd,...kd->...gqk", qg, k, preferred_element_type=jnp.float32)
    mask = jnp.tril(jnp.ones((T, T), bool))
    p = jax.nn.softmax(jnp.where(mask, s / math.sqrt(d), -jnp.inf), axis=-1)
    out = jnp.einsum("...gqk,...kd->...gqd", p.astype(v.dtype), v)
    return out.reshape(q.shape)


class RMSNorm(nn.Module):
    eps: float = 1e-5

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        w = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + self.eps)
        return (y * w.astype(jnp.float32)).astype(x.dtype)


class LlamaAttention(nn.Module):
    config: LlamaConfig
    formats: Formats

    @nn.compact
    def __call__(self, x: jax.Array, positions: jax.Array, attend=None) -> jax.Array:
        c = self.config
        *lead, T, _ = x.shape
        hd = c.head_dim

        def heads(y, n):  # [..., T, n*hd] -> [..., n, T, hd]
            return jnp.moveaxis(y.reshape(*lead, T, n, hd), -2, -3)

        q = heads(Linear(c.heads * hd, STANDARD, self.formats, name="q")(x), c.heads)
        k = heads(Linear(c.kv_heads * hd, STANDARD, self.formats, name="k")(x), c.kv_heads)
        v = heads(Linear(c.kv_heads * hd, STANDARD, self.formats, name="v")(x), c.kv_heads)
        q, k = rotary(q, positions, c.rope_base), rotary(k, positions, c.rope_base)
        y = (causal_gqa_attention if attend is None else attend)(q, k, v)
        y = jnp.moveaxis(y, -3, -2).reshape(*lead, T, c.heads * hd)
        return Linear(c.d_model, STANDARD, self.formats, name="o")(y)


class SwiGLU(nn.Module):
    config: LlamaConfig
    formats: Formats

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.config
        gate = Linear(c.ffn, STANDARD, self.formats, name="gate")(x)
        up = Linear(c.ffn, STANDARD, self.formats, name="up")(x)
        return Linear(c.d_model, STANDARD, self.formats, name="down")(jax.nn.silu(gate) * up)


class LlamaBlock(nn.Module):
    config: LlamaConfig
    formats: Formats

    @nn.compact
    def __call__(self, x: jax.Array, positions: jax.Array, attend=None) -> jax.Array:
        c = self.config
        x = x + LlamaAttention(c, self.formats, name="attention")(
            RMSNorm(c.norm_eps, name="attn_norm")(x), positions, attend
        )
        return x + SwiGLU(c, self.formats, name="mlp")(RMSNorm(c.norm_eps, name="ffn_norm")(x))


class Llama(nn.Module):
    config: LlamaConfig
    formats: Formats = FP32
    dtype: jnp.dtype = jnp.float32  # activations between blocks (parameters keep the dtype they are given)

    @property
    def depth(self) -> int:
        return self.config.depth

    @property
    def seq_len(self) -> int:
        return self.config.context

    @property
    def kv_heads(self) -> int:
        return self.config.kv_heads

    @nn.compact
    def __call__(self, ids: jax.Array, positions: jax.Array | None = None, attend=None) -> jax.Array:
        """ids [..., T] -> logits [..., T, vocab] (float32). See the module docstring for `positions`/`attend`."""
        c = self.config
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(ids.shape[-1]), ids.shape)
        table = self.param("embedding", nn.initializers.normal(0.02), (c.vocab, c.d_model))
        x = jnp.take(table, ids, axis=0).astype(self.dtype)
        for i in range(c.depth):
            x = LlamaBlock(c, self.formats, name=f"block_{i}")(
                x, positions, None if attend is None else partial(attend, i)
            )
        x = RMSNorm(c.norm_eps, name="norm")(x)
        # tied LM head: the embedding table, FP32 by the head policy of core.nn.formats
        return jnp.einsum("...d,vd->...v", x, table.astype(x.dtype), preferred_element_type=jnp.float32)

    def loss(self, ids: jax.Array, labels: jax.Array, weights: jax.Array | None = None) -> jax.Array:
        """Mean next-token cross-entropy in nats (weights: per-position weights, e.g. to score a suffix only)."""
        logits = self(ids)
        ce = -jnp.take_along_axis(jax.nn.log_softmax(logits, -1), labels[..., None], -1)[..., 0]
        if weights is None:
            return jnp.mean(ce)
        return jnp.sum(ce * weights) / jnp.sum(weights)

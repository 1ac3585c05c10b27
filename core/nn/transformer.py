"""A small decoder-only transformer LM, pre-norm or post-norm, built on core.nn.ops so that the same code is the
regular model or its unit-scaled twin, in any number format. Its blocks take the attention function as an argument
(causal here; masked bidirectional in core.nn.encoder), so the encoder shares them.

    model = TransformerLM(vocab=80, d_model=128, depth=8, heads=4, seq_len=256, ops=Ops(scaling="unit"))
    params = model.init(key, ids)
    loss = model.apply(params, ids, labels, method=TransformerLM.loss)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from core.nn.ops import Ops

# (q, k, v) [..., heads, seq, head_dim] -> [..., heads, seq, head_dim]; None means the ops' causal attention
AttentionFn = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
# the same with the block's index first: (layer, q, k, v)
LayerAttentionFn = Callable[[int, jax.Array, jax.Array, jax.Array], jax.Array]


def _normal(std: float):
    return nn.initializers.normal(stddev=std)


class Linear(nn.Module):
    features: int
    ops: Ops
    use_bias: bool = False  # bias-free, as nanoGPT recommends (and unit scaling has no rule-of-thumb for biases)
    std: float | None = None  # default: ops.init_std()

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        std = self.ops.init_std() if self.std is None else self.std
        w = self.param("kernel", _normal(std), (x.shape[-1], self.features))
        b = self.param("bias", nn.initializers.zeros, (self.features,)) if self.use_bias else None
        return self.ops.linear(x, w, b)


class LayerNorm(nn.Module):
    """Layer norm with a learned scale and no bias."""

    ops: Ops

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        w = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        return self.ops.layer_norm(x, w)


class Attention(nn.Module):
    heads: int
    ops: Ops
    depth: int

    @nn.compact
    def __call__(self, x: jax.Array, attend: AttentionFn | None = None) -> jax.Array:
        *lead, seq, d_model = x.shape
        head_dim = d_model // self.heads
        qkv = Linear(3 * d_model, self.ops, name="qkv")(x)
        qkv = qkv.reshape(*lead, seq, 3, self.heads, head_dim)
        q, k, v = (jnp.moveaxis(qkv[..., i, :, :], -2, -3) for i in range(3))  # [..., heads, seq, head_dim]
        y = (self.ops.causal_attention if attend is None else attend)(q, k, v)
        y = jnp.moveaxis(y, -3, -2).reshape(*lead, seq, d_model)
        return Linear(d_model, self.ops, std=self.ops.init_std(residual_output=True, depth=self.depth), name="out")(y)


class MLP(nn.Module):
    ops: Ops
    depth: int
    ratio: int = 4

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        d = x.shape[-1]
        h = self.ops.gelu(Linear(self.ratio * d, self.ops, name="up")(x))
        return Linear(d, self.ops, std=self.ops.init_std(residual_output=True, depth=self.depth), name="down")(h)


class Block(nn.Module):
    heads: int
    ops: Ops
    depth: int
    index: int  # 0-based block index
    norm: str = "pre"

    @nn.compact
    def __call__(self, x: jax.Array, attend: AttentionFn | None = None) -> jax.Array:
        """`attend`: the attention function (default: causal)."""
        ops = self.ops
        attention = Attention(self.heads, ops, self.depth, name="attention")
        for j, (kind, branch) in enumerate(
            (
                ("attention", lambda h: attention(h, attend)),
                ("mlp", MLP(ops, self.depth, name="mlp")),
            )
        ):
            tau = ops.tau(kind, 2 * self.index + j + 1)
            inp, skip = ops.residual_split(x, tau)
            if self.norm == "pre":
                x = ops.residual_add(branch(LayerNorm(ops, name=f"norm_{kind}")(inp)), skip, tau)
            else:
                x = LayerNorm(ops, name=f"norm_{kind}")(ops.residual_add(branch(inp), skip, tau))
        return x


class TransformerLM(nn.Module):
    vocab: int
    d_model: int
    depth: int
    heads: int
    seq_len: int
    ops: Ops
    norm: str = "pre"

    def setup(self) -> None:
        if self.norm not in ("pre", "post"):
            raise ValueError(f"TransformerLM: norm must be 'pre' or 'post', got {self.norm!r}")
        if self.d_model % self.heads:
            raise ValueError(f"TransformerLM: d_model {self.d_model} is not divisible by heads {self.heads}")
        std = self.ops.init_std()
        self.token_embedding = self.param(
            "token_embedding", _normal(std if self.ops.unit else 0.02), (self.vocab, self.d_model)
        )
        self.position_embedding = self.param(
            "position_embedding", _normal(std if self.ops.unit else 0.02), (self.seq_len, self.d_model)
        )
        self.blocks = [
            Block(self.heads, self.ops, self.depth, i, self.norm, name=f"block_{i}") for i in range(self.depth)
        ]
        self.final_norm = LayerNorm(self.ops, name="final_norm") if self.norm == "pre" else None
        self.head = Linear(self.vocab, self.ops, use_bias=False, name="head")

    def __call__(
        self, ids: jax.Array, positions: jax.Array | None = None, attend: LayerAttentionFn | None = None
    ) -> jax.Array:
        """Logits [..., seq, vocab] for token ids [..., seq].

        For decoding with a KV cache (core.nn.decoding): `positions` [..., seq] are the tokens' positions (default
        0..seq-1) and `attend(layer, q, k, v)` replaces the causal attention of every block, so a cache can supply
        the keys and values of earlier tokens.
        """
        seq = ids.shape[-1]
        if seq > self.seq_len:
            raise ValueError(f"TransformerLM: sequence of {seq} tokens exceeds seq_len {self.seq_len}")
        tok = self.ops.embedding(ids, self.token_embedding)
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(seq), ids.shape)
        # one lookup per token (not one per position), so the embedding's gradient scale counts every use
        pos = self.ops.embedding(positions, self.position_embedding)
        x = self.ops.q(tok + pos) if not self.ops.unit else self.ops.q((tok + pos) * 2**-0.5)
        for i, block in enumerate(self.blocks):
            x = block(x, None if attend is None else partial(attend, i))
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.head(x)

    def loss(self, ids: jax.Array, labels: jax.Array) -> jax.Array:
        """Mean next-token cross-entropy (nats) of `labels` given `ids`."""
        return self.ops.cross_entropy(self(ids), labels)

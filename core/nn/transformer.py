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


POSITIONS = ("learned", "rope")


def rotary(x: jax.Array, positions: jax.Array, base: float = 10000.0) -> jax.Array:
    """Rotary position embedding (Su et al. 2021) in the rotate-half layout of GPT-NeoX and Llama.

    x [..., heads, seq, head_dim] (head_dim even), positions [..., seq]: channel pair (i, i + head_dim/2) of the
    token at position p is rotated by the angle p * base^(-2i/head_dim). A rotation, so norms are kept, and the dot
    product of a rotated query and key depends on their positions only through their difference.
    """
    half = x.shape[-1] // 2
    if 2 * half != x.shape[-1]:
        raise ValueError(f"rotary: head_dim must be even, got {x.shape[-1]}")
    freq = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angle = positions[..., None, :, None].astype(jnp.float32) * freq  # [..., 1, seq, half]
    cos, sin = jnp.cos(angle).astype(x.dtype), jnp.sin(angle).astype(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class Linear(nn.Module):
    """A linear layer. With `ops.fp8` set its matmul runs in simulated FP8 with per-tensor scale biases
    (core.numerics.fp8.fp8_dot): the layer keeps its scaling state in the "fp8_meta" collection and a zero probe in
    "fp8_probe", whose gradient carries the amaxes and biases of the step (core.nn.fp8); at inference, applying with
    `mutable=["intermediates"]` collects the amaxes of x and w ("fp8_amax") without a backward pass. `head=True`
    marks the LM head, which follows `ops.head_precision` (by default FP32: out of ops.fp8 and of every cast)."""

    features: int
    ops: Ops
    use_bias: bool = False  # bias-free, as nanoGPT recommends (and unit scaling has no rule-of-thumb for biases)
    std: float | None = None  # default: ops.weight_std of a hidden (or, with head, output) weight
    head: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        ops = self.ops.head_ops if self.head else self.ops
        std = ops.weight_std("output" if self.head else "hidden", x.shape[-1]) if self.std is None else self.std
        w = self.param("kernel", _normal(std), (x.shape[-1], self.features))
        b = self.param("bias", nn.initializers.zeros, (self.features,)) if self.use_bias else None
        if ops.fp8 is None:
            return ops.readout(x, w) if self.head and b is None else ops.linear(x, w, b)
        from core.numerics.fp8 import FP8Meta, empty_probe, fp8_dot

        meta = self.variable("fp8_meta", "state", FP8Meta.init, self.ops.fp8_history)
        probe = self.variable("fp8_probe", "probe", empty_probe)
        # forward-only statistics for inference (apply(..., mutable=["intermediates"])); a no-op otherwise
        self.sow("intermediates", "fp8_amax", jnp.stack([jnp.max(jnp.abs(x)), jnp.max(jnp.abs(w))]))
        y = fp8_dot(x, w, meta.value.bias, probe.value, policy=ops.fp8)
        return y if b is None else y + b


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
    def __call__(
        self, x: jax.Array, attend: AttentionFn | None = None, rope_positions: jax.Array | None = None
    ) -> jax.Array:
        """`rope_positions` [..., seq]: rotate queries and keys by these positions (None: no rotary embedding)."""
        *lead, seq, d_model = x.shape
        head_dim = d_model // self.heads
        qkv = Linear(3 * d_model, self.ops, name="qkv")(x)
        qkv = qkv.reshape(*lead, seq, 3, self.heads, head_dim)
        q, k, v = (jnp.moveaxis(qkv[..., i, :, :], -2, -3) for i in range(3))  # [..., heads, seq, head_dim]
        if rope_positions is not None:
            q, k = rotary(q, rope_positions), rotary(k, rope_positions)
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
    def __call__(
        self, x: jax.Array, attend: AttentionFn | None = None, rope_positions: jax.Array | None = None
    ) -> jax.Array:
        """`attend`: the attention function (default: causal); `rope_positions`: see Attention."""
        ops = self.ops
        attention = Attention(self.heads, ops, self.depth, name="attention")
        for j, (kind, branch) in enumerate(
            (
                ("attention", lambda h: attention(h, attend, rope_positions)),
                ("mlp", MLP(ops, self.depth, name="mlp")),
            )
        ):
            tau = ops.tau(kind, 2 * self.index + j + 1, 2 * self.depth)
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
    position: str = "learned"  # "learned": a learned absolute embedding added to the tokens; "rope": rotary

    def setup(self) -> None:
        if self.norm not in ("pre", "post"):
            raise ValueError(f"TransformerLM: norm must be 'pre' or 'post', got {self.norm!r}")
        if self.position not in POSITIONS:
            raise ValueError(f"TransformerLM: position must be one of {POSITIONS}, got {self.position!r}")
        if self.d_model % self.heads:
            raise ValueError(f"TransformerLM: d_model {self.d_model} is not divisible by heads {self.heads}")
        std = self.ops.weight_std("input", self.d_model)
        self.token_embedding = self.param("token_embedding", _normal(std), (self.vocab, self.d_model))
        if self.position == "learned":
            self.position_embedding = self.param("position_embedding", _normal(std), (self.seq_len, self.d_model))
        self.blocks = [
            Block(self.heads, self.ops, self.depth, i, self.norm, name=f"block_{i}") for i in range(self.depth)
        ]
        self.final_norm = LayerNorm(self.ops, name="final_norm") if self.norm == "pre" else None
        # the LM head follows ops.head_precision: its logits feed the loss directly
        self.head = Linear(self.vocab, self.ops, use_bias=False, head=True, name="head")

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
        if self.position == "learned":
            # one lookup per token (not one per position), so the embedding's gradient scale counts every use
            pos = self.ops.embedding(positions, self.position_embedding)
            x = self.ops.q((tok + pos) * 2**-0.5) if self.ops.unit_scaled else self.ops.q(tok + pos)
            rope_positions = None
        else:
            x, rope_positions = self.ops.q(tok), positions
        for i, block in enumerate(self.blocks):
            x = block(x, None if attend is None else partial(attend, i), rope_positions)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.head(x)

    def param_kinds(self, params) -> dict:
        """For every parameter of `params` (this model's, as init returns them) the pair (kind, depth) that
        core.unit_scaling.umup.lr_scales reads: its kind (input, hidden, output or norm) and, for the parameters
        of the blocks, the number of blocks."""

        def kind(path, leaf) -> tuple[str, int | None]:
            names = [getattr(p, "key", str(p)) for p in path]
            depth = self.depth if any(n.startswith("block_") for n in names) else None
            if names[-1] in ("token_embedding", "position_embedding"):
                return ("input", None)
            if "head" in names:
                return ("output", None)
            if names[-1] == "scale":
                return ("norm", depth)
            if names[-1] == "bias":
                return ("bias", depth)
            if names[-1] == "kernel":
                return ("hidden", depth)
            raise ValueError(f"TransformerLM.param_kinds: no kind for parameter {'/'.join(names)}")

        return jax.tree_util.tree_map_with_path(kind, params)

    def loss(self, ids: jax.Array, labels: jax.Array) -> jax.Array:
        """Mean next-token cross-entropy (nats) of `labels` given `ids`."""
        return self.ops.cross_entropy(self(ids), labels)

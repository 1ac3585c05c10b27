"""A small decoder-only transformer LM, pre-norm or post-norm, whose parametrization (core.nn.parametrization:
standard, unit-scaled, muP, u-muP) and number formats (core.nn.formats) are arguments, so the same code is the regular
model, its unit-scaled twin or the u-muP model, in any number format. Its blocks take the attention function as an
argument (causal here; masked bidirectional in core.nn.encoder), so the encoder shares them.

    model = TransformerLM(vocab=80, d_model=128, depth=8, heads=4, seq_len=256, parametrization=UnitScaled())
    params = model.init(key, ids)
    loss = model.apply(params, ids, labels, method=TransformerLM.loss)

Every parameter is created with its kind (input, hidden, output, norm, bias) and the depth of the residual stack it
sits in; `param_kinds(model, variables, ids)` reads them back for per-tensor learning rates
(core.nn.parametrization.lr_scales).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from core.nn.formats import FP32, Formats
from core.nn.parametrization import Parametrization, Standard

# (q, k, v) [..., heads, seq, head_dim] -> [..., heads, seq, head_dim]; None: the parametrization's causal attention
AttentionFn = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
# the same with the block's index first: (layer, q, k, v)
LayerAttentionFn = Callable[[int, jax.Array, jax.Array, jax.Array], jax.Array]

POSITIONS = ("learned", "rope")
KINDS_COLLECTION = "param_kinds"  # where apply(..., mutable=[KINDS_COLLECTION]) leaves every parameter's kind


def tagged_param(module: nn.Module, name: str, kind: str, depth: int | None, init, shape) -> jax.Array:
    """`module.param(name, init, shape)`, recording (kind, depth) for param_kinds: when an apply asks for the
    KINDS_COLLECTION (never at init, so init's variables are only the parameters)."""
    value = module.param(name, init, shape)
    if module.is_mutable_collection(KINDS_COLLECTION) and not module.is_initializing():
        module.put_variable(KINDS_COLLECTION, name, (kind, depth))
    return value


def param_kinds(model: nn.Module, variables: Any, *args, **kwargs) -> Any:
    """(kind, depth) for every parameter of `variables` (a tree like variables["params"]), as the model's modules
    tagged them where they created them; `args` are any inputs the model accepts (e.g. a dummy batch of ids)."""
    _, state = model.apply(variables, *args, mutable=[KINDS_COLLECTION], **kwargs)
    return state[KINDS_COLLECTION]


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
    """x @ w (+ b), cast by `formats`. With `formats.fp8` set its matmul runs in simulated FP8 with per-tensor scale
    biases (core.numerics.fp8.fp8_dot): the layer keeps its scaling state in the "fp8_meta" collection and a zero probe
    in "fp8_probe", whose gradient carries the amaxes and biases of the step (core.nn.fp8); at inference, applying
    with `mutable=["intermediates"]` collects the amaxes of x and w ("fp8_amax") without a backward pass. `head=True`
    marks the LM head: the parametrization's readout, cast by `formats.for_head` (by default FP32)."""

    features: int
    parametrization: Parametrization
    formats: Formats = FP32
    use_bias: bool = False  # bias-free, as nanoGPT recommends (and unit scaling has no rule-of-thumb for biases)
    head: bool = False
    depth: int | None = None  # the residual stack's blocks, for a layer inside one
    residual_out: bool = False  # a block's output projection
    std: float | None = None  # the init std, instead of the parametrization's

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        p = self.parametrization
        f = self.formats.for_head if self.head else self.formats
        kind = "output" if self.head else "hidden"
        shape = (x.shape[-1], self.features)
        std = (
            p.init_std(kind, shape, depth=self.depth, residual_out=self.residual_out) if self.std is None else self.std
        )
        w = tagged_param(self, "kernel", kind, self.depth, nn.initializers.normal(std), shape)
        b = (
            tagged_param(self, "bias", "bias", self.depth, nn.initializers.zeros, (self.features,))
            if self.use_bias
            else None
        )
        if f.fp8 is not None:
            from core.numerics.fp8 import FP8Formats, FP8Meta, empty_probe, fp8_dot
            from core.numerics.stats import max_abs

            meta = self.variable("fp8_meta", "state", FP8Meta.init, f.fp8_history)
            probe = self.variable("fp8_probe", "probe", empty_probe)
            # forward-only statistics for inference (apply(..., mutable=["intermediates"])); a no-op otherwise
            self.sow("intermediates", "fp8_amax", jnp.stack([max_abs(x), max_abs(w)]))
            formats = FP8Formats.of(*f.fp8_formats) if f.fp8_formats is not None else None
            y = fp8_dot(x, w, meta.value.bias, probe.value, policy=f.fp8, formats=formats)
            return y if b is None else y + b
        x, w = f.operand(x), f.operand(w)
        if not (self.head and b is None):
            return f.product(p.linear(x, w, b))
        y = f.product(p.readout(x, w))
        multiplier = p.readout_multiplier(shape[0])
        return y if multiplier == 1.0 else y * multiplier


class LayerNorm(nn.Module):
    """Layer norm with a learned scale and no bias."""

    parametrization: Parametrization
    formats: Formats = FP32
    depth: int | None = None

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        f = self.formats
        w = tagged_param(self, "scale", "norm", self.depth, nn.initializers.ones, (x.shape[-1],))
        return f.boundary(self.parametrization.layer_norm(x, f.boundary(w)))


class Attention(nn.Module):
    heads: int
    parametrization: Parametrization
    formats: Formats
    depth: int

    @nn.compact
    def __call__(
        self, x: jax.Array, attend: AttentionFn | None = None, rope_positions: jax.Array | None = None
    ) -> jax.Array:
        """`rope_positions` [..., seq]: rotate queries and keys by these positions (None: no rotary embedding)."""
        p, f = self.parametrization, self.formats
        *lead, seq, d_model = x.shape
        head_dim = d_model // self.heads
        qkv = Linear(3 * d_model, p, f, depth=self.depth, name="qkv")(x)
        qkv = qkv.reshape(*lead, seq, 3, self.heads, head_dim)
        q, k, v = (jnp.moveaxis(qkv[..., i, :, :], -2, -3) for i in range(3))  # [..., heads, seq, head_dim]
        if rope_positions is not None:
            q, k = rotary(q, rope_positions), rotary(k, rope_positions)
        y = p.causal_attention(q, k, v, f.for_attention) if attend is None else attend(q, k, v)
        y = jnp.moveaxis(y, -3, -2).reshape(*lead, seq, d_model)
        return Linear(d_model, p, f, depth=self.depth, residual_out=True, name="out")(y)


class MLP(nn.Module):
    parametrization: Parametrization
    formats: Formats
    depth: int
    ratio: int = 4

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        p, f = self.parametrization, self.formats
        h = Linear(self.ratio * x.shape[-1], p, f, depth=self.depth, name="up")(x)
        h = f.boundary(p.gelu(h))
        return Linear(x.shape[-1], p, f, depth=self.depth, residual_out=True, name="down")(h)


class Block(nn.Module):
    """Two residual branches, attention then MLP. With a plain residual stream (standard, muP) a pre-norm block is
    nanoGPT's `x = x + attention(norm(x)); x = x + mlp(norm(x))`; a unit-scaled stream splits x into the branch's
    input and the skip with the branch's weight tau and adds them back unit-scaled (core.unit_scaling)."""

    heads: int
    parametrization: Parametrization
    formats: Formats
    depth: int
    index: int  # 0-based block index
    norm: str = "pre"

    @nn.compact
    def __call__(
        self, x: jax.Array, attend: AttentionFn | None = None, rope_positions: jax.Array | None = None
    ) -> jax.Array:
        """`attend`: the attention function (default: causal); `rope_positions`: see Attention."""
        p, f, depth = self.parametrization, self.formats, self.depth
        attention = Attention(self.heads, p, f, depth, name="attention")
        mlp = MLP(p, f, depth, name="mlp")
        norm_attention = LayerNorm(p, f, depth, name="norm_attention")
        norm_mlp = LayerNorm(p, f, depth, name="norm_mlp")

        tau = p.tau("attention", 2 * self.index + 1, 2 * depth)
        h, skip = p.residual_split(x, tau)
        if self.norm == "pre":
            x = f.boundary(p.residual_add(attention(norm_attention(h), attend, rope_positions), skip, tau))
        else:
            x = norm_attention(f.boundary(p.residual_add(attention(h, attend, rope_positions), skip, tau)))

        tau = p.tau("mlp", 2 * self.index + 2, 2 * depth)
        h, skip = p.residual_split(x, tau)
        if self.norm == "pre":
            x = f.boundary(p.residual_add(mlp(norm_mlp(h)), skip, tau))
        else:
            x = norm_mlp(f.boundary(p.residual_add(mlp(h), skip, tau)))
        return x


class TransformerLM(nn.Module):
    vocab: int
    d_model: int
    depth: int
    heads: int
    seq_len: int
    parametrization: Parametrization = Standard()
    formats: Formats = FP32
    norm: str = "pre"
    position: str = "learned"  # "learned": a learned absolute embedding added to the tokens; "rope": rotary

    def setup(self) -> None:
        if self.norm not in ("pre", "post"):
            raise ValueError(f"TransformerLM: norm must be 'pre' or 'post', got {self.norm!r}")
        if self.position not in POSITIONS:
            raise ValueError(f"TransformerLM: position must be one of {POSITIONS}, got {self.position!r}")
        if self.d_model % self.heads:
            raise ValueError(f"TransformerLM: d_model {self.d_model} is not divisible by heads {self.heads}")
        check_fp8(self.parametrization, self.formats)
        p, f = self.parametrization, self.formats
        table = (self.vocab, self.d_model)
        init = nn.initializers.normal(p.init_std("input", table))
        self.token_embedding = tagged_param(self, "token_embedding", "input", None, init, table)
        if self.position == "learned":
            shape = (self.seq_len, self.d_model)
            self.position_embedding = tagged_param(self, "position_embedding", "input", None, init, shape)
        self.blocks = [Block(self.heads, p, f, self.depth, i, self.norm, name=f"block_{i}") for i in range(self.depth)]
        self.final_norm = LayerNorm(p, f, name="final_norm") if self.norm == "pre" else None
        # the LM head follows formats.head: its logits feed the loss directly
        self.head = Linear(self.vocab, p, f, head=True, name="head")

    def __call__(
        self, ids: jax.Array, positions: jax.Array | None = None, attend: LayerAttentionFn | None = None
    ) -> jax.Array:
        """Logits [..., seq, vocab] for token ids [..., seq].

        For decoding with a KV cache (core.nn.decoding): `positions` [..., seq] are the tokens' positions (default
        0..seq-1) and `attend(layer, q, k, v)` replaces the causal attention of every block, so a cache can supply
        the keys and values of earlier tokens.
        """
        p, f = self.parametrization, self.formats
        seq = ids.shape[-1]
        if seq > self.seq_len:
            raise ValueError(f"TransformerLM: sequence of {seq} tokens exceeds seq_len {self.seq_len}")
        x = f.boundary(p.embedding(ids, f.boundary(self.token_embedding)))
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(seq), ids.shape)
        if self.position == "learned":
            # one lookup per token (not one per position), so the embedding's gradient scale counts every use
            pos = f.boundary(p.embedding(positions, f.boundary(self.position_embedding)))
            x, rope_positions = f.boundary(p.combine(x, pos)), None
        else:
            x, rope_positions = f.boundary(x), positions
        for i, block in enumerate(self.blocks):
            x = block(x, None if attend is None else partial(attend, i), rope_positions)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.head(x)

    def loss(self, ids: jax.Array, labels: jax.Array) -> jax.Array:
        """Mean next-token cross-entropy (nats) of `labels` given `ids`; the logits are cast where the head is."""
        logits = self.formats.for_head.boundary(self(ids))
        return self.parametrization.cross_entropy(logits, labels)


def check_fp8(parametrization: Parametrization, formats: Formats) -> None:
    """FP8 linear layers (formats.fp8) scale their own tensors: they combine with the standard parametrization only."""
    if formats.fp8 is not None and not isinstance(parametrization, Standard):
        raise ValueError(
            f"formats.fp8={formats.fp8!r} combines with the standard parametrization only, got "
            f"{type(parametrization).__name__}"
        )

"""What every parametrization states, and the plain ops the standard one uses.

A parametrization gives each parameter three factors by its kind (the u-muP paper's abc framing, `ABC`): A, a
multiplier applied to the weight in the forward pass; B, the std of its N(0, B^2) initialisation; C, its Adam
learning rate relative to the global one. Kinds: "input" (embedding tables), "hidden" (linear layers inside the
network), "output" (the readout, or LM head), "norm" (layer-norm gains, initialised to 1 whatever B says) and
"bias" (initialised to 0). Each parametrization module states its table in its docstring and in its `abc`.

Besides the table, a parametrization owns the ops whose form it changes (unit scaling scales every op; muP changes
the attention temperature and the readout; u-muP both). The ops here are the plain ones; the model casts their
inputs and outputs (core.nn.formats), and the attention, which casts inside, receives the formats to use.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from core import unit_scaling as us
from core.nn.formats import Formats

KINDS = ("input", "hidden", "output", "norm", "bias")


class ABC(NamedTuple):
    multiplier: float  # A
    init_std: float  # B
    lr_scale: float  # C


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown parameter kind {kind!r}: choose one of {', '.join(KINDS)}")
    return kind


def causal_mask(seq: int) -> jax.Array:
    return jnp.tril(jnp.ones((seq, seq), bool))


def masked_softmax(scores: jax.Array, mask: jax.Array, axis: int = -1) -> jax.Array:
    """softmax over the entries where `mask` is True, zero elsewhere.

    Masked scores become the dtype's most negative value rather than -inf, and the probabilities are zeroed where
    the mask is False afterwards, so a row with nothing allowed gives zeros with finite gradients (never NaN)."""
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    return jnp.where(mask, jax.nn.softmax(scores, axis=axis), 0.0)


class Parametrization:
    """The interface, with the plain ops. Subclasses are frozen dataclasses (hashable: flax module fields)."""

    name = "plain"
    unit_scaled = False  # whether the residual stream is unit-scaled (embedding, layer norm, residual add)

    # ------------------------------------------------------------------ the abc table
    def abc(self, kind: str, shape: tuple[int, ...], *, depth: int | None = None, residual_out: bool = False) -> ABC:
        """(A, B, C) of a parameter of `kind` and `shape` (a linear kernel is [fan_in, fan_out], an embedding
        table [vocab, d_model]); `depth`: the number of blocks of the residual stack it sits in (None: outside);
        `residual_out`: a block's output projection (GPT-2 initialises those smaller)."""
        raise NotImplementedError

    def init_std(self, kind: str, shape: tuple[int, ...], **where) -> float:
        return self.abc(check_kind(kind), shape, **where).init_std

    def lr_scale(self, kind: str, shape: tuple[int, ...], *, depth: int | None = None) -> float:
        return self.abc(check_kind(kind), shape, depth=depth).lr_scale

    # ------------------------------------------------------------------ the ops
    def linear(self, x: jax.Array, w: jax.Array, b: jax.Array | None = None) -> jax.Array:
        return jnp.matmul(x, w) + (0 if b is None else b)

    def readout(self, x: jax.Array, w: jax.Array) -> jax.Array:
        """The LM head's x @ w, before its cast; `readout_multiplier` scales it after the cast."""
        return self.linear(x, w)

    def readout_multiplier(self, fan_in: int) -> float:
        return 1.0

    def gelu(self, x: jax.Array) -> jax.Array:
        return jax.nn.gelu(x, approximate=False)

    def embedding(self, ids: jax.Array, table: jax.Array) -> jax.Array:
        return jnp.take(table, ids, axis=0)

    def combine(self, token: jax.Array, position: jax.Array) -> jax.Array:
        """The token and learned position embeddings joined into the residual stream."""
        return token + position

    def layer_norm(self, x: jax.Array, weight: jax.Array, bias: jax.Array | None = None) -> jax.Array:
        y = us.layer_norm(x) * weight  # without affine parameters the unit and plain layer norms coincide
        return y if bias is None else y + bias

    def tau(self, kind: str, layer: int, branches: int) -> float | None:
        """The weight of residual branch `layer` (1-based of `branches`; kind 'attention' or 'mlp') in a
        unit-scaled residual stream; None where the stream is a plain sum."""
        return None

    def residual_split(self, x: jax.Array, tau: float | None) -> tuple[jax.Array, jax.Array]:
        return x, x

    def residual_add(self, branch: jax.Array, skip: jax.Array, tau: float | None) -> jax.Array:
        return branch + skip

    def attention_logits(self, qk: jax.Array, d: int) -> jax.Array:
        """The causal attention's logits from q.k (head dimension d): the temperature, 1/sqrt(d) here (muP's
        overrides it)."""
        return qk / math.sqrt(d)

    def attention_mix(self, probs: jax.Array, v: jax.Array, f: Formats) -> jax.Array:
        """probs @ v for probabilities [..., Sq, Sk] and values [..., Sk, d], cast by `f` (unit scaling overrides it
        with its detour through scaled probabilities)."""
        return f.product(jnp.einsum("...qk,...kd->...qd", f.operand(probs), v))

    def causal_attention(self, q: jax.Array, k: jax.Array, v: jax.Array, f: Formats) -> jax.Array:
        """softmax(attention_logits(q k^T) + causal mask) v for q, k, v [..., S, d], cast by `f`: the one causal
        attention of the parametrizations, which differ only in its two hooks."""
        seq, d = q.shape[-2], q.shape[-1]
        q, k, v = f.operand(q), f.operand(k), f.operand(v)
        scores = f.product(self.attention_logits(jnp.einsum("...qd,...kd->...qk", q, k), d))
        probs = jax.nn.softmax(scores, axis=-1, where=causal_mask(seq))
        return self.attention_mix(probs, v, f)

    def masked_attention(self, q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array, f: Formats) -> jax.Array:
        """softmax(q k^T / sqrt(d), over the keys where `mask` is True) v for q [..., Sq, d], k, v [..., Sk, d] and
        a boolean mask broadcastable to [..., Sq, Sk]. A query row with no key allowed yields zeros, with finite
        gradients (masked_softmax)."""
        q, k, v = f.operand(q), f.operand(k), f.operand(v)
        # times the reciprocal, not divided as attention_logits does: the encoders' numbers were recorded so
        scores = f.product(jnp.einsum("...qd,...kd->...qk", q, k) * (1.0 / math.sqrt(q.shape[-1])))
        return self.attention_mix(masked_softmax(scores, mask), v, f)

    def cross_entropy(self, logits: jax.Array, labels: jax.Array) -> jax.Array:
        """Mean next-token cross-entropy in nats."""
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

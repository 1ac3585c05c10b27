"""A BERT-style bidirectional transformer encoder over packed rows, after "Efficient Sequence Packing without
Cross-contamination" (Krell et al. 2021).

A row of the batch ("pack") holds several sequences one after another, then padding. Three int32 arrays [B, T] say
what is where: `ids` (tokens), `sequence_ids` (0 for padding, 1, 2, ... for the sequences of the row) and
`positions` (each token's position within its own sequence, from 0 for every sequence). Packing must change nothing
a sequence computes, so

- attention is block-diagonal: token i attends to key j iff sequence_ids[i] == sequence_ids[j] != 0 (a padding
  token attends only to itself, so its row is finite and nothing real ever reads it);
- position embeddings are looked up at `positions`, not at the index in the row;
- the MLM loss is the mean over real sequences of each sequence's mean cross-entropy over its own targets, never a
  mean over the tokens or rows of the batch, so that a sequence weighs the same packed or alone.

    model = TransformerEncoder(vocab=80, d_model=128, depth=4, heads=4, max_len=256)
    params = model.init(key, ids, sequence_ids, positions)
    loss, per_sequence, count = model.apply(params, ids, sequence_ids, positions, labels, max_sequences=8,
                                            method=TransformerEncoder.mlm_loss)

Blocks, layer norms, MLPs, parametrization and number formats are TransformerLM's (core.nn.transformer); only the
attention function (the parametrization's masked_attention with the mask below) and the embeddings differ.
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from core.nn.formats import FP32, Formats
from core.nn.parametrization import Parametrization, Standard
from core.nn.transformer import Block, LayerNorm, Linear, tagged_param


def attention_mask(sequence_ids: jax.Array) -> jax.Array:
    """Boolean [..., T, T] mask (True: query i may attend key j) for sequence ids [..., T]: block-diagonal over the
    sequences of a row; padding keys (id 0) are never attended, except by the padding query itself (its diagonal),
    so that every row of the softmax has a key and stays finite."""
    same = sequence_ids[..., :, None] == sequence_ids[..., None, :]
    diagonal = jnp.eye(sequence_ids.shape[-1], dtype=bool)
    return same & ((sequence_ids[..., None, :] != 0) | diagonal)


class TransformerEncoder(nn.Module):
    vocab: int
    d_model: int
    depth: int
    heads: int
    max_len: int
    parametrization: Parametrization = Standard()
    formats: Formats = FP32
    norm: str = "pre"

    def setup(self) -> None:
        if self.norm not in ("pre", "post"):
            raise ValueError(f"TransformerEncoder: norm must be 'pre' or 'post', got {self.norm!r}")
        if self.d_model % self.heads:
            raise ValueError(f"TransformerEncoder: d_model {self.d_model} is not divisible by heads {self.heads}")
        p, f = self.parametrization, self.formats
        init = nn.initializers.normal(stddev=p.init_std("input", (self.vocab, self.d_model)))
        self.token_embedding = tagged_param(self, "token_embedding", "input", None, init, (self.vocab, self.d_model))
        shape = (self.max_len, self.d_model)
        self.position_embedding = tagged_param(self, "position_embedding", "input", None, init, shape)
        self.blocks = [Block(self.heads, p, f, self.depth, i, self.norm, name=f"block_{i}") for i in range(self.depth)]
        self.final_norm = LayerNorm(p, f, name="final_norm") if self.norm == "pre" else None
        self.mlm_head = Linear(self.vocab, p, f, name="mlm_head")

    def _check_inputs(self, ids: jax.Array, sequence_ids: jax.Array, positions: jax.Array) -> None:
        if ids.ndim != 2:
            raise ValueError(f"TransformerEncoder: ids must be [batch, tokens], got shape {tuple(ids.shape)}")
        for name, x in (("sequence_ids", sequence_ids), ("positions", positions)):
            if x.shape != ids.shape:
                raise ValueError(f"TransformerEncoder: {name} has shape {tuple(x.shape)}, ids has {tuple(ids.shape)}")
        for name, x in (("ids", ids), ("sequence_ids", sequence_ids), ("positions", positions)):
            if not jnp.issubdtype(x.dtype, jnp.integer):
                raise ValueError(f"TransformerEncoder: {name} must be integers, got dtype {x.dtype}")
        if ids.shape[-1] > self.max_len:
            raise ValueError(f"TransformerEncoder: rows of {ids.shape[-1]} tokens exceed max_len {self.max_len}")

    def __call__(self, ids: jax.Array, sequence_ids: jax.Array, positions: jax.Array) -> jax.Array:
        """Hidden states [B, T, d_model] (after the final norm in the pre-norm model) of packed rows [B, T].

        Shapes and T <= max_len are checked; values are not (they may be traced): positions must lie in
        [0, max_len) and ids in [0, vocab), or the embedding lookups fill with NaN."""
        self._check_inputs(ids, sequence_ids, positions)
        p, f = self.parametrization, self.formats
        tok = f.boundary(p.embedding(ids, f.boundary(self.token_embedding)))
        pos = f.boundary(p.embedding(positions, f.boundary(self.position_embedding)))
        x = f.boundary(p.combine(tok, pos))
        mask = attention_mask(sequence_ids)[:, None]  # over heads
        attend = partial(p.masked_attention, mask=mask, f=f.for_attention)
        for block in self.blocks:
            x = block(x, attend)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if self.is_initializing():
            self.mlm_head(x)  # so that init creates the head's parameters too
        return x

    def mlm_logits(self, hidden: jax.Array) -> jax.Array:
        """Masked-LM logits [B, T, vocab] from hidden states [B, T, d_model] (a bias-free linear head)."""
        return self.mlm_head(hidden)

    def mlm_loss(
        self,
        ids: jax.Array,
        sequence_ids: jax.Array,
        positions: jax.Array,
        labels: jax.Array,
        max_sequences: int,
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Masked-LM loss of packed rows: (loss, per_sequence_loss [B, S], per_sequence_count [B, S]), S =
        `max_sequences` (static), column s for sequence id s + 1.

        labels [B, T]: the target token id, or -1 where the token is not a target. With l_t the cross-entropy
        (nats) of target t and n_s the number of targets of sequence s,

            per_sequence_loss_s = sum_{t in s} l_t / n_s            (0 where n_s = 0)
            loss = mean over {s : n_s > 0} of per_sequence_loss_s   (over sequences, not tokens or rows)

        Targets on padding (sequence id 0) or on sequence ids above `max_sequences` count for nothing.
        """
        if labels.shape != ids.shape:
            raise ValueError(f"TransformerEncoder: labels has shape {tuple(labels.shape)}, ids has {tuple(ids.shape)}")
        if not isinstance(max_sequences, int) or max_sequences < 1:
            raise ValueError(f"TransformerEncoder: max_sequences must be a positive int, got {max_sequences!r}")
        logits = self.formats.boundary(self.mlm_logits(self(ids, sequence_ids, positions)))
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        target = labels >= 0
        nll = -jnp.take_along_axis(logp, jnp.where(target, labels, 0)[..., None], axis=-1)[..., 0]
        member = jax.nn.one_hot(sequence_ids - 1, max_sequences, dtype=jnp.float32)  # id 0 -> all zeros
        total = jnp.einsum("bt,bts->bs", jnp.where(target, nll, 0.0), member)
        count = jnp.einsum("bt,bts->bs", target.astype(jnp.float32), member)
        per_sequence = total / jnp.maximum(count, 1.0)
        present = count > 0
        loss = jnp.sum(jnp.where(present, per_sequence, 0.0)) / jnp.maximum(jnp.sum(present), 1)
        return loss, per_sequence, count.astype(jnp.int32)

    def pooled(self, hidden: jax.Array, cls_positions: jax.Array) -> jax.Array:
        """The hidden state of each sequence's first ([CLS]) token, [B, S, d_model], for cls_positions [B, S] (its
        index in the row, -1 where row b has no sequence s: zeros there). No parameters: a task head adds its own
        pooler or classifier on top."""
        if cls_positions.ndim != 2 or cls_positions.shape[0] != hidden.shape[0]:
            raise ValueError(
                f"TransformerEncoder.pooled: cls_positions must be [batch, max_sequences] with batch "
                f"{hidden.shape[0]}, got shape {tuple(cls_positions.shape)}"
            )
        picked = jnp.take_along_axis(hidden, jnp.maximum(cls_positions, 0)[..., None], axis=1)
        return jnp.where(cls_positions[..., None] >= 0, picked, 0.0)

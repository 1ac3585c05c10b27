"""Losses of knowledge-graph embedding training from the scores of positive triples and of sampled negatives.

Each loss maps positive scores s+ [..., b] and negative scores s- [..., b, K] (K negatives per triple) to a weighted
sum over triples, sum_t w_t l_t (w_t = 1 unless given), so that BESS can psum the per-device sums into exactly the
single-device loss, and weight each triple by its block's share of the training set (papers.bess.bess).

    log-sigmoid       l = -log sigma(s+) - sum_k u_k log sigma(-s-_k)
                      u_k = 1/K, or self-adversarial: u = softmax(alpha s-), treated as a constant   (REFERENCES.md, R1)
    margin ranking    l = mean_k max(0, margin - s+ + s-_k)                                        (Bordes et al. 2013)
    sampled softmax   l = -log softmax([s+, s-_1 + c, ..., s-_K + c])_0,  c = log(N - 1) - log(K):
                      each of the K uniform negatives stands for (N - 1)/K of the N - 1 wrong entities, so the
                      corrected logits estimate the full softmax over all N entities (REFERENCES.md, P2)

With the log-sigmoid loss a distance scorer's margin gamma (score = gamma - distance) sets where sigma turns; the
softmax is shift-invariant, so under it gamma has no effect at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from papers.bess.config import LOSSES


@dataclass(frozen=True)
class Loss:
    """A loss and its constants: `adversarial` is the self-adversarial temperature alpha (0: uniform weights),
    `margin` the ranking margin, `num_entities` N for the softmax correction."""

    name: str = "log_sigmoid"
    adversarial: float = 0.0
    margin: float = 1.0
    num_entities: int = 0

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise ValueError(f"unknown loss {self.name!r}; choose from {', '.join(LOSSES)}")
        if self.adversarial < 0:
            raise ValueError(f"the self-adversarial temperature {self.adversarial} must be >= 0")
        if self.name == "softmax" and self.num_entities < 2:
            raise ValueError(f"the sampled softmax needs the entity count N >= 2, got {self.num_entities}")

    def per_triple(self, positive, negative):
        """l_t for every triple: [..., b]."""
        if self.name == "log_sigmoid":
            return log_sigmoid_terms(positive, negative, self.adversarial)
        if self.name == "margin":
            return margin_ranking_terms(positive, negative, self.margin)
        return sampled_softmax_terms(positive, negative, self.num_entities)

    def __call__(self, positive, negative, weights=None):
        """sum_t w_t l_t; `weights` broadcasts against the positive scores [..., b] (None: every w_t = 1)."""
        terms = self.per_triple(positive, negative)
        return jnp.sum(terms if weights is None else weights * terms)


def log_sigmoid_terms(positive, negative, adversarial: float = 0.0):
    if adversarial > 0:
        weights = jax.lax.stop_gradient(jax.nn.softmax(adversarial * negative, -1))
    else:
        weights = 1.0 / negative.shape[-1]
    return -jax.nn.log_sigmoid(positive) - jnp.sum(weights * jax.nn.log_sigmoid(-negative), -1)


def margin_ranking_terms(positive, negative, margin: float = 1.0):
    return jnp.mean(jax.nn.relu(margin - positive[..., None] + negative), -1)


def softmax_correction(num_entities: int, num_negatives: int) -> float:
    """log(N - 1) - log(K): the log of how many wrong entities each uniform negative stands for."""
    return math.log(num_entities - 1) - math.log(num_negatives)


def sampled_softmax_terms(positive, negative, num_entities: int):
    logits = jnp.concatenate([positive[..., None], negative + softmax_correction(num_entities, negative.shape[-1])], -1)
    return -jax.nn.log_softmax(logits, -1)[..., 0]


def log_sigmoid_loss(positive, negative, adversarial: float = 0.0):
    return jnp.sum(log_sigmoid_terms(positive, negative, adversarial))


def margin_ranking_loss(positive, negative, margin: float = 1.0):
    return jnp.sum(margin_ranking_terms(positive, negative, margin))


def sampled_softmax_loss(positive, negative, num_entities: int):
    return jnp.sum(sampled_softmax_terms(positive, negative, num_entities))

"""Losses of knowledge-graph embedding training from the scores of positive triples and of sampled negatives.

Each loss maps positive scores s+ [..., b] and negative scores s- [..., b, K] (K negatives per triple) to a sum
over triples, so that BESS can psum the per-device sums into exactly the single-device loss.

    log-sigmoid       -log sigma(s+) - sum_k w_k log sigma(-s-_k)
                      w_k = 1/K, or self-adversarial: w = softmax(alpha s-), treated as a constant  (Sun et al. 2019)
    margin ranking    mean_k max(0, margin - s+ + s-_k)                                           (Bordes et al. 2013)
    sampled softmax   -log softmax([s+, s-_1 + c, ..., s-_K + c])_0,  c = log(N - 1) - log(K):
                      each of the K uniform negatives stands for (N - 1)/K of the N - 1 wrong entities, so the
                      corrected logits estimate the full softmax over all N entities (BESS, Cattaneo et al. 2022)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

LOSSES = ("log_sigmoid", "margin", "softmax")


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

    def __call__(self, positive, negative):
        if self.name == "log_sigmoid":
            return log_sigmoid_loss(positive, negative, self.adversarial)
        if self.name == "margin":
            return margin_ranking_loss(positive, negative, self.margin)
        return sampled_softmax_loss(positive, negative, self.num_entities)


def log_sigmoid_loss(positive, negative, adversarial: float = 0.0):
    if adversarial > 0:
        weights = jax.lax.stop_gradient(jax.nn.softmax(adversarial * negative, -1))
    else:
        weights = 1.0 / negative.shape[-1]
    return -jnp.sum(jax.nn.log_sigmoid(positive)) - jnp.sum(weights * jax.nn.log_sigmoid(-negative))


def margin_ranking_loss(positive, negative, margin: float = 1.0):
    return jnp.sum(jnp.mean(jax.nn.relu(margin - positive[..., None] + negative), -1))


def softmax_correction(num_entities: int, num_negatives: int) -> float:
    """log(N - 1) - log(K): the log of how many wrong entities each uniform negative stands for."""
    return math.log(num_entities - 1) - math.log(num_negatives)


def sampled_softmax_loss(positive, negative, num_entities: int):
    logits = jnp.concatenate([positive[..., None], negative + softmax_correction(num_entities, negative.shape[-1])], -1)
    return -jnp.sum(jax.nn.log_softmax(logits, -1)[..., 0])

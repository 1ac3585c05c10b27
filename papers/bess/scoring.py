"""Scoring functions of knowledge-graph embedding models.

Every scorer maps head, relation and tail embeddings (broadcasting over leading axes) to a score, higher = more
plausible. Complex-valued models store a d-dimensional complex vector as 2d reals, real parts first.

    TransE    gamma - ||h + r - t||_1                                  (Bordes et al. 2013)
    DistMult  sum_k h_k r_k t_k                                       (Yang et al. 2015)
    ComplEx   Re(sum_k h_k r_k conj(t_k))                              (Trouillon et al. 2016)
    RotatE    gamma - sum_k |h_k e^{i theta_k} - t_k|,  r = theta     (Sun et al. 2019; r holds d phases)

Ranks and their metrics (filtered ranks with ties averaged, MRR and hits@k, the random-ranker floors) are
papers.bess.ranking: numpy only, so that the claims are declared and decided without JAX.
"""

from __future__ import annotations

import jax.numpy as jnp

from papers.bess.config import MODELS


def relation_width(model: str, dim: int) -> int:
    """Width of a relation embedding for entity embeddings of width `dim` (RotatE: one phase per complex entry)."""
    check_model(model)
    if model in ("complex", "rotate") and dim % 2:
        raise ValueError(f"{model} stores complex embeddings as [real | imag]: dim={dim} must be even")
    return dim // 2 if model == "rotate" else dim


def check_model(model: str) -> str:
    if model not in MODELS:
        raise ValueError(f"unknown scoring function {model!r}; choose from {', '.join(MODELS)}")
    return model


def _halves(x):
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


def score(model: str, h, r, t, gamma: float = 12.0):
    """Scores of triples (broadcast over leading axes)."""
    check_model(model)
    if model == "transe":
        return gamma - jnp.sum(jnp.abs(h + r - t), -1)
    if model == "distmult":
        return jnp.sum(h * r * t, -1)
    hr, hi = _halves(h)
    tr, ti = _halves(t)
    if model == "complex":
        rr, ri = _halves(r)
        # Re((hr + i hi)(rr + i ri)(tr - i ti))
        return jnp.sum((hr * rr - hi * ri) * tr + (hr * ri + hi * rr) * ti, -1)
    c, s = jnp.cos(r), jnp.sin(r)  # rotate
    dr, di = hr * c - hi * s - tr, hr * s + hi * c - ti
    return gamma - jnp.sum(jnp.sqrt(dr * dr + di * di + 1e-12), -1)


def score_candidates(model: str, h, r, candidates, gamma: float = 12.0):
    """Scores [..., K] of queries (h, r, ?) -- h [..., d], r [..., d_r] -- against a pool of candidate tails
    [K, d]: equal to score(model, h[..., None, :], r[..., None, :], candidates), but bilinear models take it as
    one matmul instead of materialising the [..., K, d] products."""
    check_model(model)
    if model == "distmult":
        return (h * r) @ candidates.T
    if model == "complex":
        hr, hi = _halves(h)
        rr, ri = _halves(r)
        # Re((h r) conj(t)) = Re(h r) . t_re + Im(h r) . t_im
        return jnp.concatenate([hr * rr - hi * ri, hr * ri + hi * rr], -1) @ candidates.T
    return score(model, h[..., None, :], r[..., None, :], candidates, gamma)

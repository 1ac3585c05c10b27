"""Scoring functions of knowledge-graph embedding models and the filtered ranking metrics.

Every scorer maps head, relation and tail embeddings (broadcasting over leading axes) to a score, higher = more
plausible. Complex-valued models store a d-dimensional complex vector as 2d reals, real parts first.

    TransE    gamma - ||h + r - t||_1                                  (Bordes et al. 2013)
    DistMult  sum_k h_k r_k t_k                                       (Yang et al. 2015)
    ComplEx   Re(sum_k h_k r_k conj(t_k))                              (Trouillon et al. 2016)
    RotatE    gamma - sum_k |h_k e^{i theta_k} - t_k|,  r = theta     (Sun et al. 2019; r holds d phases)

Ranks (BESS, OGB): for a test triple (h, r, t) every entity e is scored as the tail; entities e != t that make a
known true triple (h, r, e) in any split are filtered out; the rank is the mean of the optimistic rank
1 + #{e: s_e > s_t} and the pessimistic rank 1 + #{e != t: s_e >= s_t}, so ties cost half their count. Heads are
ranked the same way, and MRR and hits@k average over both directions. A uniformly random ranking scores, in
expectation, H_C / C on a query that keeps C candidates after filtering (`random_filtered_mrr`); H_N / N
(`random_floor`) is the unfiltered figure.
"""

from __future__ import annotations

from collections import defaultdict

import jax.numpy as jnp
import numpy as np

MODELS = ("transe", "distmult", "complex", "rotate")


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


def known_answers(triples: np.ndarray) -> tuple[dict, dict]:
    """{(h, r): tails} and {(r, t): heads} of every known triple, for filtering."""
    tails, heads = defaultdict(set), defaultdict(set)
    for h, r, t in np.asarray(triples).tolist():
        tails[(h, r)].add(t)
        heads[(r, t)].add(h)
    return tails, heads


def filtered_ranks(scores: np.ndarray, answers: np.ndarray, known: list[set]) -> np.ndarray:
    """Ranks of `answers` [B] among `scores` [B, N] with the other `known` true answers of each row filtered out;
    ties count as the mean of the optimistic and pessimistic rank."""
    scores = np.asarray(scores, np.float64)
    B = len(scores)
    true = scores[np.arange(B), answers]
    keep = np.ones_like(scores, bool)
    for i, k in enumerate(known):
        others = [e for e in k if e != answers[i]]
        keep[i, others] = False
    keep[np.arange(B), answers] = False
    greater = ((scores > true[:, None]) & keep).sum(1)
    equal = ((scores == true[:, None]) & keep).sum(1)
    return 1.0 + greater + equal / 2.0


def ranking_metrics(ranks: np.ndarray, ks=(1, 3, 10)) -> dict[str, float]:
    ranks = np.asarray(ranks, np.float64)
    return {"mrr": float(np.mean(1.0 / ranks)), **{f"hits@{k}": float(np.mean(ranks <= k)) for k in ks}}


def random_floor(num_entities: int) -> float:
    """Expected reciprocal rank of a uniformly random ranking of N candidates: H_N / N (unfiltered)."""
    return float(np.sum(1.0 / np.arange(1, num_entities + 1)) / num_entities)


def candidate_counts(answers: np.ndarray, known: list[set], num_entities: int) -> np.ndarray:
    """How many candidates each query keeps after filtering: the true answer and every entity that is not another
    known answer, C = N - |known minus {answer}|."""
    answers = np.asarray(answers)
    if len(answers) != len(known):
        raise ValueError(f"{len(answers)} answers but {len(known)} sets of known answers")
    others = np.array([len(k - {int(a)}) for a, k in zip(answers.tolist(), known, strict=True)], np.int64)
    return num_entities - others


def random_filtered_mrr(answers: np.ndarray, known: list[set], num_entities: int) -> float:
    """The exact expected filtered MRR of a uniformly random ranker on these queries: with C candidates left, the
    true answer's rank is uniform on 1..C, so E[1/rank] = H_C / C; averaged over the queries (for a split, its tail
    queries and head queries, as the evaluation asks them)."""
    counts = candidate_counts(answers, known, num_entities)
    harmonic = np.cumsum(1.0 / np.arange(1, num_entities + 1))
    return float(np.mean(harmonic[counts - 1] / counts))

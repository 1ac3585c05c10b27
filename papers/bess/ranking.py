"""Filtered ranks and their metrics, and the expected MRR of a random ranking: numpy only, so that the claims are
declared (the random floor of a built-in graph) and decided without JAX. The scorers are papers.bess.scoring.

Ranks (BESS, OGB): for a test triple (h, r, t) every entity e is scored as the tail; entities e != t that make a
known true triple (h, r, e) in any split are filtered out; the rank is the mean of the optimistic rank
1 + #{e: s_e > s_t} and the pessimistic rank 1 + #{e != t: s_e >= s_t}, so ties cost half their count. Heads are
ranked the same way (asked as the tails of the reciprocal relation, papers.bess.train), and MRR and hits@k average
over both directions. A uniformly random ranking scores, in expectation, H_C / C on a query that keeps C candidates
after filtering (`random_filtered_mrr`); H_N / N (`random_floor`) is the unfiltered figure.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


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


def query_answers(triples: np.ndarray, known) -> tuple[np.ndarray, list[set]]:
    """The true answer and the known answers (for filtering) of each tail query, then each head query."""
    tails, heads = known
    answers = np.concatenate([triples[:, 2], triples[:, 0]])
    sets = [tails[(h, r)] for h, r, _ in triples.tolist()] + [heads[(r, t)] for _, r, t in triples.tolist()]
    return answers, sets


def rank_scores(scores: np.ndarray, triples: np.ndarray, known) -> np.ndarray:
    answers, sets = query_answers(triples, known)
    return filtered_ranks(scores, answers, sets)

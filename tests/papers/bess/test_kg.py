"""Knowledge graphs and their metrics: the vendored datasets have the published sizes, bad input is named, the
scorers equal their textbook formulas (numpy complex arithmetic), filtered ranks equal a brute-force count, and the
expected filtered MRR of a random ranker equals an enumeration of every ranking and a Monte-Carlo estimate."""

import itertools

import numpy as np
import pytest

from papers.bess.kg import KGError, load_builtin, load_triples
from papers.bess.ranking import (
    candidate_counts,
    filtered_ranks,
    known_answers,
    query_answers,
    random_filtered_mrr,
    random_floor,
    ranking_metrics,
)
from papers.bess.scoring import relation_width, score

SIZES = {  # papers/bess/REFERENCES.md, D1-D3: entities, relations, train / valid / test
    "nations": (14, 55, 1592, 199, 201),
    "kinships": (104, 25, 8544, 1068, 1074),
    "umls": (135, 46, 5216, 652, 661),
}


@pytest.mark.parametrize("name", list(SIZES))
def test_builtin_datasets_have_the_published_sizes(name):
    d = load_builtin(name)
    assert (d.num_entities, d.num_relations, len(d.train), len(d.valid), len(d.test)) == SIZES[name]
    assert d.all_triples().max(0)[0] < d.num_entities and d.all_triples().min() >= 0


def test_unfiltered_random_floor_is_h_n_over_n():
    # papers/bess/REFERENCES.md, F1: Nations 0.232, Kinship 0.050, UMLS 0.041
    for n, floor in ((14, 0.232), (104, 0.050), (135, 0.041)):
        assert random_floor(n) == pytest.approx(floor, abs=5e-4)
    ranks = np.stack([np.random.default_rng(s).permutation(14) + 1 for s in range(20000)])[:, 0]
    assert ranking_metrics(ranks)["mrr"] == pytest.approx(random_floor(14), rel=0.02)


def test_random_filtered_mrr_equals_every_ranking_enumerated():
    # a tiny graph: 5 entities, so every ordering of a query's scores (5! = 120) can be ranked by the evaluation's
    # own filtered_ranks; the mean reciprocal rank over all of them is the exact expectation
    rng = np.random.default_rng(3)
    n = 5
    triples = np.unique(np.stack([rng.integers(0, n, 40), rng.integers(0, 2, 40), rng.integers(0, n, 40)], 1), axis=0)
    queries = triples[rng.choice(len(triples), 6, replace=False)]
    answers, sets = query_answers(queries, known_answers(triples))
    counts = candidate_counts(answers, sets, n)
    assert counts.min() < n, counts  # some queries lose candidates to filtering, or the test shows nothing
    orderings = np.array(list(itertools.permutations(range(n))), float)  # [120, N]: every distinct score vector
    expected = np.mean(
        [
            np.mean(1.0 / filtered_ranks(orderings, np.full(len(orderings), a), [k] * len(orderings)))
            for a, k in zip(answers, sets, strict=True)
        ]
    )
    assert random_filtered_mrr(answers, sets, n) == pytest.approx(expected, rel=1e-12)
    assert random_filtered_mrr(answers, sets, n) > random_floor(n)  # filtering only removes competitors


def test_random_filtered_mrr_on_nations_matches_random_scores():
    kg = load_builtin("nations")
    answers, sets = query_answers(kg.test, known_answers(kg.all_triples()))
    exact = random_filtered_mrr(answers, sets, kg.num_entities)
    rng = np.random.default_rng(0)
    draws = np.array(
        [
            ranking_metrics(filtered_ranks(rng.random((len(answers), kg.num_entities)), answers, sets))["mrr"]
            for _ in range(400)
        ]
    )
    # the Monte-Carlo mean within 4 standard errors; and far above the unfiltered H_N/N (0.232)
    assert abs(draws.mean() - exact) < 4 * draws.std(ddof=1) / np.sqrt(len(draws)), (draws.mean(), exact)
    assert 0.36 < exact < 0.40
    with pytest.raises(ValueError, match="3 answers but 2 sets"):
        random_filtered_mrr(np.array([0, 1, 2]), [set(), set()], 14)


def _write(path, rows):
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


def test_user_triples_by_name_and_by_id(tmp_path):
    tr = _write(tmp_path / "train.tsv", [("a", "likes", "b"), ("b", "likes", "c"), ("c", "hates", "a")])
    va = _write(tmp_path / "valid.tsv", [("a", "hates", "c")])
    te = _write(tmp_path / "test.tsv", [("b", "hates", "a")])
    d = load_triples(tr, va, te)
    assert d.entities == ["a", "b", "c"] and d.relations == ["hates", "likes"]
    np.testing.assert_array_equal(d.train[0], [0, 1, 1])
    bad = _write(tmp_path / "bad.tsv", [("a", "likes", "zebra")])
    with pytest.raises(KGError, match="names 'zebra', which is not an entity or relation of the training split"):
        load_triples(tr, va, bad)
    empty = _write(tmp_path / "empty.tsv", [])
    with pytest.raises(KGError, match=r"the valid split .* has no triples"):
        load_triples(tr, empty, te)
    i_tr = _write(tmp_path / "i_tr.tsv", [(0, 0, 1), (2, 1, 0)])
    i_va = _write(tmp_path / "i_va.tsv", [(1, 0, 2)])
    d = load_triples(i_tr, i_va, i_va, ids=True)
    assert d.num_entities == 3 and d.num_relations == 2
    with pytest.raises(KGError, match="not an integer"):
        load_triples(tr, i_va, i_va, ids=True)
    with pytest.raises(KGError, match="unknown dataset 'fb15k'"):
        load_builtin("fb15k")
    malformed = tmp_path / "m.tsv"
    malformed.write_text("a\tlikes\n")
    with pytest.raises(KGError, match="expected 3 tab-separated fields"):
        load_triples(malformed, va, te)


def test_scorers_equal_their_textbook_formulas():
    rng = np.random.default_rng(0)
    d = 6
    h, t, r = rng.normal(size=(3, 5, 2 * d))
    np.testing.assert_allclose(score("transe", h, r, t, gamma=2.0), 2.0 - np.abs(h + r - t).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(score("distmult", h, r, t), (h * r * t).sum(-1), rtol=1e-5)
    hc, rc, tc = (x[:, :d] + 1j * x[:, d:] for x in (h, r, t))
    np.testing.assert_allclose(score("complex", h, r, t), np.real((hc * rc * np.conj(tc)).sum(-1)), rtol=1e-5)
    theta = rng.uniform(-np.pi, np.pi, size=(5, relation_width("rotate", 2 * d)))
    rotated = hc * np.exp(1j * theta) - tc
    np.testing.assert_allclose(score("rotate", h, theta, t, gamma=3.0), 3.0 - np.abs(rotated).sum(-1), rtol=1e-5)
    with pytest.raises(ValueError, match="dim=5 must be even"):
        relation_width("complex", 5)
    with pytest.raises(ValueError, match="unknown scoring function 'boxe2'"):
        score("boxe2", h, r, t)


def test_filtered_ranks_equal_a_brute_force_count():
    rng = np.random.default_rng(1)
    n = 12
    triples = np.stack([rng.integers(0, n, 60), rng.integers(0, 3, 60), rng.integers(0, n, 60)], 1)
    tails, _ = known_answers(triples)
    queries = triples[:20]
    scores = rng.integers(0, 4, size=(20, n)).astype(float)  # many ties
    ranks = filtered_ranks(scores, queries[:, 2], [tails[(h, r)] for h, r, _ in queries.tolist()])
    for i, (h, r, t) in enumerate(queries.tolist()):
        candidates = [e for e in range(n) if e == t or e not in tails[(h, r)]]
        above = sum(scores[i, e] > scores[i, t] for e in candidates)
        tied = sum(scores[i, e] == scores[i, t] for e in candidates if e != t)
        assert ranks[i] == pytest.approx(((1 + above) + (1 + above + tied)) / 2)
    m = ranking_metrics(np.array([1, 2, 4, 10, 11.5]))
    assert m["mrr"] == pytest.approx(np.mean([1, 1 / 2, 1 / 4, 1 / 10, 1 / 11.5]))
    assert (m["hits@1"], m["hits@3"], m["hits@10"]) == (0.2, 0.4, 0.8)


@pytest.mark.parametrize("model", ["transe", "distmult", "complex", "rotate"])
def test_candidate_scores_equal_scoring_every_candidate(model):
    from papers.bess.scoring import score_candidates

    rng = np.random.default_rng(0)
    d = 6
    h, t = rng.normal(size=(4, 3, d)), rng.normal(size=(9, d))
    r = rng.normal(size=(4, 3, relation_width(model, d)))
    expected = np.asarray(score(model, h[..., None, :], r[..., None, :], t, 5.0))
    np.testing.assert_allclose(np.asarray(score_candidates(model, h, r, t, 5.0)), expected, rtol=1e-5, atol=1e-5)

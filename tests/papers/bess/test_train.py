"""Training and evaluation: candidate scores (both directions, heads through the reciprocal relation) equal the
scorer applied one candidate at a time; training on Nations lifts the filtered MRR far above a random ranking's;
training returns the parameters of its best validation MRR, and a killed run resumes to exactly the best and final
parameters of an uninterrupted one; RotatE starts from its paper's initialisation; the ensemble averages
log-probabilities with members chosen on the validation split (its claim is decided in test_claims.py)."""

import shutil
from dataclasses import replace

import jax
import numpy as np
import pytest

from papers.bess.kg import load_builtin
from papers.bess.ranking import known_answers, query_answers, random_filtered_mrr, rank_scores, ranking_metrics
from papers.bess.scoring import score
from papers.bess.train import (
    KGEConfig,
    candidate_scores,
    ensemble_scores,
    evaluate,
    init_tables,
    rotate_init_range,
    select_ensemble,
    train_kge,
    with_reciprocals,
)


@pytest.fixture(scope="module")
def nations():
    return load_builtin("nations")


def test_candidate_scores_ask_heads_through_the_reciprocal_relation(nations):
    cfg = KGEConfig(model="rotate", dim=8, devices=1)
    E, R = init_tables(cfg, nations.num_entities, nations.num_relations)
    triples = nations.test[:5]
    got = candidate_scores(E, R, cfg, triples)
    for q, (h, r, t) in enumerate(triples):
        tails = [float(score("rotate", E[h], R[r], E[e], cfg.gamma)) for e in range(nations.num_entities)]
        heads = [
            float(score("rotate", E[t], R[r + nations.num_relations], E[e], cfg.gamma))
            for e in range(nations.num_entities)
        ]
        # scores are gamma (12) minus a distance of the same size: float32 rounding is absolute, about 1e-6
        np.testing.assert_allclose(got[q], tails, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[len(triples) + q], heads, rtol=1e-5, atol=1e-5)
    rec = with_reciprocals(triples, nations.num_relations)
    np.testing.assert_array_equal(rec[5:], triples[:, ::-1] + [0, nations.num_relations, 0])


def test_training_lifts_mrr_far_above_a_random_ranking(nations):
    cfg = KGEConfig(model="distmult", dim=32, steps=150, batch=256, negatives=16, devices=1, eval_every=30)
    before = evaluate(nations, *init_tables(cfg, nations.num_entities, nations.num_relations), cfg)["mrr"]
    E, R, info = train_kge(nations, cfg)
    after = evaluate(nations, E, R, cfg)["mrr"]
    # a random ranking scores about 0.38 filtered on Nations (untrained embeddings about as much); the literature's
    # DistMult 0.713
    floor = random_filtered_mrr(*query_answers(nations.test, known_answers(nations.all_triples())), 14)
    assert after > max(before + 0.25, 1.5 * floor), (before, after, floor)
    assert info["curve"][-1][0] == 150 and info["curve"][-1][1] < info["curve"][0][1] * 1.01
    # the returned parameters are those of the best validation MRR of the run's evaluations
    valid = [m for _, _, m in info["curve"]]
    assert [k for k, _, _ in info["curve"]] == [30, 60, 90, 120, 150]
    assert info["best_valid_mrr"] == max(valid) and info["best_step"] == 30 * (1 + int(np.argmax(valid)))
    assert evaluate(nations, E, R, cfg, "valid")["mrr"] == info["best_valid_mrr"]


class _Killed(Exception):
    pass


class _KillAfter:
    """A progress bar that kills the run after `steps` steps, as a crash would."""

    def __init__(self, steps: int):
        self.left = steps

    def update(self, k: int = 1) -> None:
        self.left -= k
        if self.left < 0:
            raise _Killed

    def set_postfix(self, *args, **kwargs) -> None:
        pass


def test_a_killed_run_resumes_to_the_uninterrupted_best_and_final_parameters(nations, tmp_path):
    cfg = KGEConfig(
        model="complex", dim=8, steps=60, batch=64, negatives=8, devices=1, eval_every=10, checkpoint_every=20
    )
    E, R, info = train_kge(nations, cfg, checkpoint_dir=tmp_path / "whole", resume=False)
    with pytest.raises(_Killed):  # killed in step 46: checkpoints at 20 and 40, the best so far saved when found
        train_kge(nations, cfg, checkpoint_dir=tmp_path / "killed", resume=False, progress_bar=_KillAfter(45))
    # a run of 40 steps resumed from there trains no further: its best parameters come from the saved ones alone
    shutil.copytree(tmp_path / "killed", tmp_path / "forty")
    _, _, forty = train_kge(nations, replace(cfg, steps=40), checkpoint_dir=tmp_path / "forty", resume=True)
    before = [(m, k) for k, _, m in info["curve"] if k <= 40]
    assert forty["resumed_from"] == 40 and forty["best_valid_mrr"] == max(before)[0]
    assert forty["best_step"] == min(k for m, k in before if m == max(before)[0])
    rE, rR, rinfo = train_kge(nations, cfg, checkpoint_dir=tmp_path / "killed", resume=True)
    assert rinfo["resumed_from"] == 40
    assert (rinfo["best_step"], rinfo["best_valid_mrr"]) == (info["best_step"], info["best_valid_mrr"])
    np.testing.assert_array_equal(rE, E)
    np.testing.assert_array_equal(rR, R)
    assert rinfo["curve"] == info["curve"]
    # a fresh start in the same directory forgets the killed run's best parameters
    fresh = train_kge(nations, cfg, checkpoint_dir=tmp_path / "killed", resume=False)
    np.testing.assert_array_equal(fresh[0], E)


def test_rotate_starts_from_its_papers_initialisation():
    cfg = KGEConfig(model="rotate", dim=20, gamma=6.0, devices=1)
    E, R = init_tables(cfg, 50, 3)
    bound = rotate_init_range(6.0, 20)
    assert bound == pytest.approx((6.0 + 2.0) / 10)
    assert np.abs(E).max() <= bound and np.abs(E).max() > 0.9 * bound
    assert R.shape == (6, 10) and np.abs(R).max() <= np.pi


def test_ensemble_averages_member_log_probabilities(nations):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 6, nations.num_entities))
    expected = (2 * np.asarray(jax.nn.log_softmax(a)) + np.asarray(jax.nn.log_softmax(b))) / 3
    np.testing.assert_allclose(ensemble_scores([a, b], [2, 1]), expected, rtol=1e-5)
    known = known_answers(nations.all_triples())
    triples = nations.test[:3]
    np.testing.assert_array_equal(rank_scores(ensemble_scores([a, a]), triples, known), rank_scores(a, triples, known))


def test_ensemble_selection_on_validation_keeps_what_helps(nations):
    known = known_answers(nations.all_triples())
    triples = nations.valid
    answers = np.concatenate([triples[:, 2], triples[:, 0]])
    rng = np.random.default_rng(1)
    Q, N = len(answers), nations.num_entities
    half = np.arange(Q) < Q // 2
    left, right, noise = rng.normal(size=(3, Q, N))
    left[half, answers[half]] += 6.0  # knows the first half of the queries
    right[~half, answers[~half]] += 6.0  # knows the second half
    chosen = select_ensemble({"left": left, "right": right, "noise": noise}, triples, known)
    assert set(chosen) == {"left", "right"}, chosen
    both = ranking_metrics(rank_scores(ensemble_scores([left, right]), triples, known))["mrr"]
    alone = max(ranking_metrics(rank_scores(x, triples, known))["mrr"] for x in (left, right))
    assert both > alone + 0.1


def test_bad_training_settings_are_named():
    with pytest.raises(ValueError, match=r"batch of 100 triples must split evenly into the 4\^2 blocks"):
        KGEConfig(batch=100, devices=4)
    with pytest.raises(ValueError, match="unknown scoring function 'boxe'"):
        KGEConfig(model="boxe")
    with pytest.raises(ValueError, match="dim=7 must be even"):
        KGEConfig(model="complex", dim=7)
    with pytest.raises(ValueError, match=r"bess\.hyper\.rotate\.gammas=\[3\.0, 3\.0\] repeats a margin"):
        KGEConfig(model="rotate", gammas=[3.0, 3.0])
    with pytest.raises(ValueError, match=r"bess\.hyper\.rotate\.gammas=-1"):
        KGEConfig(model="rotate", gammas=[-1.0])

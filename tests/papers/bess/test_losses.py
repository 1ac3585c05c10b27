"""The losses equal their formulas written in numpy; per-triple weights scale each triple's term; the sampled
softmax's log(N-1) - log(K) correction makes uniform negatives an exact stand-in for the full softmax when they
cover the wrong entities evenly; the self-adversarial weights carry no gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from papers.bess.losses import Loss, log_sigmoid_loss, margin_ranking_loss, sampled_softmax_loss


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 5)) * 3, rng.normal(size=(3, 5, 7)) * 3


def test_log_sigmoid_loss_uniform_and_self_adversarial(scores):
    pos, neg = scores
    uniform = -_log_sigmoid(pos).sum() - (_log_sigmoid(-neg).mean(-1)).sum()
    assert float(log_sigmoid_loss(jnp.asarray(pos), jnp.asarray(neg))) == pytest.approx(uniform, rel=1e-5)
    w = np.exp(2.0 * neg)
    w /= w.sum(-1, keepdims=True)
    adversarial = -_log_sigmoid(pos).sum() - (w * _log_sigmoid(-neg)).sum()
    assert float(log_sigmoid_loss(jnp.asarray(pos), jnp.asarray(neg), 2.0)) == pytest.approx(adversarial, rel=1e-5)
    # the weights are constants: d loss / d s- = w sigma(s-)
    grad = jax.grad(lambda n: log_sigmoid_loss(jnp.asarray(pos), n, 2.0))(jnp.asarray(neg))
    np.testing.assert_allclose(np.asarray(grad), w / (1 + np.exp(-neg)), rtol=1e-5, atol=1e-7)


def test_margin_ranking_loss(scores):
    pos, neg = scores
    expected = np.maximum(0.0, 1.5 - pos[..., None] + neg).mean(-1).sum()
    assert float(margin_ranking_loss(jnp.asarray(pos), jnp.asarray(neg), 1.5)) == pytest.approx(expected, rel=1e-5)


def test_sampled_softmax_equals_the_full_softmax_when_negatives_cover_every_wrong_entity_evenly():
    rng = np.random.default_rng(1)
    N = 9
    logits = rng.normal(size=(4, N)) * 2  # 4 queries, every entity's score
    answer = np.array([0, 3, 8, 5])
    full = -(logits[np.arange(4), answer] - np.log(np.exp(logits).sum(-1))).sum()
    wrong = np.stack([np.delete(row, a) for row, a in zip(logits, answer, strict=True)])  # [4, N-1]
    for repeats in (1, 3):  # K = N - 1 (no correction) and K = 3 (N - 1): each wrong entity stands for 1/3 of itself
        neg = np.tile(wrong, repeats)
        got = sampled_softmax_loss(jnp.asarray(logits[np.arange(4), answer]), jnp.asarray(neg), N)
        assert float(got) == pytest.approx(full, rel=1e-5)


@pytest.mark.parametrize("name", ["log_sigmoid", "margin", "softmax"])
def test_triple_weights_scale_each_triples_term(scores, name):
    pos, neg = scores
    rng = np.random.default_rng(2)
    w = rng.uniform(0.2, 3.0, size=pos.shape)
    if name == "log_sigmoid":  # self-adversarial, so that the negatives' own weights are exercised too
        u = np.exp(0.5 * neg) / np.exp(0.5 * neg).sum(-1, keepdims=True)
        terms = -_log_sigmoid(pos) - (u * _log_sigmoid(-neg)).sum(-1)
        loss = Loss(name, adversarial=0.5)
    elif name == "margin":
        terms = np.maximum(0.0, 1.0 - pos[..., None] + neg).mean(-1)
        loss = Loss(name)
    else:
        logits = np.concatenate([pos[..., None], neg + np.log(20 - 1) - np.log(neg.shape[-1])], -1)
        terms = -(logits[..., 0] - np.log(np.exp(logits).sum(-1)))
        loss = Loss(name, num_entities=20)
    got = float(loss(jnp.asarray(pos), jnp.asarray(neg), jnp.asarray(w)))
    assert got == pytest.approx((w * terms).sum(), rel=1e-5)
    assert float(loss(jnp.asarray(pos), jnp.asarray(neg))) == pytest.approx(terms.sum(), rel=1e-5)


def test_bad_loss_settings_are_named():
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        Loss("hinge")
    with pytest.raises(ValueError, match="entity count N >= 2"):
        Loss("softmax")
    with pytest.raises(ValueError, match="temperature -1"):
        Loss("log_sigmoid", adversarial=-1)

"""core.charlm's evaluation: one compiled function per model, vmapped over seeds, equal to scoring each seed apart."""

import jax
import jax.numpy as jnp
import numpy as np

from core.charlm import compiled_loss, evaluate
from core.nn import TransformerLM


def _model():
    return TransformerLM(vocab=11, d_model=8, depth=1, heads=2, seq_len=6)


def test_evaluate_scores_every_seed_as_alone_and_compiles_once_per_model():
    model = _model()
    windows = np.random.default_rng(0).integers(0, 11, (10, 7)).astype(np.int32)
    seeds = [model.init(jax.random.key(s), jnp.zeros((1, 6), jnp.int32)) for s in (0, 1, 2)]
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *seeds)
    got = evaluate(model, stacked, windows)
    alone = [float(compiled_loss(model)(v, jnp.asarray(windows))) for v in seeds]
    np.testing.assert_allclose(got, alone, rtol=1e-6)
    assert len(set(np.round(alone, 6))) == 3  # the seeds differ: the test could tell them apart
    # in batches of 4 (4, 4, 2 windows): the batch means weighted by their sizes, the mean over all windows again
    np.testing.assert_allclose(evaluate(model, stacked, windows, batch_size=4), alone, rtol=1e-6)
    # an equal model (another object of the same description) reuses the compiled function
    before = compiled_loss.cache_info().hits
    compiled_loss(_model())
    assert compiled_loss.cache_info().hits == before + 1

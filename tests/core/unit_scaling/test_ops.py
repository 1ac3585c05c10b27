"""Each unit-scaled op: unit output and unit gradients for unit inputs (statistically), values equal to the
unscaled op times its scale, and gradients that agree with finite differences where scales are tied."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core import unit_scaling as us
from core.unit_scaling.ops import GELU_BWD_STD, GELU_FWD_STD

TOL = 0.08  # relative tolerance on a std estimated from >= 10^5 samples of a roughly Gaussian quantity


def normal(shape, seed):
    return jax.random.normal(jax.random.key(seed), shape, jnp.float32)


def stds(fn, *args, seed=99):
    """std of fn(*args) and of each input's gradient for a unit-normal cotangent."""
    y, vjp = jax.vjp(fn, *args)
    grads = vjp(normal(y.shape, seed))
    return float(jnp.std(y)), [float(jnp.std(g)) for g in grads]


def assert_unit(value, tol=TOL):
    assert abs(value - 1) < tol, value


def test_scale_fwd_and_bwd_scale_one_direction_each():
    x = jnp.arange(4.0)
    y, vjp = jax.vjp(lambda v: us.scale_fwd(v, 3.0), x)
    assert list(np.asarray(y)) == [0, 3, 6, 9] and list(np.asarray(vjp(jnp.ones(4))[0])) == [1, 1, 1, 1]
    y, vjp = jax.vjp(lambda v: us.scale_bwd(v, 3.0), x)
    assert list(np.asarray(y)) == [0, 1, 2, 3] and list(np.asarray(vjp(jnp.ones(4))[0])) == [3, 3, 3, 3]


def test_matmul_unconstrained_is_unit_in_every_direction():
    x, w = normal((2048, 256), 0), normal((256, 512), 1)
    out, (gx, gw) = stds(lambda a, b: us.matmul(a, b, constraint=None), x, w)
    for v in (out, gx, gw):
        assert_unit(v)


@pytest.mark.parametrize("constraint", ["gmean", "hmean", "to_output_scale", "to_grad_input_scale"])
def test_matmul_constraints_tie_the_forward_and_input_gradient_scales(constraint):
    x, w = normal((64, 32), 0), normal((32, 128), 1)
    y = us.matmul(x, w, constraint=constraint)
    fwd, bwd = us.apply_constraint(constraint, 32**-0.5, 128**-0.5)
    assert fwd == bwd
    np.testing.assert_allclose(np.asarray(y), np.asarray(x @ w) * fwd, rtol=1e-5, atol=1e-5)
    g = normal(y.shape, 2)
    gx, gw = jax.vjp(lambda a, b: us.matmul(a, b, constraint=constraint), x, w)[1](g)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(g @ w.T) * bwd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(x.T @ g) * 64**-0.5, rtol=1e-5, atol=1e-5)


def test_constraint_values():
    assert us.apply_constraint("gmean", 4.0, 1.0) == (2.0, 2.0)
    assert us.apply_constraint("hmean", 3.0, 1.0) == (1.5, 1.5)
    assert us.apply_constraint(None, 4.0, 1.0) == (4.0, 1.0)
    with pytest.raises(ValueError, match="unknown constraint 'amean'"):
        us.apply_constraint("amean", 1.0, 1.0)


def test_gelu_is_unit_and_equals_scaled_gelu():
    x = normal((1 << 18,), 0)
    out, (g,) = stds(lambda v: us.gelu(v, constraint=None), x)
    assert_unit(out)
    assert_unit(g)
    s = (1 / (GELU_FWD_STD * GELU_BWD_STD)) ** 0.5
    np.testing.assert_allclose(
        np.asarray(us.gelu(x[:100])), np.asarray(jax.nn.gelu(x[:100], approximate=False)) * s, rtol=1e-6
    )


def test_softmax_is_unit():
    x = normal((1024, 256), 0)
    out, (g,) = stds(lambda v: us.softmax(v, constraint=None), x)
    assert_unit(out, 0.1)
    assert_unit(g, 0.1)


def test_dropout_keeps_variance():
    x = normal((1 << 18,), 0)
    y = us.dropout(x, 0.3, jax.random.key(1))
    assert_unit(float(jnp.std(y)))
    assert float(jnp.mean(y == 0)) == pytest.approx(0.3, abs=0.01)
    with pytest.raises(ValueError, match="rate must be in"):
        us.dropout(x, 1.0, jax.random.key(1))
    with pytest.raises(ValueError, match="a key is needed"):
        us.dropout(x, 0.1, None)


def test_add_of_two_unit_branches_is_unit():
    assert_unit(float(jnp.std(us.add(normal((1 << 18,), 0), normal((1 << 18,), 1)))))


@pytest.mark.parametrize("tau", [0.5, 0.01, us.running_mean_tau(3)])
def test_residual_split_and_add_keep_unit_scale_both_ways(tau):
    x = normal((1 << 18,), 0)
    w = normal((1 << 18,), 1)  # an independent 'branch': elementwise product with fresh noise

    def block(v):
        branch, skip = us.residual_split(v, tau)
        return us.residual_add(branch * w, skip, tau)

    out, (g,) = stds(block, x)
    assert_unit(out)
    assert_unit(g)


def test_running_mean_tau():
    assert [us.running_mean_tau(i) for i in (1, 2, 3)] == [0.5, 1 / 3, 0.25]
    with pytest.raises(ValueError, match="1-based"):
        us.running_mean_tau(0)
    with pytest.raises(ValueError, match=r"tau must be in \(0, 1\)"):
        us.residual_split(jnp.ones(3), 1.0)


def test_embedding_gradient_is_unit():
    table = normal((64, 128), 0)
    ids = jax.random.randint(jax.random.key(1), (8192,), 0, 64)
    out, (g,) = stds(lambda t: us.embedding(ids, t), table)
    assert_unit(out)
    assert_unit(g)


def test_layer_norm_output_and_affine_gradients_are_unit():
    x = normal((256, 2048), 0) * 3 + 1  # 2048 affine parameters: their gradients' std is known to ~2%
    w, b = jnp.ones(2048), jnp.zeros(2048)
    out, (_, gw, gb) = stds(lambda a, p, q: us.layer_norm(a, p, q), x, w, b)
    assert_unit(out)
    assert_unit(gw)
    assert_unit(gb)


def test_cross_entropy_value_is_the_mean_and_its_gradient_unit_at_uniform_logits():
    vocab = 96
    labels = jax.random.randint(jax.random.key(0), (512,), 0, vocab)
    logits = jnp.zeros((512, vocab))
    loss, vjp = jax.vjp(lambda z: us.cross_entropy(z, labels), logits)
    assert float(loss) == pytest.approx(math.log(vocab), rel=1e-4)  # float32 sum of 512 terms
    (g,) = vjp(jnp.float32(1.0))
    assert float(jnp.std(g)) == pytest.approx(1.0, rel=1e-3)  # exact at uniform logits (the rule's assumption)
    # with a mask, the value is the mean over unmasked positions
    mask = jnp.arange(512) < 100
    z = normal((512, vocab), 1)
    ref = -jnp.take_along_axis(jax.nn.log_softmax(z), labels[:, None], axis=-1)[:100].mean()
    assert float(us.cross_entropy(z, labels, mask=mask)) == pytest.approx(float(ref), rel=1e-5)


def finite_difference_grad(f, x, eps=1e-2):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(jnp.asarray(x + d, jnp.float32))) - float(f(jnp.asarray(x - d, jnp.float32)))) / (2 * eps)
    return g


@pytest.mark.parametrize(
    "op",
    [
        lambda v: us.matmul(v, jnp.linspace(-1, 1, 12).reshape(4, 3)),
        lambda v: us.gelu(v),
        lambda v: us.softmax(v),
        lambda v: us.layer_norm(v),
        lambda v: us.residual_add(*us.residual_split(v, 0.3)[::-1][::-1], 0.3),
        lambda v: us.add(v, v**2),
    ],
    ids=["matmul", "gelu", "softmax", "layer_norm", "residual", "add"],
)
def test_tied_scales_give_true_gradients(op):
    """With the forward and input-gradient scales tied, the gradient is the true derivative of the forward."""
    x = normal((3, 4), 5)
    c = normal(op(x).shape, 6)

    def f(v):
        return jnp.sum(op(v) * c)

    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), finite_difference_grad(f, x), rtol=2e-2, atol=2e-3)

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.unit_scaling.analysis import collect_tensors, plot_scales, scales_table, tensor_scales


class TwoLayer(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(8, name="first")(x)
        return nn.Dense(3, name="second")(jnp.tanh(h))

    def loss(self, x, y):
        return jnp.mean((self(x) - y) ** 2)


def test_collects_every_tensor_and_its_gradient_exactly():
    m = TwoLayer()
    x = jax.random.normal(jax.random.key(0), (16, 4))
    y = jax.random.normal(jax.random.key(1), (16, 3))
    variables = m.init(jax.random.key(2), x)
    tensors = collect_tensors(m, variables, lambda mm: mm.loss(x, y), loss_scale=4.0)
    names = {k for k in tensors}
    assert ("first/kernel", "weight") in names and ("second/bias", "weight grad") in names
    assert ("first", "activation") in names and ("second", "activation grad") in names
    # reference values computed directly
    h = x @ variables["params"]["first"]["kernel"] + variables["params"]["first"]["bias"]
    np.testing.assert_allclose(np.asarray(tensors[("first", "activation")]), np.asarray(h), rtol=1e-5)
    out = m.apply(variables, x)
    np.testing.assert_allclose(
        np.asarray(tensors[("second", "activation grad")]), np.asarray(4.0 * 2 * (out - y) / out.size), rtol=1e-5
    )
    grads = jax.grad(lambda v: 4.0 * m.apply(v, x, y, method=TwoLayer.loss))(variables)
    np.testing.assert_allclose(
        np.asarray(tensors[("first/kernel", "weight grad")]), np.asarray(grads["params"]["first"]["kernel"]), rtol=1e-5
    )


def test_scales_table_and_plot():
    m = TwoLayer()
    x = jnp.ones((4, 4))
    variables = m.init(jax.random.key(0), x)
    rows = tensor_scales(m, variables, lambda mm: mm.loss(x, jnp.zeros((4, 3))))
    kernel = next(r for r in rows if r.name == "first/kernel" and r.kind == "weight")
    assert kernel.std == pytest.approx(float(jnp.std(variables["params"]["first"]["kernel"])), rel=1e-6)
    assert kernel.shape == (4, 8)
    table = scales_table(rows)
    assert "first/kernel" in table and "activation grad" in table
    fig = plot_scales({"a": rows, "b": rows})
    assert len(fig.axes) == 4

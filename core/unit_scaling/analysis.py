"""The scale of every tensor of a model: one forward and backward step, the standard deviation of every weight,
weight gradient, activation (each module's output) and activation gradient, named by module path.

It works for any flax linen model: activations are the outputs of every module call (collected with
`nn.intercept_methods`), and their gradients come from adding a zero "probe" to each output and differentiating
the loss with respect to the probes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from core.scales import TensorScale, plot_scales, scales_table  # the data and its figures: no JAX


def _path(context) -> str:
    return "/".join(str(p) for p in context.module.path) or "model"


def collect_tensors(
    model: nn.Module, variables: Any, loss_fn: Callable[[nn.Module], jax.Array], *, loss_scale: float = 1.0
) -> dict[tuple[str, str], jax.Array]:
    """Every tensor of one step, keyed by (module path, kind). `loss_fn(bound_model) -> scalar` runs the forward
    pass and the loss, e.g. `lambda m: m.loss(ids, labels)`; `loss_scale` multiplies the loss before
    differentiation (as training with loss scaling does). Parameters with a single element are skipped.
    """

    def is_probed(context) -> bool:
        return context.method_name == "__call__"

    def run(variables, probes):
        outputs: dict[str, jax.Array] = {}
        counts: dict[str, int] = {}

        def interceptor(next_fun, args, kwargs, context):
            y = next_fun(*args, **kwargs)
            if not is_probed(context) or not isinstance(y, jax.Array) or not jnp.issubdtype(y.dtype, jnp.floating):
                return y
            name = _path(context)
            counts[name] = counts.get(name, 0) + 1
            key = name if counts[name] == 1 else f"{name}#{counts[name]}"
            if probes is not None and key in probes:
                y = y + probes[key]
            outputs[key] = y
            return y

        with nn.intercept_methods(interceptor):
            loss = model.apply(variables, method=lambda m: loss_fn(m))
        return loss * loss_scale, outputs

    _, shapes = jax.eval_shape(lambda v: run(v, None), variables)
    probes = {k: jnp.zeros(s.shape, s.dtype) for k, s in shapes.items()}

    (_, activations), (weight_grads, probe_grads) = jax.value_and_grad(run, argnums=(0, 1), has_aux=True)(
        variables, probes
    )
    out: dict[tuple[str, str], jax.Array] = {}
    params = variables["params"] if "params" in variables else variables
    grads = weight_grads["params"] if "params" in weight_grads else weight_grads
    for (path, w), g in zip(jax.tree_util.tree_leaves_with_path(params), jax.tree_util.tree_leaves(grads), strict=True):
        name = "/".join(str(getattr(k, "key", k)) for k in path)
        if np.size(w) > 1:
            out[(name, "weight")] = w
            out[(name, "weight grad")] = g
    for name, y in activations.items():
        out[(name, "activation")] = y
        out[(name, "activation grad")] = probe_grads[name]
    return out


def tensor_scales(
    model: nn.Module, variables: Any, loss_fn: Callable[[nn.Module], jax.Array], *, loss_scale: float = 1.0
) -> list[TensorScale]:
    """The standard deviation of every tensor of one step (see collect_tensors)."""
    tensors = collect_tensors(model, variables, loss_fn, loss_scale=loss_scale)
    return [
        TensorScale(name, kind, float(jnp.std(jnp.asarray(x, jnp.float32))), tuple(np.shape(x)))
        for (name, kind), x in tensors.items()
    ]


__all__ = ["TensorScale", "collect_tensors", "plot_scales", "scales_table", "tensor_scales"]

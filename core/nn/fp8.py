"""Training glue for models whose linear layers run in FP8 (core.nn.Formats(fp8=policy)): the variables split into
parameters, scaling state and probes; the probes' gradients are the step's scaling statistics; `update_fp8`
advances every layer's state from them (core.numerics.fp8.update_meta).

    variables = model.init(key, ids)
    params, meta, probes = split_fp8(variables)
    def loss_fn(params, probes):
        return model.apply({"params": params, "fp8_meta": meta, "fp8_probe": probes}, ids, labels, method=...)
    loss, (grads, stats) = jax.value_and_grad(loss_fn, argnums=(0, 1))(params, probes)
    meta = update_fp8(meta, stats, policy)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from core.numerics.fp8 import FP8Meta, calibrate, update_meta


def _is_meta(x) -> bool:
    return isinstance(x, FP8Meta)


def split_fp8(variables) -> tuple[dict, dict, dict]:
    """(params, fp8_meta, fp8_probe) of a model's variables (the last two empty when it has no FP8 layer)."""
    return variables["params"], variables.get("fp8_meta", {}), variables.get("fp8_probe", {})


def update_fp8(meta, stats, policy: str):
    """Every layer's next FP8Meta from its probe gradient [3, 2] (stats has the probes' tree: `probe` leaves where
    meta has `state` leaves)."""
    return jax.tree.map(lambda m, s: update_meta(m, s, policy), meta, _probes_like(meta, stats), is_leaf=_is_meta)


def calibrate_fp8(meta, stats, fallback: int = 0):
    """cscale: every layer's biases fixed from one step's statistics (a bad amax gives `fallback`)."""
    return jax.tree.map(
        lambda m, s: m._replace(bias=calibrate(s, fallback=fallback)), meta, _probes_like(meta, stats), is_leaf=_is_meta
    )


def _probes_like(meta, stats):
    """The probe tree re-keyed like the meta tree ({'state': FP8Meta} <- {'probe': [3, 2]})."""
    if isinstance(meta, dict):
        if set(meta) == {"state"}:
            return {"state": stats["probe"]}
        return {k: _probes_like(v, stats[k]) for k, v in meta.items()}
    raise TypeError(f"update_fp8: unexpected FP8 state node {type(meta).__name__}")


def fp8_statistics(stats) -> dict[str, jax.Array]:
    """{layer path: [3, 2] (amax, bias) of (x, w, g)} from the probes' gradient, paths joined with '/'."""
    flat = jax.tree_util.tree_flatten_with_path(stats)[0]
    out = {}
    for path, leaf in flat:
        keys = [getattr(k, "key", str(k)) for k in path]
        out["/".join(k for k in keys if k != "probe")] = jnp.asarray(leaf)
    return out

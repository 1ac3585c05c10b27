"""Unit scaling (Blake, Orr & Luschi, ICML 2023) and u-muP (Blake, Eichenberg, Dean et al., ICLR 2025).

Here, the unit-scaled ops (core.unit_scaling.ops, loaded on first use):
    scale_fwd, scale_bwd    multiply the value, or only its gradient, by a constant
    linear, matmul, gelu, softmax, cross_entropy, layer_norm, embedding, dropout, add
                            ops whose output and input gradients have unit scale for unit-scaled inputs
    residual_split, residual_add, running_mean_tau   the residual branches' scaling rules
    CONSTRAINTS, apply_constraint, plain_autodiff    how a forward and a backward scale are tied together
Not imported here (they pull in flax, optax or matplotlib, which the ops do not need):
    core.unit_scaling.umup       u-muP's ops: its hyperparameters `Mults`, the unit-scaled linear readout, GELU,
                                 attention and cross-entropy for a multiplier, the residual rule (`residual_tau`)
                                 and per-tensor Adam learning rates (`scale_by_tree`); the abc tables of u-muP,
                                 muP and SP are core.nn.parametrization
    core.unit_scaling.hparams    u-muP's parametrizations and multipliers as data (`Mults`; no JAX)
    core.unit_scaling.analysis   the scale of every weight, activation and gradient of a flax model (`tensor_scales`)
    core.unit_scaling.tracking   those scales over training against number formats' ranges (`out_of_range`)
"""

__all__ = [
    "CONSTRAINTS",
    "add",
    "apply_constraint",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "linear",
    "matmul",
    "plain_autodiff",
    "residual_add",
    "residual_split",
    "running_mean_tau",
    "scale_bwd",
    "scale_fwd",
    "softmax",
]


def __getattr__(name: str):
    """The ops (JAX) load on first use, so that core.unit_scaling.hparams and core.scales' users import without JAX.
    The import is written out, so core.provenance still follows it."""
    if name in __all__:
        from core.unit_scaling import ops

        return getattr(ops, name)
    raise AttributeError(f"module 'core.unit_scaling' has no attribute {name!r}")

"""Unit scaling (Blake, Orr & Luschi, ICML 2023) and u-muP (Blake, Eichenberg, Dean et al., ICLR 2025).

Imported here, the unit-scaled ops (core.unit_scaling.ops):
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
    core.unit_scaling.analysis   the scale of every weight, activation and gradient of a flax model (`tensor_scales`)
    core.unit_scaling.tracking   those scales over training against number formats' ranges (`out_of_range`)
"""

from core.unit_scaling.ops import (
    CONSTRAINTS,
    add,
    apply_constraint,
    cross_entropy,
    dropout,
    embedding,
    gelu,
    layer_norm,
    linear,
    matmul,
    plain_autodiff,
    residual_add,
    residual_split,
    running_mean_tau,
    scale_bwd,
    scale_fwd,
    softmax,
)

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

"""Unit scaling (Blake, Orr & Luschi, ICML 2023): scale_fwd/scale_bwd, the scaled ops, and an analysis tool that
measures the scale of every tensor of a model (core.unit_scaling.analysis) and tracks those scales over training
against number formats' ranges (core.unit_scaling.tracking). Neither is imported here: they pull in flax and
matplotlib, which the ops do not need."""

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

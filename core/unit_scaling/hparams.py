"""u-muP's hyperparameters as data: the parametrizations the paper compares and the multipliers besides the
learning rate. No JAX (a paper's config validates against them); core.unit_scaling.umup re-exports them beside the
ops that use them."""

from __future__ import annotations

import math
from dataclasses import dataclass

PARAMETRIZATIONS = ("sp", "mup", "umup")  # the three the u-muP paper compares (core.nn.parametrization.by_name)


@dataclass(frozen=True)
class Mults:
    """u-muP's hyperparameters besides the learning rate, each 1 by default (the paper's Table of HPs; the library's
    `mult` arguments and transformer_residual_scaling_rule)."""

    residual: float = 1.0  # alpha_res: the residual branches' contribution relative to the embedding's
    residual_attn_ratio: float = 1.0  # alpha_res_attn_ratio: the attention branches' relative to the MLP branches'
    attn_softmax: float = 1.0  # alpha_attn: attention logits are alpha q.k / d_head
    ffn_act: float = 1.0  # alpha_ffn-act: the MLP computes gelu(alpha x) / alpha
    loss_softmax: float = 1.0  # alpha_loss-softmax: the loss sees alpha * logits

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
                raise ValueError(f"Mults.{name} must be a positive finite number, got {value!r}")


MULT_NAMES = tuple(Mults.__dataclass_fields__)  # in the order of the paper's table

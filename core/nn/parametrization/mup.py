"""muP, the maximal update parametrization (Yang et al. 2022, "Tensor Programs V"), relative to a base width, as the
u-muP paper compares it (core.unit_scaling.umup). With w the fan-in and r = width / base width:

    kind      A                          B (init std)   C (Adam lr scale)
    input     1                          1              1
    hidden    1                          1/sqrt(w)      1/r
    output    1/r (base fan-in / w)      1/sqrt(w)      1
    norm      1                          (1)            1
    bias      1                          (0)            1

and attention logits q.k / sqrt(head_dim r): 1/sqrt(head_dim) at the base width, muP's 1/head_dim scaling beyond.
At r = 1 every factor is the standard parametrization with fan-in initialisation: the u-muP paper's SP baseline
is `MuP(1.0)` (`by_name("sp")`), at whatever width it runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.nn.parametrization.base import ABC, Parametrization


@dataclass(frozen=True)
class MuP(Parametrization):
    width_ratio: float = 1.0

    name = "mup"

    def __post_init__(self) -> None:
        if not self.width_ratio > 0:
            raise ValueError(f"MuP: width_ratio must be > 0, got {self.width_ratio}")

    def abc(self, kind, shape, *, depth=None, residual_out=False) -> ABC:
        r = self.width_ratio
        if kind in ("input", "norm", "bias"):
            return ABC(1.0, 1.0, 1.0)
        w = shape[0]
        if kind == "hidden":
            return ABC(1.0, w**-0.5, 1.0 / r)
        return ABC((w / r) / w, w**-0.5, 1.0)  # output

    def readout_multiplier(self, fan_in: int) -> float:
        return self.abc("output", (fan_in,)).multiplier

    def attention_logits(self, qk, d):
        """q.k / sqrt(d r): the standard temperature at the base width, muP's 1/d scaling beyond it."""
        return qk * (1.0 / math.sqrt(d * self.width_ratio))

"""The standard parametrization with GPT-2's initialisation: the regular model of the unit-scaling, FP8 LLM and SparQ
papers, the packed encoder and Llama's linear layers.

    kind      A    B (init std)                       C (Adam lr scale)
    input     1    0.02                               1
    hidden    1    0.02; 0.02 / sqrt(2 L) for a       1
                   block's output projection (L blocks)
    output    1    0.02                               1
    norm      1    (gains start at 1)                 1
    bias      1    (biases start at 0)                1

The ops are the plain ones (core.nn.parametrization.base). The u-muP paper's standard parametrization differs in
its initialisation (fan-in, embeddings at 1): it is muP at its base width (core.nn.parametrization.mup).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.nn.parametrization.base import ABC, Parametrization

GPT2_STD = 0.02


@dataclass(frozen=True)
class Standard(Parametrization):
    name = "regular"

    def abc(self, kind, shape, *, depth=None, residual_out=False) -> ABC:
        if residual_out:
            return ABC(1.0, GPT2_STD / math.sqrt(2 * depth), 1.0)
        return ABC(1.0, GPT2_STD, 1.0)

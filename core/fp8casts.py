"""FP8 cast recipes as config sections: E4M3 values and E5M2 gradients at the matmuls, how they round and saturate,
and whether the LM head is cast. No JAX, so a paper's config validates one without loading it; `formats()` builds
the core.nn.Formats a model takes. core.charlm (the character-LM engine) re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.config import check_choice

if TYPE_CHECKING:
    from core.nn import Formats


@dataclass
class FP8Casts:
    """An FP8 cast recipe: E4M3 weights and activations, E5M2 gradients, at matmul operands (FP32 accumulation,
    everything else FP32). A config section as well (the unit-scaling paper's `fp8`)."""

    rounding: str = "stochastic"
    saturate: bool = True
    head: str = "fp32"  # "fp32": the LM head and the logits' gradient out of FP8; "low": cast like every layer

    def __post_init__(self) -> None:
        check_choice("fp8.rounding", self.rounding, ["nearest", "stochastic"])
        check_choice("fp8.head", self.head, ["fp32", "low"])

    def formats(self, attention: bool = True) -> Formats:
        """The model's formats (core.nn.Formats, which loads JAX); `attention` False leaves the attention's matmuls
        in FP32 (the u-muP paper's scheme casts the linear layers only)."""
        from core.nn import Formats

        return Formats(
            fwd="e4m3",
            bwd="e5m2",
            scope="matmul",
            rounding=self.rounding,
            saturate=self.saturate,
            head=self.head,
            attention=attention,
        )

    @property
    def label(self) -> str:
        sat = "saturating" if self.saturate else "overflowing to Inf/NaN"
        head = "LM head in FP32" if self.head == "fp32" else "LM head in FP8"
        return f"{self.rounding} rounding, {sat}, {head}"


SIMULATE_FP8 = FP8Casts("stochastic", True, "fp32")
PLAIN_FP8 = FP8Casts("nearest", False, "low")

"""Number formats: where a model's tensors are cast, kept apart from its parametrization.

A `Formats` says which formats a model's values and gradients take at its op boundaries; the model's code marks the
boundaries and knows nothing else about formats:

    y = f.product(p.linear(f.operand(x), f.operand(w)))   # core.nn.transformer.Linear, with p its parametrization

- `boundary(x)`: an op's input or output ("all" scope only): the value to `fwd`, its gradient to `bwd`;
- `operand(x)`: a matmul's operand: the value to `fwd` (its gradient to `bwd` in the "all" scope; in the "matmul"
  scope the backward matmuls produce it in FP32 and the next matmul's `product` casts what they consume);
- `product(y)`: a matmul's output: in the "matmul" scope its value stays FP32 (FP32 accumulation) and the gradient
  the backward matmuls read is cast to `bwd`; in the "all" scope a plain boundary.

Arithmetic between casts is FP32, as on a chip with FP32 accumulation. `FP32` (no formats) makes every cast the
identity. The LM head follows `head` ("fp32": out of every cast and of FP8, the FP8 recipe of both the unit-scaling
and the FP8 LLM papers; "low": cast like every other layer, pure low-precision training), and the attention's
matmuls follow `attention` (the u-muP paper's FP8 scheme casts the linear layers only). `fp8` instead runs every
linear layer in simulated FP8 with per-tensor scale biases (core.numerics.fp8: "amax", "cscale", "delayed" or
"none") or with MX block scales ("mx"), E4M3 activations and weights and E5M2 gradients (or `fp8_formats`: e.g.
("mxfp8_e4m3", "mxfp4_e2m1", "mxfp8_e5m2") for MXFP4 weights), with the standard parametrization and no other casts.

The casts are fields of the model rather than applied from outside (e.g. by intercepting flax methods) because some
sit inside an op, not at a module's edge: unit-scaled attention scales its probabilities before casting them
(core.nn.parametrization.unit), and a jitted function must see the formats in its arguments, not in ambient state
its compiled trace would not be keyed on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import jax

from core.numerics import FloatFormat, get_format, quantise
from core.numerics.bits import ROUNDINGS

SCOPES = ("all", "matmul")
HEADS = ("fp32", "low")


@dataclass(frozen=True)
class Formats:
    fwd: FloatFormat | str | None = None  # values: weights and activations (None: FP32)
    bwd: FloatFormat | str | None = None  # gradients
    scope: str = "all"  # "all": every op boundary; "matmul": matmul operands and the gradients matmuls read
    rounding: str = "nearest"  # "nearest" (ties to even) or "stochastic" (keyed by core.numerics.stochastic_rounding)
    saturate: bool = False  # clamp at the format's max instead of overflowing to Inf/NaN
    head: str = "fp32"
    attention: bool = True
    fp8: str | None = None
    fp8_history: int = 16  # the delayed policy's amax window
    # the formats of x, w, g by name (None: e4m3, e4m3, e5m2); MX formats (e.g. "mxfp4_e2m1") for fp8="mx"
    fp8_formats: tuple[str, str, str] | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"Formats: scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"Formats: rounding must be one of {', '.join(ROUNDINGS)}, got {self.rounding!r}")
        if self.head not in HEADS:
            raise ValueError(f"Formats: head must be one of {', '.join(HEADS)}, got {self.head!r}")
        for name in ("fwd", "bwd"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, get_format(value))
        if self.fp8 is not None:
            from core.numerics.fp8 import check_policy

            check_policy(self.fp8)
            if self.fwd is not None or self.bwd is not None:
                raise ValueError(
                    f"Formats: fp8={self.fp8!r} scales each linear layer's tensors itself; it combines with no "
                    "fwd/bwd casts only"
                )
            if self.fp8_formats is not None:
                from core.numerics.fp8 import FP8Formats

                if len(self.fp8_formats) != 3:
                    raise ValueError(f"Formats: fp8_formats names the formats of x, w, g; got {self.fp8_formats!r}")
                FP8Formats.of(*self.fp8_formats)  # each must be a known format
                object.__setattr__(self, "fp8_formats", tuple(self.fp8_formats))
            if self.fp8_history < 1:
                raise ValueError(f"Formats: fp8_history must be >= 1, got {self.fp8_history}")

    @cached_property
    def casts(self) -> bool:
        """Whether any cast is not the identity."""
        return any(f is not None and f.name != "fp32" for f in (self.fwd, self.bwd))

    @cached_property
    def for_head(self) -> Formats:
        """The formats of the LM head: these, or FP32 (no casts, no FP8) when `head` is "fp32"."""
        return self if self.head == "low" else FP32

    @cached_property
    def for_attention(self) -> Formats:
        """The formats of the attention's matmuls: these, or FP32 when `attention` is False."""
        return self if self.attention else FP32

    def _cast(self, x: jax.Array, fwd, bwd) -> jax.Array:
        return quantise(x, fwd, bwd, saturate=self.saturate, rounding=self.rounding)

    def boundary(self, x: jax.Array) -> jax.Array:
        return self._cast(x, self.fwd, self.bwd) if self.casts and self.scope == "all" else x

    def operand(self, x: jax.Array) -> jax.Array:
        if not self.casts:
            return x
        return self._cast(x, self.fwd, self.bwd if self.scope == "all" else None)

    def product(self, y: jax.Array) -> jax.Array:
        if self.casts and self.scope == "matmul":
            return self._cast(y, None, self.bwd)
        return self.boundary(y)


FP32 = Formats()

"""Floating-point number formats: FP8 (OCP and Graphcore/fnuz), the OCP MX element types FP6 and FP4, FP16, BF16,
FP32 and any custom (E, M, bias).

A format is sign + `exponent_bits` + `mantissa_bits`, an exponent `bias`, and a convention for special values:

- ``"ieee"``: the top exponent field holds Inf (mantissa 0) and NaNs; -0 exists. (FP16, BF16, FP32, OCP E5M2.)
- ``"fn"``: finite: no Inf; only the all-ones exponent *and* mantissa code is NaN; -0 exists. (OCP E4M3.)
- ``"finite"``: no Inf and no NaN: every code is a number, the top binade included; -0 exists; a cast saturates
  (OCP MX v1.0's FP6 E2M3/E3M2 and FP4 E2M1 element types; ml_dtypes' float6_*fn and float4_e2m1fn). NaN has no
  code: a cast leaves it NaN (ml_dtypes turns it into -0) and `encode` gives -0's code, as ml_dtypes does.
- ``"fnuz"``: finite, unsigned zero: no Inf, no -0; the one NaN is the negative-zero code 0x80. (Graphcore 1.4.3 and
  1.5.2, "8-bit Numerical Formats for Deep Neural Networks"; ml_dtypes' float8_*fnuz.)

With q = 2^(e - bias) and M mantissa bits, normal values are (1 + m/2^M) q and subnormals (exponent field 0) are
m/2^M 2^(1 - bias). Without subnormals the exponent field 0 encodes only zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import ml_dtypes
import numpy as np

Special = Literal["ieee", "fn", "finite", "fnuz"]
SPECIALS: tuple[str, ...] = ("ieee", "fn", "finite", "fnuz")


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format. Hashable, so it can be a static argument of `jax.jit`."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    special: Special = "ieee"
    subnormals: bool = True

    def __post_init__(self) -> None:
        _validate(self)

    # ------------------------------------------------------------------ the exponent range
    @property
    def bits(self) -> int:
        """Total width of a code: sign + exponent + mantissa."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number."""
        top = 2**self.exponent_bits - 1  # the all-ones exponent field
        return (top - 1 if self.special == "ieee" else top) - self.bias

    # ------------------------------------------------------------------ the answers a format gives
    @property
    def max(self) -> float:
        """Largest finite value."""
        m = self.mantissa_bits
        # "fn" loses the all-ones mantissa of the top binade to NaN; "ieee" loses the whole binade to Inf/NaN
        top_mantissa = 2**m - 2 if self.special == "fn" else 2**m - 1
        return math.ldexp(1 + top_mantissa / 2**m, self.emax)

    @property
    def smallest_normal(self) -> float:
        return math.ldexp(1.0, self.emin)

    @property
    def smallest_subnormal(self) -> float | None:
        """Smallest positive subnormal, or None for a format without subnormals."""
        return math.ldexp(1.0, self.emin - self.mantissa_bits) if self.subnormals else None

    @property
    def smallest_positive(self) -> float:
        return self.smallest_subnormal if self.subnormals else self.smallest_normal  # type: ignore[return-value]

    @property
    def eps(self) -> float:
        """Distance from 1.0 to the next larger value: 2^-M."""
        return math.ldexp(1.0, -self.mantissa_bits)

    @property
    def has_inf(self) -> bool:
        return self.special == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.special != "finite"

    @property
    def has_negative_zero(self) -> bool:
        return self.special != "fnuz"

    @cached_property
    def ml_dtype(self) -> np.dtype | None:
        """The numpy/ml_dtypes dtype with exactly this value set and these special values, if there is one."""
        key = (self.exponent_bits, self.mantissa_bits, self.bias, self.special, self.subnormals)
        return _ML_DTYPES.get(key)

    def __repr__(self) -> str:
        sub = "" if self.subnormals else ", no subnormals"
        return (
            f"FloatFormat({self.name}: E{self.exponent_bits}M{self.mantissa_bits} bias {self.bias}, "
            f"{self.special}{sub}, max {self.max:g})"
        )


def _validate(f: FloatFormat) -> None:
    where = f"format {f.name!r}"
    for field, value, lo in (("exponent_bits", f.exponent_bits, 1), ("mantissa_bits", f.mantissa_bits, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ValueError(f"{where}: {field} must be an integer >= {lo}, got {value!r}")
    if not isinstance(f.bias, int) or isinstance(f.bias, bool):
        raise ValueError(f"{where}: bias must be an integer, got {f.bias!r}")
    if f.special not in SPECIALS:
        raise ValueError(f"{where}: special must be one of {', '.join(SPECIALS)}, got {f.special!r}")
    if f.bits > 32:
        raise ValueError(f"{where}: 1 + {f.exponent_bits} + {f.mantissa_bits} = {f.bits} bits; at most 32 allowed")
    if f.special == "ieee" and f.exponent_bits < 2:
        raise ValueError(
            f"{where}: an 'ieee' format with {f.exponent_bits} exponent bit has no normal range "
            "(the top exponent field is reserved for Inf/NaN); use exponent_bits >= 2 or special='fn'/'fnuz'"
        )
    if f.special in ("ieee", "fn") and f.mantissa_bits < 1:
        raise ValueError(
            f"{where}: special={f.special!r} needs mantissa_bits >= 1 (its NaN lives in the top exponent field's "
            "non-zero mantissas); use special='fnuz' for a format without mantissa bits"
        )
    if f.emax < f.emin:
        raise ValueError(f"{where}: bias {f.bias} leaves no normal range (emin {f.emin} > emax {f.emax})")
    # Values are held as float32, so every value of the format must be a float32 value.
    if f.emax > 127 or f.mantissa_bits > 23:
        raise ValueError(
            f"{where}: values must fit in float32 (emax {f.emax} <= 127 and mantissa_bits {f.mantissa_bits} <= 23)"
        )
    lowest = f.emin - f.mantissa_bits if f.subnormals else f.emin
    if lowest < -149 or (not f.subnormals and f.emin < -126):
        raise ValueError(
            f"{where}: bias {f.bias} puts the smallest value at 2^{lowest}, below float32's range "
            "(2^-149 for subnormals, 2^-126 for normals)"
        )


def make_format(
    exponent_bits: int,
    mantissa_bits: int,
    bias: int | None = None,
    *,
    special: Special = "ieee",
    subnormals: bool = True,
    name: str | None = None,
) -> FloatFormat:
    """Any format: e.g. `make_format(4, 3, bias=11, special="fnuz")` for one point of an exponent-bias sweep.

    `bias` defaults to the IEEE choice 2^(E-1) - 1.
    """
    if bias is None:
        bias = 2 ** (exponent_bits - 1) - 1
    if name is None:
        sub = "" if subnormals else "_nosub"
        name = f"e{exponent_bits}m{mantissa_bits}b{bias}_{special}{sub}"
    return FloatFormat(name, exponent_bits, mantissa_bits, bias, special, subnormals)


FORMATS: dict[str, FloatFormat] = {
    "e4m3": FloatFormat("e4m3", 4, 3, 7, "fn"),  # OCP E4M3 (E4M3FN): max 448, no Inf
    "e5m2": FloatFormat("e5m2", 5, 2, 15, "ieee"),  # OCP E5M2: IEEE-like, max 57344, has Inf
    "e4m3fnuz": FloatFormat("e4m3fnuz", 4, 3, 8, "fnuz"),  # Graphcore 1.4.3 bias 8: max 240
    "e5m2fnuz": FloatFormat("e5m2fnuz", 5, 2, 16, "fnuz"),  # Graphcore 1.5.2 bias 16: max 57344
    "e2m3": FloatFormat("e2m3", 2, 3, 1, "finite"),  # OCP MX FP6 E2M3: max 7.5, no Inf/NaN
    "e3m2": FloatFormat("e3m2", 3, 2, 3, "finite"),  # OCP MX FP6 E3M2: max 28, no Inf/NaN
    "e2m1": FloatFormat("e2m1", 2, 1, 1, "finite"),  # OCP MX FP4 E2M1: max 6, no Inf/NaN
    "fp16": FloatFormat("fp16", 5, 10, 15, "ieee"),
    "bf16": FloatFormat("bf16", 8, 7, 127, "ieee"),
    "fp32": FloatFormat("fp32", 8, 23, 127, "ieee"),
}

_ML_DTYPES: dict[tuple, np.dtype] = {
    (4, 3, 7, "fn", True): np.dtype(ml_dtypes.float8_e4m3fn),
    (5, 2, 15, "ieee", True): np.dtype(ml_dtypes.float8_e5m2),
    (4, 3, 8, "fnuz", True): np.dtype(ml_dtypes.float8_e4m3fnuz),
    (5, 2, 16, "fnuz", True): np.dtype(ml_dtypes.float8_e5m2fnuz),
    (4, 3, 11, "fnuz", True): np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    (4, 3, 7, "ieee", True): np.dtype(ml_dtypes.float8_e4m3),
    (3, 4, 3, "ieee", True): np.dtype(ml_dtypes.float8_e3m4),
    (2, 3, 1, "finite", True): np.dtype(ml_dtypes.float6_e2m3fn),
    (3, 2, 3, "finite", True): np.dtype(ml_dtypes.float6_e3m2fn),
    (2, 1, 1, "finite", True): np.dtype(ml_dtypes.float4_e2m1fn),
    (5, 10, 15, "ieee", True): np.dtype(np.float16),
    (8, 7, 127, "ieee", True): np.dtype(ml_dtypes.bfloat16),
    (8, 23, 127, "ieee", True): np.dtype(np.float32),
}


def get_format(fmt: str | FloatFormat) -> FloatFormat:
    """A format from its config name (`e4m3`, `e5m2`, `e4m3fnuz`, `e5m2fnuz`, `e2m3`, `e3m2`, `e2m1`, `fp16`, `bf16`,
    `fp32`) or itself."""
    if isinstance(fmt, FloatFormat):
        return fmt
    name = getattr(fmt, "value", fmt)  # a string enum carries the name as its value
    if name not in FORMATS:
        raise ValueError(
            f"unknown number format {name!r}: choose one of {', '.join(FORMATS)}, "
            "or build one with core.numerics.make_format(exponent_bits, mantissa_bits, bias, special=...)"
        )
    return FORMATS[name]

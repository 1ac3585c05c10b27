"""Independent references for the numerics tests: ml_dtypes casts, and gfloat for formats ml_dtypes lacks."""

from __future__ import annotations

import numpy as np
from gfloat import Domain, FormatInfo, RoundMode, decode_ndarray, round_ndarray

from core.numerics import FloatFormat


def gfloat_info(fmt: FloatFormat) -> FormatInfo:
    """The gfloat description of one of our formats, built from its definition (not from our code)."""
    m = fmt.mantissa_bits
    domain, has_nz, high_nans = {
        "ieee": (Domain.Extended, True, 2**m - 1),
        "fn": (Domain.Finite, True, 1),
        "finite": (Domain.Finite, True, 0),
        "fnuz": (Domain.Finite, False, 0),
    }[fmt.special]
    return FormatInfo(
        fmt.name,
        fmt.bits,
        m + 1,
        bias=fmt.bias,
        is_signed=True,
        domain=domain,
        has_nz=has_nz,
        num_high_nans=high_nans,
        has_subnormals=fmt.subnormals,
        is_twos_complement=False,
    )


def ml_dtypes_cast(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    with np.errstate(all="ignore"):  # overflow to Inf/NaN is part of what is compared
        return x.astype(fmt.ml_dtype).astype(np.float32)


def gfloat_cast(x: np.ndarray, fmt: FloatFormat, *, saturate: bool = False, srbits=None) -> np.ndarray:
    mode = RoundMode.TiesToEven if srbits is None else RoundMode.Stochastic
    with np.errstate(all="ignore"):
        out = round_ndarray(gfloat_info(fmt), x.astype(np.float64), mode, saturate, srbits, 0 if srbits is None else 32)
        return np.asarray(out, np.float64).astype(np.float32)


def gfloat_values(fmt: FloatFormat) -> np.ndarray:
    """The value of every code, decoded by gfloat."""
    codes = np.arange(2**fmt.bits, dtype=np.int64)
    return np.asarray(decode_ndarray(gfloat_info(fmt), codes), np.float64)


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: identical float32 bit patterns, or both NaN (NaN payloads are not part of the contract)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def exponent_sweep(per_exponent: int = 512, seed: int = 0) -> np.ndarray:
    """float32 values covering every exponent field 0..255, both signs, random mantissas plus the edge mantissas."""
    rng = np.random.default_rng(seed)
    exps = np.repeat(np.arange(256, dtype=np.uint32), per_exponent)
    mant = rng.integers(0, 2**23, size=exps.size, dtype=np.uint32)
    edges = np.array([0, 1, 2**22 - 1, 2**22, 2**22 + 1, 2**23 - 1], np.uint32)
    mant[:: per_exponent // len(edges) if per_exponent >= len(edges) else 1][: len(edges) * 256] = np.tile(edges, 256)[
        : len(mant[:: per_exponent // len(edges)])
    ]
    bits = (exps << 23) | mant
    bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
    return bits.view(np.float32)


def boundaries(values: np.ndarray) -> np.ndarray:
    """Every finite grid value, the midpoints between neighbours, and the float32 neighbours of each midpoint."""
    v = np.unique(values[np.isfinite(values)].astype(np.float64))
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)
    pts = np.concatenate(
        [v.astype(np.float32), mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
    )
    top = v.max()
    beyond = np.array([min(top * 1.01, 3e38), min(top * 1.5, 3.4e38), np.inf, -np.inf, np.nan]).astype(np.float32)
    return np.concatenate([pts, -pts, beyond])

import math

import ml_dtypes
import numpy as np
import pytest

from core.numerics import FORMATS, get_format, make_format
from tests.core.numerics.reference import gfloat_info

# The formats' defining numbers: OCP 8-bit Floating Point Specification (OFP8) rev. 1.0 for E4M3/E5M2; Noune et al.
# 2022 (arXiv:2206.02915) for the Graphcore/fnuz 1.4.3 and 1.5.2 formats; IEEE 754-2019 for binary16.
SPEC = {
    "e4m3": (448.0, 2.0**-6, 2.0**-9, 0.125),
    "e5m2": (57344.0, 2.0**-14, 2.0**-16, 0.25),
    "e4m3fnuz": (240.0, 2.0**-7, 2.0**-10, 0.125),
    "e5m2fnuz": (57344.0, 2.0**-15, 2.0**-17, 0.25),
    "fp16": (65504.0, 2.0**-14, 2.0**-24, 2.0**-10),
}


@pytest.mark.parametrize("name", list(SPEC))
def test_spec_values(name):
    f = FORMATS[name]
    assert (f.max, f.smallest_normal, f.smallest_subnormal, f.eps) == SPEC[name]


@pytest.mark.parametrize("name", list(FORMATS))
def test_formats_agree_with_ml_dtypes_finfo(name):
    f = FORMATS[name]
    info = ml_dtypes.finfo(f.ml_dtype)
    assert f.max == float(info.max)
    assert f.smallest_normal == float(info.smallest_normal)
    assert f.smallest_subnormal == float(info.smallest_subnormal)
    assert f.eps == float(info.eps)
    assert f.bits == info.bits


def test_special_value_conventions():
    assert FORMATS["e5m2"].has_inf and not FORMATS["e4m3"].has_inf and not FORMATS["e4m3fnuz"].has_inf
    assert FORMATS["e4m3"].has_negative_zero and not FORMATS["e5m2fnuz"].has_negative_zero


CUSTOM = [
    make_format(4, 3, 11, special="fnuz"),
    make_format(4, 3, 4, special="fn"),
    make_format(5, 2, 12, special="ieee"),
    make_format(3, 4, special="ieee"),
    make_format(2, 5, 1, special="fnuz"),
    make_format(6, 1, 40, special="fn"),
    make_format(1, 6, 0, special="fnuz"),
]


@pytest.mark.parametrize("fmt", CUSTOM, ids=lambda f: f.name)
def test_custom_formats_agree_with_gfloat(fmt):
    info = gfloat_info(fmt)
    assert fmt.max == info.max
    assert fmt.smallest_normal == info.smallest_normal
    assert fmt.smallest_subnormal == info.smallest_subnormal
    assert fmt.eps == info.eps


def test_format_without_subnormals():
    # gfloat reads exponent field 0 of such a format as one more binade of normals; ours encodes only zero there
    # (flush-to-zero hardware), so the smallest positive value is the smallest normal.
    f = make_format(4, 3, 7, special="fn", subnormals=False)
    assert f.smallest_subnormal is None and f.smallest_positive == f.smallest_normal == 2.0**-6
    assert f.max == 448.0 and f.ml_dtype is None


def test_bias_sweep_is_one_line_each():
    sweep = [make_format(4, 3, bias, special="fnuz") for bias in range(4, 13)]
    assert [f.max for f in sweep] == [math.ldexp(1.875, 15 - b) for b in range(4, 13)]
    assert sweep[7].ml_dtype == np.dtype(ml_dtypes.float8_e4m3b11fnuz)
    assert make_format(4, 3, 9).ml_dtype is None


def test_formats_are_hashable_and_compare_by_value():
    assert make_format(4, 3, 7, special="fn", name="e4m3") == FORMATS["e4m3"]
    assert len({FORMATS["e4m3"], make_format(4, 3, 7, special="fn", name="e4m3")}) == 1


def test_get_format_accepts_names_formats_and_string_enums():
    import enum

    Name = enum.StrEnum("Name", {"e5m2": "e5m2"})
    assert get_format("e4m3") is FORMATS["e4m3"]
    assert get_format(FORMATS["bf16"]) is FORMATS["bf16"]
    assert get_format(Name.e5m2) is FORMATS["e5m2"]


def test_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match=r"unknown number format 'fp8': choose one of e4m3, e5m2, e4m3fnuz"):
        get_format("fp8")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 3, 0), {}, "exponent_bits must be an integer >= 1"),
        ((4, -1, 7), {}, "mantissa_bits must be an integer >= 0"),
        ((1, 3, 0), {"special": "ieee"}, "has no normal range"),
        ((4, 0, 7), {"special": "fn"}, "needs mantissa_bits >= 1"),
        ((4, 3, 7), {"special": "nope"}, "special must be one of ieee, fn, finite, fnuz"),
        ((4, 3, 200), {}, "below float32's range"),
        ((4, 3, -130), {}, "must fit in float32"),
        ((8, 24, 127), {}, "at most 32 allowed|must fit in float32"),
        ((4, 3, 2.5), {}, "bias must be an integer"),
    ],
)
def test_impossible_formats_are_rejected_with_the_reason(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_format(*args, **kwargs)

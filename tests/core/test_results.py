"""core.results: a paper's Results through JSON and back, exactly, as `make redecide` relies on. The reference for
"exactly" is the bit pattern (numpy's view of the values as integers), never a tolerance."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from core.io import json_text
from core.results import ResultsError, check_type, from_json, to_json


class Mode(enum.Enum):
    padded = "padded"
    packed = "packed"


@dataclass
class Arm:
    name: str
    seconds: list[float]
    curve: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Nested:
    arms: dict[str, Arm]
    by_seed: dict[int, float]
    by_cell: dict[tuple[str, int], float]
    values: np.ndarray
    mode: Mode
    maybe: float | None = None
    loss: float | str = "diverged"
    count: int | float = 3
    pair: tuple[int, str] = (1, "a")
    anything: object = None


def roundtrip(tp, value):
    data = json.loads(json_text(to_json(value)))  # through the text a record stores, as a reader gets it
    return from_json(tp, data)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return bool(np.array_equal(a.view(width), b.view(width)))
    return bool(np.array_equal(a, b))


FLOAT_DTYPES = st.sampled_from([np.float16, np.float32, np.float64])


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(FLOAT_DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements={"allow_nan": False}))
def test_float_arrays_come_back_bit_for_bit(a):
    back = roundtrip(np.ndarray, a)
    assert same_bits(a, back)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64, np.bool_]),
        hnp.array_shapes(min_dims=1, max_dims=2, max_side=5),
    )
)
def test_integer_and_boolean_arrays_keep_their_dtype(a):
    assert same_bits(a, roundtrip(np.ndarray, a))


def test_non_finite_floats_survive_in_fields_arrays_and_any():
    a = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32)
    back = roundtrip(np.ndarray, a)
    assert np.isnan(back[0]) and back[1] == np.inf and back[2] == -np.inf
    assert np.signbit(back[3]) and back[4] == np.float32(1e-45)
    assert math.isnan(roundtrip(float, float("nan"))) and roundtrip(float, -math.inf) == -math.inf
    assert roundtrip(object, {"x": [math.inf]})["x"][0] == math.inf
    json.loads(json_text(to_json([math.nan])), parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))


@settings(max_examples=100, deadline=None)
@given(st.floats(allow_nan=False), st.integers(-(2**70), 2**70))
def test_python_numbers_round_trip_and_keep_their_type(x, n):
    assert roundtrip(float, x) == x and math.copysign(1, roundtrip(float, x)) == math.copysign(1, x)
    assert roundtrip(int, n) == n and type(roundtrip(int | float, n)) is int
    assert type(roundtrip(float | int, n)) is int  # the stored kind picks the member of a union


def test_nested_dataclasses_dicts_tuples_unions_and_enums():
    value = Nested(
        arms={"fp8": Arm("fp8", [0.5, 0.25], [(10, 1.5), (20, 1.25)])},
        by_seed={0: 1.0, 3: 2.5},
        by_cell={("wiki", 12): 1.9934},
        values=np.arange(6, dtype=np.float32).reshape(2, 3),
        mode=Mode.packed,
        maybe=None,
        loss=1.25,
        anything={"a": [1, 2]},
    )
    back = roundtrip(Nested, value)
    assert back.arms == value.arms and back.by_seed == value.by_seed and back.by_cell == value.by_cell
    assert back.mode is Mode.packed and back.maybe is None and back.loss == 1.25 and back.pair == (1, "a")
    assert isinstance(back.arms["fp8"].curve[0], tuple) and same_bits(back.values, value.values)
    assert to_json(back) == to_json(value)
    assert roundtrip(Nested, Nested(**{**value.__dict__, "loss": "diverged"})).loss == "diverged"
    assert check_type(Nested) == []


def test_numpy_scalars_are_stored_as_numbers():
    assert to_json({"a": np.float32(0.1), "b": np.int64(3), "c": np.bool_(True)}) == {
        "a": float(np.float32(0.1)),
        "b": 3,
        "c": True,
    }
    assert roundtrip(float, np.float32(0.1)) == float(np.float32(0.1))


def test_what_has_no_json_form_is_named_with_where_it_is():
    with pytest.raises(ResultsError, match=r"results\['arms'\]\['x'\]: a set has no JSON form"):
        to_json({"arms": {"x": {1, 2}}})
    with pytest.raises(ResultsError, match="arrays of dtype complex64"):
        to_json(np.zeros(2, np.complex64))
    with pytest.raises(ResultsError, match="reserved"):
        to_json({"__ndarray__": 1})


def test_stored_data_that_does_not_fit_its_type_is_named():
    data = to_json(Arm("a", [1.0]))
    with pytest.raises(ResultsError, match=r"results\.seconds\[0\]: expected a float, got 'x'"):
        from_json(Arm, {**data, "seconds": ["x"]})
    with pytest.raises(ResultsError, match="Arm has no field"):
        from_json(Arm, {**data, "extra": 1})
    with pytest.raises(ResultsError, match="has no 'name'"):
        from_json(Arm, {"seconds": []})


def test_check_type_names_annotations_it_cannot_rebuild():
    @dataclass
    class Bad:
        ok: list[float]
        ref: set[int]

    assert check_type(Bad) == ["Results.ref: set[int]"]

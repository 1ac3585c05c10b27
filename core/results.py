"""A paper's Results as JSON and back: the typed record `run` returns and `decide` and `render` read.

    data = to_json(results)                  # plain JSON values (dicts, lists, numbers, strings, None)
    again = from_json(Results, data)          # the same Results, rebuilt from its type hints

A Results type is a dataclass whose fields are annotated with what this module can rebuild: bool, int, float, str,
None, `X | None` and other unions of these, list[X], tuple[X, ...], tuple[X, Y], dict[K, V] (any key type that
rebuilds from its text, or tuples), nested dataclasses, enums, numpy arrays (`np.ndarray`, dtype and shape kept) and
numpy scalars (as Python numbers). `Any` is allowed where a value is plain JSON or an array.

The round trip is exact: floats are written with Python's shortest repr (which reads back to the same float64, so a
float32 value cast back is the same float32), non-finite floats as {"__float__": "nan"}, arrays with their dtype
({"__ndarray__": {"dtype", "shape", "data"}}), and dicts whose keys are not all strings as {"__items__": [[k, v]]}.
The runner decides a run's claims from `from_json(to_json(results))`, so `make redecide` on the stored record gives
the same values as the run did.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from typing import Any

import numpy as np

_MARKERS = ("__float__", "__ndarray__", "__items__")


class ResultsError(TypeError):
    """A value that cannot be written as JSON, or stored data that does not fit its type; the message names where."""


def _float(x: float) -> Any:
    return x if math.isfinite(x) else {"__float__": repr(x)}


def to_json(value: Any, where: str = "results") -> Any:
    """`value` as plain JSON values (see the module's docstring); raise ResultsError naming the first value that has
    no JSON form."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return to_json(value.value, where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, np.generic):
        return to_json(value.item(), where)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise ResultsError(
                f"{where}: arrays of dtype {value.dtype} have no JSON form (bool, int, uint, float only)"
            )
        flat = value.ravel().tolist()
        if value.dtype.kind == "f":
            flat = [x if math.isfinite(x) else repr(x) for x in flat]
        return {"__ndarray__": {"dtype": value.dtype.str.lstrip("<>|="), "shape": list(value.shape), "data": flat}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            clash = [k for k in value if k in _MARKERS]
            if clash:
                raise ResultsError(f"{where}: the key {clash[0]!r} is reserved")
            return {k: to_json(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"__items__": [[to_json(k, f"{where} key"), to_json(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if hasattr(value, "__array__") and hasattr(value, "dtype"):  # a JAX array: stored as the numpy array it holds
        return to_json(np.asarray(value), where)
    raise ResultsError(
        f"{where}: a {type(value).__name__} has no JSON form; store numbers, text, arrays or dataclasses"
    )


def _decode_any(data: Any) -> Any:
    """Plain JSON with the markers turned back into floats, arrays and dicts (for fields typed Any)."""
    if isinstance(data, dict):
        if set(data) == {"__float__"}:
            return float(data["__float__"])
        if set(data) == {"__ndarray__"}:
            return _array(data["__ndarray__"])
        if set(data) == {"__items__"}:
            return {_hashable(_decode_any(k)): _decode_any(v) for k, v in data["__items__"]}
        return {k: _decode_any(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_decode_any(v) for v in data]
    return data


def _hashable(x: Any) -> Any:
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


def _array(spec: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(spec["dtype"])
    data = spec["data"]
    if dtype.kind == "f":
        data = [float(x) for x in data]  # "nan", "inf" and "-inf" as written
    return np.asarray(data, dtype=dtype).reshape(spec["shape"])


def from_json(tp: Any, data: Any, where: str = "results") -> Any:
    """Rebuild a value of type `tp` from `to_json`'s output; raise ResultsError naming where the data does not fit."""
    if tp is Any or tp is object:
        return _decode_any(data)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _union(args, data, where)
    if tp is type(None):
        if data is not None:
            raise ResultsError(f"{where}: expected null, got {data!r}")
        return None
    if tp is float:
        if isinstance(data, dict) and set(data) == {"__float__"}:
            return float(data["__float__"])
        if isinstance(data, int | float) and not isinstance(data, bool):
            return float(data)
        raise ResultsError(f"{where}: expected a float, got {data!r}")
    if tp is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        raise ResultsError(f"{where}: expected an int, got {data!r}")
    if tp is bool or tp is str:
        if type(data) is not tp:
            raise ResultsError(f"{where}: expected a {tp.__name__}, got {data!r}")
        return data
    if tp is np.ndarray or origin is np.ndarray:
        if not (isinstance(data, dict) and set(data) == {"__ndarray__"}):
            raise ResultsError(f"{where}: expected an array, got {str(data)[:80]}")
        return _array(data["__ndarray__"])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError as e:
            raise ResultsError(f"{where}: {e}") from None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, data, where)
    if origin in (list, tuple) or tp in (list, tuple):
        if not isinstance(data, list):
            raise ResultsError(f"{where}: expected a list, got {str(data)[:80]}")
        if origin is tuple or tp is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(from_json(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
            if args:
                if len(args) != len(data):
                    raise ResultsError(f"{where}: expected {len(args)} values, got {len(data)}")
                return tuple(from_json(t, v, f"{where}[{i}]") for i, (t, v) in enumerate(zip(args, data, strict=True)))
            return tuple(_decode_any(data))
        item = args[0] if args else Any
        return [from_json(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict or tp is dict:
        key_t, value_t = args if args else (Any, Any)
        if not isinstance(data, dict):
            raise ResultsError(f"{where}: expected an object, got {str(data)[:80]}")
        if set(data) == {"__items__"}:
            items = [(from_json(key_t, k, f"{where} key"), v) for k, v in data["__items__"]]
        else:
            items = [(_key(key_t, k, where), v) for k, v in data.items()]
        return {k: from_json(value_t, v, f"{where}[{k!r}]") for k, v in items}
    raise ResultsError(f"{where}: the type {tp!r} cannot be rebuilt from JSON (see core.results)")


def _key(tp: Any, text: str, where: str) -> Any:
    if tp in (Any, str) or (isinstance(tp, type) and issubclass(tp, str)):
        return tp(text) if isinstance(tp, type) and tp is not str else text
    if tp is int:
        return int(text)
    if tp is float:
        return float(text)
    raise ResultsError(f"{where}: dict keys of type {tp!r} are not stored as text")


def _union(args: tuple[Any, ...], data: Any, where: str) -> Any:
    if data is None:
        if type(None) in args:
            return None
        raise ResultsError(f"{where}: null is not one of {args}")
    errors = []
    # the member of the stored value's own kind first (an int stays an int in `float | int`), then the others in order
    exact = next((t for t in (bool, int, float, str) if type(data) is t and t in args), None)
    for t in ([exact] if exact else []) + [t for t in args if t is not exact]:
        if t is type(None):
            continue
        try:
            return from_json(t, data, where)
        except ResultsError as e:
            errors.append(str(e))
    raise ResultsError(f"{where}: {str(data)[:80]} fits none of {args}: {'; '.join(errors)}")


def _dataclass(tp: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ResultsError(f"{where}: expected an object for {tp.__name__}, got {str(data)[:80]}")
    hints = typing.get_type_hints(tp)
    fields = {f.name: f for f in dataclasses.fields(tp)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ResultsError(f"{where}: {tp.__name__} has no field(s) {', '.join(unknown)}")
    values, later = {}, {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ResultsError(f"{where}: the stored {tp.__name__} has no {name!r}")
            continue
        value = from_json(hints.get(name, Any), data[name], f"{where}.{name}")
        (values if f.init else later)[name] = value
    obj = tp(**values)
    for name, value in later.items():
        object.__setattr__(obj, name, value)
    return obj


def check_type(tp: Any, where: str = "Results") -> list[str]:
    """The annotations under dataclass `tp` that `from_json` cannot rebuild (empty when every field can be), so a
    paper's Results type is checked before any run stores one."""
    problems: list[str] = []
    seen: set[Any] = set()

    def visit(t: Any, at: str) -> None:
        if t in (Any, object, type(None), bool, int, float, str, np.ndarray, list, tuple, dict):
            return
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin is np.ndarray:
            return
        if isinstance(t, type) and issubclass(t, enum.Enum):
            return
        if isinstance(t, type) and dataclasses.is_dataclass(t):
            if t in seen:
                return
            seen.add(t)
            try:
                hints = typing.get_type_hints(t)
            except NameError as e:
                problems.append(f"{at}: {e}")
                return
            for f in dataclasses.fields(t):
                visit(hints.get(f.name, Any), f"{at}.{f.name}")
            return
        if origin in (typing.Union, types.UnionType, list, tuple, dict):
            for a in args:
                if a is not Ellipsis:
                    visit(a, at)
            if (
                origin is dict
                and args
                and args[0] not in (str, int, float, Any)
                and typing.get_origin(args[0]) is not tuple
            ):
                if not (isinstance(args[0], type) and issubclass(args[0], str)):
                    problems.append(f"{at}: dict keys of type {args[0]!r}")
            return
        problems.append(f"{at}: {t!r}")

    visit(tp, where)
    return problems

"""Cycle estimates of the lowering's elementwise vertices: poplibs' own, for the popops vertex each primitive becomes.

Source: graphcore/poplibs (the open half of Poplar's libraries), `lib/popops/popopsCycleEstimators.cpp` (the
UnaryOp2D / BinaryOp2D / Select estimators and the loop-cost helpers `unaryOpInnerLoopCycles`,
`binaryOpInnerLoopCycles`), their per-op tables `unaryOpPerfInfo` / `binaryOpPerfInfo` in
`lib/popops/popopsCycleEstimators.hpp`, and `castWorkerCycles` in `lib/popops/PerformanceEstimation.cpp`. Numbers
only are taken; the code is ours.

A worker vertex over one region of n elements costs, in one worker's thread cycles,
    unary:  20 + loop(n)        binary: 5 + loop(n)        select: 5 + 6 + 5 n        cast: 19 + 0.5 n (half <->
    float) or 19 + 2 n (other pairs)
where loop(n), from the op's table entry (c, natural, u): with natural vectors (64 bits: 4 halves, 2 floats or
ints) ceil(n / width) x (c + overhead), the overhead 2 for add, sub and mul on half or float (assembly codelets),
5 for other binary ops, 4 for unary ops; unrolled, ceil(n / u) x c. A worker issues one instruction every
`workers` tile cycles, so a vertex holds its worker for `workers` x its thread cycles of tile time.

Primitives poplibs has no table entry for (erf_inv, cbrt, the inverse and hyperbolic trigonometric functions) are
charged as `pow`, its costliest per-element entry that is not sin/cos: an assumption, said so in
ipu_model/README.md.
"""

from __future__ import annotations

import math

import numpy as np

# (cycles, natural vector, unroll) per (float or int, half) from poplibs' tables; natural=True: c per 64-bit vector
# plus the loop overhead; natural=False: c cycles per `unroll` elements
_ENTRY = tuple[int, bool, int]
_TABLE: dict[str, tuple[_ENTRY, _ENTRY]] = {
    "add": ((1, True, 1), (1, True, 1)),
    "sub": ((1, True, 1), (1, True, 1)),
    "mul": ((1, True, 1), (1, True, 1)),
    "div": ((10, False, 2), (21, False, 4)),
    "max": ((3, False, 2), (4, False, 4)),
    "min": ((3, False, 2), (4, False, 4)),
    "pow": ((312, False, 1), (325, False, 1)),
    "rem": ((133, False, 2), (300, False, 4)),
    "atan2": ((272, False, 2), (578, False, 4)),
    "lt": ((14, False, 4), (9, False, 4)),
    "le": ((14, False, 4), (9, False, 4)),
    "gt": ((14, False, 4), (9, False, 4)),
    "ge": ((14, False, 4), (9, False, 4)),
    "eq": ((14, False, 4), (9, False, 4)),
    "ne": ((20, False, 4), (11, False, 4)),
    "and": ((5, False, 4), (5, False, 4)),
    "or": ((5, False, 4), (5, False, 4)),
    "xor": ((5, False, 4), (5, False, 4)),
    "not": ((5, False, 4), (5, False, 4)),
    "exp": ((6, False, 2), (4, False, 4)),
    "exp2": ((6, False, 2), (4, False, 4)),  # as exp (no entry of its own)
    "log": ((12, False, 2), (4, False, 4)),
    "log1p": ((18, True, 1), (18, True, 1)),
    "expm1": ((4, False, 0), (5, True, 1)),  # unroll 0: one element per iteration plus the overhead
    "tanh": ((12, False, 2), (4, False, 4)),
    "logistic": ((12, False, 2), (6, False, 4)),
    "sqrt": ((10, False, 2), (23, False, 4)),
    "rsqrt": ((8, False, 2), (19, False, 4)),
    "neg": ((2, False, 2), (2, False, 4)),
    "square": ((2, False, 2), (2, False, 4)),
    "abs": ((1, False, 0), (1, False, 0)),
    "floor": ((2, True, 1), (2, True, 1)),
    "ceil": ((2, True, 1), (2, True, 1)),
    "round": ((2, True, 1), (2, True, 1)),
    "sign": ((4, True, 1), (4, True, 1)),
    "is_finite": ((4, True, 1), (4, True, 1)),
    "sin": ((2300, False, 1), (25, False, 1)),
    "cos": ((2300, False, 1), (25, False, 1)),
    "tan": ((5100, False, 1), (5700, False, 1)),
    "erf": ((41, False, 1), (13, False, 1)),
}
_INT: dict[str, _ENTRY] = {  # integer entries where poplibs gives its own
    "add": (7, False, 1),
    "sub": (7, False, 1),
    "mul": (7, False, 1),
    "div": (277, False, 1),
    "rem": (277, False, 1),
    "sqrt": (110, False, 1),
    **dict.fromkeys(("lt", "le", "gt", "ge", "eq", "ne"), (24, False, 4)),
}
# primitives charged as another's entry: add_any is add; the shifts as an integer add (poplibs' SHIFT_LEFT,
# SHIFT_RIGHT and SHIFT_RIGHT_SIGN_EXTEND entries were not transcribed: an assumption)
ALIASES = {"add_any": "add", "shift_left": "add", "shift_right_logical": "add", "shift_right_arithmetic": "add"}
UNTABLED = ("erfc", "erf_inv", "cbrt", "atan", "asin", "acos", "sinh", "cosh")  # charged as pow
BINARY = {"add", "add_any", "shift_left", "shift_right_logical", "shift_right_arithmetic", "sub", "mul", "div", "max",
          "min", "pow", "rem", "atan2", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor"}  # fmt: skip


def _loop(entry: _ENTRY, n: int, width: int, overhead: int) -> int:
    c, natural, unroll = entry
    if natural:
        return math.ceil(n / width) * (c + overhead)
    if unroll == 0:  # one element per iteration, plus the overhead
        return n * (c + overhead)
    return math.ceil(n / unroll) * c


def thread_cycles(name: str, params: dict, in_dtype: str, out_dtype: str, n: int, arity: int) -> int:
    """One worker's thread cycles for a vertex applying primitive `name` to one region of `n` elements."""
    dt, out = np.dtype(in_dtype), np.dtype(out_dtype)
    if name in ("convert_element_type", "reduce_precision"):
        floats = {dt.name, out.name} <= {"float16", "float32"}
        return int(19 + (0.5 if floats and dt != out else 2) * n)
    if name == "select_n":
        return max(arity - 2, 1) * (5 + 6 + 5 * n)  # one select per case beyond the first
    if name == "clamp":  # max then min
        return 2 * thread_cycles("max", {}, in_dtype, out_dtype, n, 2)
    if name == "integer_pow":
        y = abs(int(params.get("y", 2)))
        squares = max(y.bit_length() - 1, 0) + max(bin(y).count("1") - 1, 0)  # multiplies by squaring
        return max(squares, 1) * thread_cycles("mul", {}, in_dtype, out_dtype, n, 2)
    if name == "bitcast_convert_type":  # a reinterpretation poplibs does as a copy: 2 elements every 2 cycles
        return 5 + math.ceil(n / 2) * 2
    half = dt == np.float16
    key = "pow" if name in UNTABLED else ALIASES.get(name, name)
    entry = _INT.get(key) if dt.kind in "iub" and key in _INT else _TABLE[key][1 if half else 0]
    width = 8 // max(dt.itemsize, 2) if dt.kind == "f" else 2  # 64-bit vectors: 4 halves, 2 floats or ints
    binary = key in BINARY
    overhead = (2 if key in ("add", "sub", "mul") and dt.kind == "f" else 5) if binary else 4
    return (5 if binary else 20) + _loop(entry, n, width, overhead)


def vertex_cycles(device, name: str, params: dict, in_dtype: str, out_dtype: str, n: int, arity: int) -> float:
    """Tile cycles a worker is held by the vertex: `workers` x its thread cycles (the barrel-threaded tile gives
    each worker one issue slot in `workers`)."""
    return float(device.workers * thread_cycles(name, params, in_dtype, out_dtype, n, arity))

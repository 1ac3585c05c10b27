"""xoroshiro128aox, the IPU's hardware PRNG (Hanlon & Felix, Graphcore 2022), and xoroshiro128+ for comparison.

Both share the xoroshiro128 state update with the 2016 rotation/shift constants a=55, b=14, c=36:

    sx = s0 ^ s1
    s0 <- rotl(s0, 55) ^ sx ^ (sx << 14)
    s1 <- rotl(sx, 36)

and differ in the output function, computed from the state *before* the update:

    xoroshiro128+:   out = s0 + s1  (a 64-bit adder)
    xoroshiro128aox: out = sx ^ (rotl(sa, 1) | rotl(sa, 2)),  sa = s0 & s1
                     (bit i = x_i XOR (a_{i-1} OR a_{i-2}): an addition whose carry chain is cut after two bits)

Everything here is vectorised over many independent streams: `s0`, `s1` are arrays of any shape (one stream per
element) and `n` outputs are drawn per stream.
"""

from __future__ import annotations

import numpy as np

A, B, C = 55, 14, 36
# x^(2^64) modulo the characteristic polynomial of the 55/14/36 update: the jump by 2^64 steps. It is derived
# (and tested) by linear algebra over GF(2) from the update itself. Note: {0xdf900294d8f554a5, 0x170865df4b3201fc},
# often quoted for xoroshiro128 (and in our refs), is the jump of the 2018 24/16/37 constants, not of the IPU's.
JUMP_2_64 = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)
MASK64 = (1 << 64) - 1
OUTPUTS = ("aox", "plus")

_U64 = np.uint64


def _rotl(x: np.ndarray, k: int) -> np.ndarray:
    return (x << _U64(k)) | (x >> _U64(64 - k))


def aox_output(s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    sx, sa = s0 ^ s1, s0 & s1
    return sx ^ (_rotl(sa, 1) | _rotl(sa, 2))


def plus_output(s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    return s0 + s1  # uint64 arithmetic wraps modulo 2^64


def next_state(s0: np.ndarray, s1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sx = s0 ^ s1
    return _rotl(s0, A) ^ sx ^ (sx << _U64(B)), _rotl(sx, C)


def as_state(s0, s1) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert a state (Python ints or integer arrays of one shape) to uint64 arrays."""
    words = []
    for name, value in (("s0", s0), ("s1", s1)):
        if isinstance(value, int | np.integer):
            if not 0 <= int(value) <= MASK64:
                raise ValueError(f"{name}={value} is outside 64 bits: allowed 0 <= {name} < 2^64")
            words.append(np.asarray(int(value), dtype=np.uint64))
            continue
        arr = np.asarray(value)
        if arr.dtype.kind not in "ui" and arr.dtype != object:
            raise TypeError(f"{name} must be integers (Python ints or a uint64 array), got dtype {arr.dtype}")
        if arr.dtype.kind == "i" and (arr < 0).any():
            raise ValueError(f"{name} has negative entries: allowed 0 <= {name} < 2^64")
        if arr.dtype == object:
            if any(not 0 <= int(v) <= MASK64 for v in arr.ravel()):
                raise ValueError(f"{name} has entries outside 64 bits: allowed 0 <= {name} < 2^64")
        words.append(arr.astype(np.uint64))
    s0, s1 = words
    if s0.shape != s1.shape:
        raise ValueError(f"s0 and s1 must have the same shape, got {s0.shape} and {s1.shape}")
    if ((s0 == 0) & (s1 == 0)).any():
        raise ValueError("state (0, 0) is a fixed point of xoroshiro128 (it outputs zeros forever): seed differently")
    return s0, s1


def _run(s0, s1, n: int, output: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(outputs of shape s0.shape + (n,), final s0, final s1)."""
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    s0, s1 = as_state(s0, s1)
    out_fn = aox_output if output == "aox" else plus_output
    out = np.empty((*s0.shape, int(n)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(int(n)):
            out[..., i] = out_fn(s0, s1)
            s0, s1 = next_state(s0, s1)
    return out, s0, s1


def draw(s0, s1, n: int, output: str = "aox") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`n` outputs per stream and the streams' next state: (uint64 outputs of shape s0.shape + (n,), s0, s1)."""
    return _run(s0, s1, n, output)


def generate(s0, s1, n: int, output: str = "aox") -> np.ndarray:
    """`n` outputs per stream: uint64 of shape s0.shape + (n,)."""
    return _run(s0, s1, n, output)[0]


def aox_generate(s0, s1, n: int) -> np.ndarray:
    """xoroshiro128aox: `n` outputs per stream, bit-exact with the reference definition."""
    return generate(s0, s1, n, "aox")


def plus_generate(s0, s1, n: int) -> np.ndarray:
    """xoroshiro128+: `n` outputs per stream."""
    return generate(s0, s1, n, "plus")


def advance(s0, s1, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The state after `steps` updates (a loop: for short distances; use jump() for 2^64)."""
    s0, s1 = as_state(s0, s1)
    for _ in range(int(steps)):
        s0, s1 = next_state(s0, s1)
    return s0, s1


def jump(s0, s1, polynomial: tuple[int, int] = JUMP_2_64) -> tuple[np.ndarray, np.ndarray]:
    """The state 2^64 steps ahead (for the default polynomial): non-overlapping streams from one seed.

    The jump multiplies the state by x^(2^64) modulo the generator's characteristic polynomial: the new state is
    the XOR of the states at the steps whose bit is set in the polynomial (Blackman & Vigna's method).
    """
    s0, s1 = as_state(s0, s1)
    acc0 = np.zeros_like(s0)
    acc1 = np.zeros_like(s1)
    for word in polynomial:
        for bit in range(64):
            if (word >> bit) & 1:
                acc0 ^= s0
                acc1 ^= s1
            s0, s1 = next_state(s0, s1)
    return acc0, acc1


class Xoroshiro128:
    """A stateful generator over many streams (numpy): `Xoroshiro128(s0, s1).next_raw(n)`."""

    def __init__(self, s0, s1, output: str = "aox"):
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        self.s0, self.s1 = as_state(s0, s1)
        self.output = output

    @property
    def state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.s0.copy(), self.s1.copy()

    def next_raw(self, n: int) -> np.ndarray:
        """The next `n` outputs of every stream, shape streams + (n,)."""
        out, self.s0, self.s1 = _run(self.s0, self.s1, n, self.output)
        return out

    def jump(self) -> Xoroshiro128:
        self.s0, self.s1 = jump(self.s0, self.s1)
        return self

"""Logic cost of the two generators, xoroshiro128aox and xoroshiro128+, from netlists of library cells.

The paper counts synthesised standard cells of each whole generator, state update and output function apart
(papers/prng/REFERENCES.md, PRNG-CELLS: state update 331 cells in both, output 353 for AOX and 906 for the 64-bit
adder; totals 684 and 1237). A synthesiser maps logic onto a cell library, and how it maps decides the count, so
here each netlist is counted under every `Mapping` of three choices a synthesiser makes and the paper does not
report: whether complex cells are used (AO21 = a | (b & c), AO22 = (a & b) | (c & d), XOR3, one cell each) or every
two-input gate is a cell; whether the output register exists (64 flip-flops); whether the output reuses the state
update's s0 ^ s1. Flip-flops are one cell each; rotations and shifts are wiring. Buffers, inverters and drive
strengths, which placement and routing add, are not modelled.

Every netlist evaluates on bits as well as counting them (`Circuit`), so the tests check that each computes the
function it stands for (core.random's output functions and state update, 64-bit addition).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papers.prng.paper import MAPPINGS
from papers.prng.results import Cost, Gates, Mapping, MappingCells

WIDTH = 64
ADDERS = ("kogge_stone", "ripple")


@dataclass(frozen=True)
class Wire:
    bits: np.ndarray  # bool, one entry per test vector
    depth: int  # cells on the longest path from an input


class Circuit:
    """Counts cells and logic levels while computing each wire's value on a batch of test vectors."""

    def __init__(self, complex_cells: bool):
        self.complex_cells = complex_cells
        self.cells = 0
        self.flops = 0

    def _cell(self, bits: np.ndarray, *inputs: Wire) -> Wire:
        self.cells += 1
        return Wire(bits, 1 + max(w.depth for w in inputs))

    def xor(self, a: Wire, b: Wire) -> Wire:
        return self._cell(a.bits ^ b.bits, a, b)

    def and_(self, a: Wire, b: Wire) -> Wire:
        return self._cell(a.bits & b.bits, a, b)

    def or_(self, a: Wire, b: Wire) -> Wire:
        return self._cell(a.bits | b.bits, a, b)

    def xor3(self, a: Wire, b: Wire, c: Wire) -> Wire:
        if self.complex_cells:
            return self._cell(a.bits ^ b.bits ^ c.bits, a, b, c)
        return self.xor(self.xor(a, b), c)

    def ao21(self, a: Wire, b: Wire, c: Wire) -> Wire:
        """a | (b & c): the carry operator of a prefix adder."""
        if self.complex_cells:
            return self._cell(a.bits | (b.bits & c.bits), a, b, c)
        return self.or_(a, self.and_(b, c))

    def ao22(self, a: Wire, b: Wire, c: Wire, d: Wire) -> Wire:
        """(a & b) | (c & d)."""
        if self.complex_cells:
            return self._cell((a.bits & b.bits) | (c.bits & d.bits), a, b, c, d)
        return self.or_(self.and_(a, b), self.and_(c, d))

    def register(self, word: list[Wire]) -> list[Wire]:
        """Flip-flops: one cell each; a register starts a new timing path."""
        self.flops += len(word)
        return [Wire(w.bits, 0) for w in word]

    def total(self) -> int:
        return self.cells + self.flops


def word_bits(words: np.ndarray) -> list[Wire]:
    """uint64 test vectors [n] -> 64 input wires, bit 0 first."""
    return [Wire(((words >> np.uint64(i)) & np.uint64(1)).astype(bool), 0) for i in range(WIDTH)]


def word_value(wires: list[Wire]) -> np.ndarray:
    """64 wires -> the uint64 words they carry."""
    out = np.zeros(wires[0].bits.shape, np.uint64)
    for i, w in enumerate(wires):
        out |= w.bits.astype(np.uint64) << np.uint64(i)
    return out


def depth(wires: list[Wire]) -> int:
    return max(w.depth for w in wires)


def x_word(c: Circuit, s0: list[Wire], s1: list[Wire]) -> list[Wire]:
    return [c.xor(a, b) for a, b in zip(s0, s1, strict=True)]


def state_update(c: Circuit, s0: list[Wire], s1: list[Wire], x: list[Wire]) -> tuple[list[Wire], list[Wire]]:
    """xoroshiro128 (55, 14, 36): s0' = rotl(s0, 55) ^ x ^ (x << 14), s1' = rotl(x, 36), x = s0 ^ s1; both words
    registered."""
    new0 = []
    for i in range(WIDTH):
        rot = s0[(i - 55) % WIDTH]
        new0.append(c.xor(rot, x[i]) if i < 14 else c.xor3(rot, x[i], x[i - 14]))
    new1 = [x[(i - 36) % WIDTH] for i in range(WIDTH)]
    return c.register(new0), c.register(new1)


def aox_output(c: Circuit, s0: list[Wire], s1: list[Wire], x: list[Wire] | None) -> list[Wire]:
    """out_i = x_i ^ (a_{i-1} | a_{i-2}), a = s0 & s1, x = s0 ^ s1 (x given: shared with the state update)."""
    if c.complex_cells:  # a_{i-1} | a_{i-2} is one AO22 of the four input bits; x_i ^ o_i one XOR (or XOR3)
        o = [c.ao22(s0[i - 1], s1[i - 1], s0[i - 2], s1[i - 2]) for i in range(WIDTH)]
        if x is None:
            return [c.xor3(s0[i], s1[i], o[i]) for i in range(WIDTH)]
        return [c.xor(x[i], o[i]) for i in range(WIDTH)]
    x = x if x is not None else x_word(c, s0, s1)
    a = [c.and_(p, q) for p, q in zip(s0, s1, strict=True)]
    return [c.xor(x[i], c.or_(a[i - 1], a[i - 2])) for i in range(WIDTH)]


def adder_output(c: Circuit, s0: list[Wire], s1: list[Wire], x: list[Wire] | None, kind: str) -> list[Wire]:
    """s0 + s1 mod 2^64 (xoroshiro128+'s output): the propagate bits are x = s0 ^ s1. `kind`: kogge_stone (the
    parallel-prefix carry network of a one-cycle design) or ripple (a chain of carries)."""
    if kind not in ADDERS:
        raise ValueError(f"adder kind {kind!r} is not one of {ADDERS}")
    p = x if x is not None else x_word(c, s0, s1)
    g = [c.and_(a, b) for a, b in zip(s0[: WIDTH - 1], s1[: WIDTH - 1], strict=True)]  # the top bit's is unused
    if kind == "ripple":
        carry = [g[0]]  # carry out of bit i
        for i in range(1, WIDTH - 1):
            carry.append(c.ao21(g[i], p[i], carry[i - 1]))
    else:
        big_g, big_p, d = list(g), list(p[: WIDTH - 1]), 1
        while d < WIDTH - 1:
            new_g, new_p = list(big_g), list(big_p)
            for i in range(d, WIDTH - 1):
                new_g[i] = c.ao21(big_g[i], big_p[i], big_g[i - d])
                if 2 * d < WIDTH - 1 and i >= 2 * d - 1:  # a group propagate is needed by a later level only
                    new_p[i] = c.and_(big_p[i], big_p[i - d])
            big_g, big_p, d = new_g, new_p, 2 * d
        carry = big_g
    return [p[0]] + [c.xor(p[i], carry[i - 1]) for i in range(1, WIDTH)]


def generator_cost(output: str, mapping: Mapping, adder: str = "kogge_stone") -> Cost:
    """Cells of the whole generator with output function `output` ('aox' or 'plus') under `mapping`."""
    if output not in ("aox", "plus"):
        raise ValueError(f"output {output!r} is not one of ('aox', 'plus')")
    c = Circuit(mapping.complex_cells)
    zero = np.zeros(1, np.uint64)
    s0, s1 = word_bits(zero), word_bits(zero)
    x = x_word(c, s0, s1)
    state_update(c, s0, s1, x)
    state = c.total()
    c = Circuit(mapping.complex_cells)  # the output block on its own, as the paper reports it
    shared = x if mapping.shared_x else None
    out = aox_output(c, s0, s1, shared) if output == "aox" else adder_output(c, s0, s1, shared, adder)
    if mapping.registered_output:
        c.register(out)
    return Cost(state, c.total(), depth(out))


def cell_ratios(adder: str = "kogge_stone") -> dict[Mapping, float]:
    """AOX generator cells over xoroshiro128+ generator cells, per mapping."""
    return {m: generator_cost("aox", m).total / generator_cost("plus", m, adder).total for m in MAPPINGS}


def gate_counts() -> dict[str, dict[str, int]]:
    """Two-input gates and logic depth of each output function alone (s0 ^ s1 computed inside, no register)."""
    zero = np.zeros(1, np.uint64)
    out = {}
    for name in ("aox", *ADDERS):
        c = Circuit(complex_cells=False)
        s0, s1 = word_bits(zero), word_bits(zero)
        wires = aox_output(c, s0, s1, None) if name == "aox" else adder_output(c, s0, s1, None, name)
        out[name] = {"gates": c.total(), "depth": depth(wires)}
    return out


def mapping_cells() -> list[MappingCells]:
    """The cells of both whole generators under every mapping (in MAPPINGS' order): what a run stores for the
    cell claim and the cost table."""
    return [
        MappingCells(m, generator_cost("aox", m), generator_cost("plus", m), generator_cost("plus", m, "ripple"))
        for m in MAPPINGS
    ]


def output_gates() -> dict[str, Gates]:
    """`gate_counts` as the Results store it: the output functions alone, in two-input gates."""
    return {name: Gates(**counts) for name, counts in gate_counts().items()}

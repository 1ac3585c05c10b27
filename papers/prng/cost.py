"""Logic cost of the output functions, from small netlists of two-input gates (rotations and shifts are wiring).

The paper compares synthesised cell counts (684 for the AOX output vs 1237 for xoroshiro128+'s 64-bit adder;
papers/prng/REFERENCES.md, PRNG-CELLS); here the same comparison is made with textbook circuits so that the count
can be checked by reading the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WIDTH = 64


@dataclass
class Netlist:
    gates: int = 0
    depth_of: dict[int, int] = field(default_factory=dict)
    _next: int = 0

    def input(self) -> int:
        self._next += 1
        self.depth_of[self._next] = 0
        return self._next

    def gate(self, a: int, b: int) -> int:
        self.gates += 1
        self._next += 1
        self.depth_of[self._next] = max(self.depth_of[a], self.depth_of[b]) + 1
        return self._next

    def word(self) -> list[int]:
        """A 64-bit input word."""
        return [self.input() for _ in range(WIDTH)]

    def bitwise(self, a: list[int], b: list[int], width: int = WIDTH) -> list[int]:
        """One gate per bit position (XOR, AND or OR alike: only the count and the depth matter)."""
        return [self.gate(a[i], b[i]) for i in range(width)]

    def depth(self, nodes: list[int]) -> int:
        return max(self.depth_of[n] for n in nodes)


def aox_netlist() -> tuple[int, int]:
    """out_i = (s0_i ^ s1_i) ^ ((a_{i-1}) | (a_{i-2})), a = s0 & s1."""
    n = Netlist()
    s0, s1 = n.word(), n.word()
    x, a = n.bitwise(s0, s1), n.bitwise(s0, s1)
    o = [n.gate(a[(i - 1) % WIDTH], a[(i - 2) % WIDTH]) for i in range(WIDTH)]
    out = n.bitwise(x, o)
    return n.gates, n.depth(out)


def ripple_adder_netlist() -> tuple[int, int]:
    """s = a + b mod 2^64 with a ripple of full adders (no carry out of the top bit)."""
    n = Netlist()
    a, b = n.word(), n.word()
    p = n.bitwise(a, b)
    out = [p[0]]
    carry = n.gate(a[0], b[0])
    for i in range(1, WIDTH):
        out.append(n.gate(p[i], carry))
        if i < WIDTH - 1:
            g = n.gate(a[i], b[i])
            carry = n.gate(g, n.gate(p[i], carry))
    return n.gates, n.depth(out)


def kogge_stone_netlist() -> tuple[int, int]:
    """s = a + b mod 2^64 with a Kogge-Stone parallel-prefix carry network (the fast adder of a one-cycle design)."""
    n = Netlist()
    a, b = n.word(), n.word()
    p = n.bitwise(a, b)
    g = n.bitwise(a, b, WIDTH - 1)  # the top bit's generate is never used
    big_g, big_p = list(g), list(p[: WIDTH - 1])
    d = 1
    while d < WIDTH - 1:
        new_g, new_p = list(big_g), list(big_p)
        for i in range(d, WIDTH - 1):
            new_g[i] = n.gate(big_g[i], n.gate(big_p[i], big_g[i - d]))
            if 2 * d < WIDTH - 1 and i >= 2 * d - 1:  # a group propagate is needed by a later level only
                new_p[i] = n.gate(big_p[i], big_p[i - d])
        big_g, big_p, d = new_g, new_p, 2 * d
    out = [p[0]] + [n.gate(p[i], big_g[i - 1]) for i in range(1, WIDTH)]
    return n.gates, n.depth(out)


def gate_counts() -> dict[str, dict[str, int]]:
    return {
        name: dict(zip(("gates", "depth"), fn(), strict=True))
        for name, fn in (("aox", aox_netlist), ("ripple", ripple_adder_netlist), ("kogge_stone", kogge_stone_netlist))
    }

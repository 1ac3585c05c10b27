"""What a PRNG run computes (the Results `run` returns and `decide` and `render` read): the battery's p-values per
bit on every generator's stream of every seed (with dieharder's p-values where it ran), the battery on the
jax.random streams, and the cells of both generators' netlists under each technology mapping with the two-input
gates of the output functions alone. No JAX here: the decision and the report import this module.

Size: one stream's battery is four arrays of 64 values and two p-values (about 3.5 kB of JSON), so the default run
(4 generators x 3 seeds and 6 jax.random constructions) stores about 65 kB and the full scale (10 seeds) about
165 kB; the netlist counts add 2 kB. (The mean rank deficit per bit, which the battery also returns, is not stored:
no claim or table reads it.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Mapping:
    """One way a synthesiser could map the netlists onto cells (papers.prng.cost)."""

    complex_cells: bool  # AO21 / AO22 / XOR3 are one cell; otherwise each two-input gate is one
    shared_x: bool  # the output function reuses the state update's s0 ^ s1
    registered_output: bool  # a 64-bit output register

    def __str__(self) -> str:
        return ", ".join(
            (
                "complex cells" if self.complex_cells else "two-input cells",
                "s0 ^ s1 shared" if self.shared_x else "s0 ^ s1 apart",
                "output registered" if self.registered_output else "output unregistered",
            )
        )

    @property
    def key(self) -> str:
        """The mapping as a name of estimates: 'two-input-apart-unregistered', 'complex-shared-registered', ..."""
        return "-".join(
            (
                "complex" if self.complex_cells else "two-input",
                "shared" if self.shared_x else "apart",
                "registered" if self.registered_output else "unregistered",
            )
        )


@dataclass(frozen=True)
class Cost:
    """Cells of one generator under one mapping, split as the paper splits them."""

    state: int
    output: int
    output_depth: int

    @property
    def total(self) -> int:
        return self.state + self.output


@dataclass
class MappingCells:
    """The cells of both generators under one mapping: AOX, and xoroshiro128+ with each 64-bit adder."""

    mapping: Mapping
    aox: Cost
    plus: Cost  # Kogge-Stone adder (a one-cycle design): the claim's
    plus_ripple: Cost  # ripple-carry adder (the cheapest): the cost table's last column


@dataclass
class Gates:
    """Two-input gates and logic depth of one output function alone (s0 ^ s1 inside, no register)."""

    gates: int
    depth: int


@dataclass
class Battery:
    """The battery (papers.prng.battery) on one stream of 64-bit words: p-values per bit (arrays of 64, bit 0
    first) or per stream."""

    rank_p: np.ndarray  # binary matrix rank, per bit
    lc_p: np.ndarray  # linear complexity, per bit
    lc: np.ndarray  # the linear complexity itself, per bit (int64)
    hw_p: float  # Hamming-weight dependency of consecutive outputs
    monobit_p: np.ndarray  # frequency of ones, per bit
    byte_p: float  # byte frequency


@dataclass
class Stream:
    """One generator's stream of one seed: the battery on it, and dieharder's p-values per test number (None where
    dieharder was not asked for or is not installed)."""

    seed: int
    battery: Battery
    dieharder: dict[int, float] | None = None


@dataclass
class Results:
    streams: dict[str, list[Stream]]  # generator -> one per seed, in the config's order
    jax_streams: dict[str, Battery]  # jax.random construction (papers.prng.jax_streams) -> the battery on it
    jax_seed: int | None  # the seed the jax.random streams were drawn from (the first; None without seeds)
    cells: list[MappingCells] = field(default_factory=list)  # in the order of papers.prng.paper.MAPPINGS
    gates: dict[str, Gates] = field(default_factory=dict)  # "aox", "kogge_stone", "ripple"

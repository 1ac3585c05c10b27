"""The `prng` config section (`prng.<key>=<value>`): its defaults are the default scale's."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import check_choice, check_range
from papers.prng.paper import GENERATORS


@dataclass
class Config:
    generators: list[str] = field(default_factory=lambda: list(GENERATORS))
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])
    outputs: int = 1 << 20  # 64-bit outputs per (generator, seed)
    rank_size: int = 256  # n of the n x n matrices of the rank test
    lc_bits: int = 1000  # sequence length of the linear-complexity test
    dieharder: bool = False  # run the subset when `dieharder` is installed; skipped with a notice otherwise

    def __post_init__(self) -> None:
        for g in self.generators:
            check_choice("generators", g, GENERATORS)
        check_range("rank_size", self.rank_size, ge=8, le=1024)
        check_range("lc_bits", self.lc_bits, ge=64, le=100_000)
        check_range("outputs", self.outputs, ge=self.rank_size**2, le=1 << 28)
        for s in self.seeds:
            check_range("seeds", s, ge=0, lt=2**63)

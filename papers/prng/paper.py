"""What the run, the claims and the report share, without JAX: the generators' labels, the dieharder subset, the
technology mappings the netlists are counted under, the jax.random constructions with their labels, and the paper's
cell counts (papers/prng/REFERENCES.md)."""

from __future__ import annotations

import itertools

from papers.prng.results import Mapping

LABELS = {"aox": "xoroshiro128aox", "plus": "xoroshiro128+", "pcg64": "numpy PCG64", "philox": "numpy Philox"}
GENERATORS = tuple(LABELS)

# a short, documented dieharder subset (test numbers of `dieharder -l`): birthdays, 32x32 rank, 6x8 rank, bitstream
# (papers/prng/REFERENCES.md, DIEHARDER)
DIEHARDER_TESTS = (0, 2, 3, 4)

# every mapping of the three choices a synthesiser makes and the paper does not report (papers.prng.cost)
MAPPINGS = tuple(Mapping(*flags) for flags in itertools.product((False, True), repeat=3))

# the keys papers.prng.jax_streams derives for the battery on jax.random streams, with the report's labels
CHILDREN = 1024  # keys per construction (but split(key, 2)): 32 x 32 for split of split
CONSTRUCTIONS = {
    "lanes": "bits(key, (n,)): one key, its 1024 lanes interleaved by construction",
    "split-2": "split(key, 2): the two children interleaved",
    "split": f"split(key, {CHILDREN}): the children interleaved",
    "fold-in": f"fold_in(key, i) for i < {CHILDREN}, interleaved",
    "split-of-split": "split(split(key, 32)[a], 32)[b]: the 1024 grandchildren interleaved (a major)",
    "chain": f"key, sub = split(key), {CHILDREN} times: the subkeys interleaved",
}

# synthesised standard cells of each generator, state update and output apart (REFERENCES.md, PRNG-CELLS)
PAPER_CELLS = {
    "aox": {"state": 331, "output": 353, "total": 684},
    "plus": {"state": 331, "output": 906, "total": 1237},
}
PAPER_CELL_RATIO = PAPER_CELLS["aox"]["total"] / PAPER_CELLS["plus"]["total"]  # 0.553

"""The paper's packing table: efficiency, speed-up and run time of SPFHP, LPFHP and NNLSHP on the published length
histograms, next to the paper's figures."""

from __future__ import annotations

from core.packing import pack_histogram, published_histogram, speedup_bound
from papers.packing.results import Cell

# Krell et al. 2021 (papers/packing/REFERENCES.md): (histogram, method, max sequences per pack) -> (efficiency %,
# speed-up), as printed in the paper, so that ours can be compared to the published digits.
PUBLISHED: dict[tuple[str, str, int], tuple[str, str]] = {
    ("wikipedia_512", "spfhp", 12): ("99.604", "1.99340"),
    ("wikipedia_512", "lpfhp", 12): ("99.813", "1.99758"),
    ("wikipedia_512", "nnlshp", 3): ("99.75", "1.99625"),
    ("squad_1_1_384", "spfhp", 3): ("97.55", "2.177"),
}
PUBLISHED_BOUND = {"wikipedia_512": "2.0013", "squad_1_1_384": "2.232"}
# the paper's run times on its own hardware (REFERENCES.md): context beside ours, never a claim or a ratio
PUBLISHED_SECONDS = {("wikipedia_512", "spfhp", 12): 0.02, ("wikipedia_512", "nnlshp", 3): 28.4}
LABELS = {"wikipedia_512": "Wikipedia, L=512", "squad_1_1_384": "SQuAD 1.1, L=384"}


def published(cell: Cell) -> tuple[str, str] | None:
    """The paper's (efficiency %, speed-up) of this cell as printed, or None where the paper has none."""
    return PUBLISHED.get((cell.histogram, cell.method, cell.limit))


def planned_cells(histograms, methods, limits, nnlshp_max_depth: int) -> list[tuple[str, str, int]]:
    """(histogram, method, limit) of every cell to pack, in order: every method and limit asked for on every
    histogram, plus the cells the paper reports, NNLSHP only up to `nnlshp_max_depth` (its strategy enumeration
    grows as L^(depth - 1))."""
    jobs = []
    for name in histograms:
        wanted = {(m, int(k)) for m in methods for k in limits}
        wanted |= {(m, k) for (h, m, k) in PUBLISHED if h == name and m in methods}
        jobs += [(name, m, k) for m, k in sorted(wanted) if m != "nnlshp" or k <= nnlshp_max_depth]
    return jobs


def packing_table(histograms, methods, limits, nnlshp_max_depth: int, progress=None) -> list[Cell]:
    """Pack the published histograms: every cell of `planned_cells`."""
    jobs = planned_cells(histograms, methods, limits, nnlshp_max_depth)
    cells = []
    for name, method, limit in progress(jobs, desc="packing") if progress else jobs:
        h, L = published_histogram(name)
        r = pack_histogram(h, L, limit, method)
        cells.append(Cell(name, method, limit, r.num_packs, r.efficiency, r.speedup, speedup_bound(h, L), r.seconds))
    return cells


def matches_published(value: float, printed: str, percent: bool = False) -> bool:
    """True if `value` rounds to the printed figure at the printed number of decimals."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return f"{(100 * value if percent else value):.{decimals}f}" == printed

"""Sequence and graph packing: histogram packing algorithms (SPFHP, LPFHP, NNLSHP; Krell et al. 2021), packing real
datasets with a strategy, and multi-constraint packing of graphs (nodes, edges and graphs per pack).

    pack_histogram, PackingResult, METHODS   pack a length histogram into rows (strategies, efficiency, speed-up)
    speedup_bound, check_histogram           the best speed-up any packing reaches; a histogram's checks
    published_histogram                      the paper's dataset histograms (Wikipedia, SQuAD, ...)
    lengths_histogram, pack_sequences, packed_arrays
                                             real sequences to packs, and to the ids, sequence ids and positions a
                                             packed model reads (core.nn.encoder)
    pack_graphs, GraphPacking                graphs into packs bounded in nodes, edges and graphs at once
"""

from core.packing.datasets import lengths_histogram, pack_sequences, packed_arrays
from core.packing.graphs import GraphPacking, pack_graphs
from core.packing.histogram import (
    METHODS,
    PackingResult,
    check_histogram,
    pack_histogram,
    published_histogram,
    speedup_bound,
)

__all__ = [
    "METHODS",
    "GraphPacking",
    "PackingResult",
    "check_histogram",
    "lengths_histogram",
    "pack_graphs",
    "pack_histogram",
    "pack_sequences",
    "packed_arrays",
    "published_histogram",
    "speedup_bound",
]

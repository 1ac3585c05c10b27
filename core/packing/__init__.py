"""Sequence and graph packing: histogram packing algorithms (SPFHP, LPFHP, NNLSHP; Krell et al. 2021), packing real
datasets with a strategy, and multi-constraint packing of graphs (nodes, edges and graphs per pack)."""

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

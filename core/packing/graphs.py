"""Multi-constraint packing of graphs: each pack holds at most `max_nodes` nodes, `max_edges` edges and `max_graphs`
graphs at once (GPS++ packs molecules into 60 nodes, 120 edges and 8 graphs), so one compiled step with static
shapes serves every batch.

The algorithm is the longest-first, best-fit idea of LPFHP carried to two resources: graphs from the most nodes to
the fewest (ties: most edges first), each into the open pack with the least node room that still has room for its
nodes, its edges and one more graph; else a new pack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class GraphPacking:
    packs: list[list[int]]  # graph indices per pack
    max_nodes: int
    max_edges: int
    max_graphs: int
    nodes: np.ndarray
    edges: np.ndarray

    @property
    def num_packs(self) -> int:
        return len(self.packs)

    @property
    def node_efficiency(self) -> float:
        return float(self.nodes.sum() / (self.num_packs * self.max_nodes)) if self.packs else 1.0

    @property
    def edge_efficiency(self) -> float:
        return float(self.edges.sum() / (self.num_packs * self.max_edges)) if self.packs else 1.0

    @property
    def graphs_per_pack(self) -> float:
        return self.nodes.size / self.num_packs if self.packs else 0.0

    @property
    def lower_bound(self) -> int:
        """No packing can use fewer packs than the tightest of the three resources allows."""
        n = self.nodes.size
        return int(
            max(
                -(-self.nodes.sum() // self.max_nodes), -(-self.edges.sum() // self.max_edges), -(-n // self.max_graphs)
            )
        )


def pack_graphs(
    nodes: Sequence[int] | np.ndarray,
    edges: Sequence[int] | np.ndarray,
    max_nodes: int,
    max_edges: int,
    max_graphs: int,
) -> GraphPacking:
    """Pack graphs (given by their node and edge counts) under all three limits; every graph in exactly one pack."""
    nodes, edges = np.asarray(nodes, np.int64), np.asarray(edges, np.int64)
    if nodes.shape != edges.shape or nodes.ndim != 1:
        raise ValueError(f"nodes and edges must be 1-D of equal length, got {nodes.shape} and {edges.shape}")
    for name, value in (("max_nodes", max_nodes), ("max_edges", max_edges), ("max_graphs", max_graphs)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name}={value!r} must be an integer >= 1")
    if nodes.size and (nodes.min() < 1 or edges.min() < 0):
        raise ValueError("every graph needs at least one node and a non-negative edge count")
    too_big = np.flatnonzero((nodes > max_nodes) | (edges > max_edges))
    if too_big.size:
        i = int(too_big[0])
        raise ValueError(
            f"graph {i} has {nodes[i]} nodes and {edges[i]} edges, beyond max_nodes={max_nodes} / "
            f"max_edges={max_edges} ({too_big.size} such graphs): raise the limits or drop them"
        )
    # open packs by node room: room -> list of pack ids; per pack: edge room and graph count
    by_room: list[list[int]] = [[] for _ in range(max_nodes + 1)]
    edge_room: list[int] = []
    members: list[list[int]] = []
    node_room: list[int] = []
    for i in np.lexsort((-edges, -nodes)).tolist():
        n, e = int(nodes[i]), int(edges[i])
        placed = -1
        for room in range(n, max_nodes + 1):
            bucket = by_room[room]
            for k in range(len(bucket) - 1, -1, -1):
                p = bucket[k]
                if edge_room[p] >= e:
                    placed = p
                    bucket.pop(k)
                    break
            if placed >= 0:
                break
        if placed < 0:
            placed = len(members)
            members.append([])
            edge_room.append(max_edges)
            node_room.append(max_nodes)
        members[placed].append(i)
        edge_room[placed] -= e
        node_room[placed] -= n
        if len(members[placed]) < max_graphs and node_room[placed] > 0:
            by_room[node_room[placed]].append(placed)
    return GraphPacking(members, max_nodes, max_edges, max_graphs, nodes, edges)

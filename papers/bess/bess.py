"""BESS (Cattaneo et al. 2022): balanced entity sampling and sharing across devices, in JAX with shard_map.

Entities are split into n random shards of equal size S (the last padded with rows that are never sampled), one
per device of a 1-D mesh (axis "shard"); relation embeddings are replicated. Triples fall into n^2 blocks by
(head shard i, tail shard j). A balanced batch draws b triples from every block and, per block, n_neg negative
tails from shard j, shared by the block's b triples.

Embedding-moving step, seen from device i:
  1. gather its own rows: heads of blocks (i, *), and -- as the tail owner -- the tails and negatives of blocks
     (*, i);
  2. one balanced all_to_all sends the tails and negatives of block (k, i) to device k, so device i now holds the
     tails and negatives of its blocks (i, *);
  3. score and take the loss locally; the loss is the psum over devices, so gradients flow back through the
     transposed all_to_all to the entity shards and are summed over devices for the replicated relations.

`reference_loss` computes the same quantity on one device from a plain entity table, which is what the tests
compare against (scores, loss and gradients).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from papers.bess.scoring import score

AXIS = "shard"


@dataclass(frozen=True)
class Sharding:
    """Entity e lives on shard `shard_of[e]` at row `row_of[e]`; every shard has `size` rows."""

    shard_of: np.ndarray  # [N] int
    row_of: np.ndarray  # [N] int
    size: int
    n: int

    def members(self, k: int) -> np.ndarray:
        """Global ids of shard k's entities, by row."""
        ids = np.flatnonzero(self.shard_of == k)
        return ids[np.argsort(self.row_of[ids])]

    def to_global(self, shards: np.ndarray) -> np.ndarray:
        """[n, size, d] sharded table -> [N, d] in global id order."""
        return shards[self.shard_of, self.row_of]

    def to_shards(self, table: np.ndarray) -> np.ndarray:
        """[N, d] -> [n, size, d] (padding rows zero)."""
        out = np.zeros((self.n, self.size, *table.shape[1:]), table.dtype)
        out[self.shard_of, self.row_of] = table
        return out


def shard_entities(num_entities: int, n: int, seed: int) -> Sharding:
    """n equal random shards (sizes differ by at most one entity; all padded to the largest)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the shard count n={n!r} must be a positive integer")
    if n > num_entities:
        raise ValueError(f"the shard count n={n} exceeds the {num_entities} entities: every shard needs entities")
    perm = np.random.default_rng([seed, 3]).permutation(num_entities)
    shard_of, row_of = np.empty(num_entities, np.int64), np.empty(num_entities, np.int64)
    shard_of[perm] = np.arange(num_entities) % n
    row_of[perm] = np.arange(num_entities) // n
    return Sharding(shard_of, row_of, -(-num_entities // n), n)


@dataclass(frozen=True)
class Batch:
    """A balanced batch: block (i, j) holds b triples with heads on shard i and tails on shard j, and n_neg negative
    tails from shard j. Local rows index the shard tables; global ids are kept for the reference."""

    head_row: np.ndarray  # [n, n, b]  (i, j, k) row of the head on shard i
    relation: np.ndarray  # [n, n, b]
    tail_row: np.ndarray  # [n, n, b]  row on shard j
    negative_row: np.ndarray  # [n, n, n_neg] rows on shard j
    head: np.ndarray  # [n, n, b] global ids
    tail: np.ndarray  # [n, n, b]
    negative: np.ndarray  # [n, n, n_neg]


class BalancedSampler:
    """Triples bucketed by (head shard, tail shard); every batch draws b from each bucket (with replacement when a
    bucket is smaller than b). An empty bucket cannot be balanced: `empty` counts them and sample() raises."""

    def __init__(self, triples: np.ndarray, sharding: Sharding, b: int, n_neg: int, seed: int):
        if b < 1 or n_neg < 1:
            raise ValueError(f"triples per block b={b} and negatives per block n_neg={n_neg} must be positive")
        self.triples, self.sharding, self.b, self.n_neg = np.asarray(triples), sharding, b, n_neg
        n = sharding.n
        hs, ts = sharding.shard_of[self.triples[:, 0]], sharding.shard_of[self.triples[:, 2]]
        self.buckets = [[np.flatnonzero((hs == i) & (ts == j)) for j in range(n)] for i in range(n)]
        self.empty = sum(len(x) == 0 for row in self.buckets for x in row)
        self.members = [sharding.members(k) for k in range(n)]
        self.rng = np.random.default_rng([seed, 4])

    def sample(self) -> Batch:
        n, b, s = self.sharding.n, self.b, self.sharding
        pick = np.empty((n, n, b), np.int64)
        for i in range(n):
            for j in range(n):
                bucket = self.buckets[i][j]
                pick[i, j] = self.rng.choice(bucket, b) if len(bucket) else -1
        if (pick < 0).any():
            raise ValueError(f"{self.empty} (head shard, tail shard) blocks have no training triple: use fewer shards")
        t = self.triples[pick]
        neg = np.stack([np.stack([self.rng.choice(self.members[j], self.n_neg) for j in range(n)])] * n)
        return Batch(s.row_of[t[..., 0]], t[..., 1], s.row_of[t[..., 2]], s.row_of[neg], t[..., 0], t[..., 2], neg)


def log_sigmoid_loss(positive, negative):
    """-log sigmoid(s+) - mean over negatives of log sigmoid(-s-), summed over triples."""
    return -jnp.sum(jax.nn.log_sigmoid(positive)) - jnp.sum(jnp.mean(jax.nn.log_sigmoid(-negative), -1))


def _scores(model, gamma, heads, rel, tails, negs):
    """heads/tails [..., b, d], rel [..., b, d_r], negs [..., n_neg, d] -> ([..., b], [..., b, n_neg])."""
    positive = score(model, heads, rel, tails, gamma)
    negative = score(model, heads[..., :, None, :], rel[..., :, None, :], negs[..., None, :, :], gamma)
    return positive, negative


def reference_loss(entities, relations, batch: Batch, model: str, gamma: float):
    """The batch's loss on one device from the global tables [N, d], [R, d_r]; returns (loss, (pos, neg))."""
    pos, neg = _scores(
        model, gamma, entities[batch.head], relations[batch.relation], entities[batch.tail], entities[batch.negative]
    )
    return log_sigmoid_loss(pos, neg), (pos, neg)


def bess_loss_fn(mesh: Mesh, model: str, gamma: float):
    """loss(shards [n, S, d] sharded over the mesh, relations [R, d_r] replicated, batch arrays [n, n, ...]) ->
    (loss, (pos [n, n, b], neg [n, n, b, n_neg])), computed BESS-style with one all_to_all."""

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(AXIS), P(), P(AXIS), P(AXIS), P(None, AXIS), P(None, AXIS)),
        out_specs=(P(), P(AXIS), P(AXIS)),
    )
    def step(shard, relations, head_row, relation, tail_row_by_owner, negative_row_by_owner):
        # shard [1, S, d]; head_row, relation [1, n, b] (this device's blocks (i, *));
        # tail_row_by_owner [n, 1, b], negative_row_by_owner [n, 1, n_neg]: blocks (*, i) whose tails live here
        table = shard[0]
        heads = table[head_row[0]]  # [n, b, d]
        tails_out = table[tail_row_by_owner[:, 0]]  # [n (destination), b, d]
        negs_out = table[negative_row_by_owner[:, 0]]  # [n (destination), n_neg, d]
        moved = jax.lax.all_to_all(jnp.concatenate([tails_out, negs_out], 1), AXIS, 0, 0, tiled=True)
        b = head_row.shape[-1]
        tails, negs = moved[:, :b], moved[:, b:]  # [n (source = tail shard j), ...] for blocks (i, j)
        pos, neg = _scores(model, gamma, heads, relations[relation[0]], tails, negs)
        loss = jax.lax.psum(log_sigmoid_loss(pos, neg), AXIS)
        return loss, pos[None], neg[None]

    def loss(shards, relations, batch: Batch):
        value, pos, neg = step(
            shards,
            relations,
            jnp.asarray(batch.head_row),
            jnp.asarray(batch.relation),
            jnp.asarray(batch.tail_row),
            jnp.asarray(batch.negative_row),
        )
        return value, (pos, neg)

    return loss


def bytes_per_step(n: int, b: int, n_neg: int, dim: int, size: int, itemsize: int = 4) -> dict[str, int]:
    """Entity-embedding bytes crossing devices per step, forward and backward: BESS's all_to_all moves the tails
    and negatives of the n(n-1) off-diagonal blocks; the naive scheme all-gathers every shard to every device and
    reduce-scatters the table's gradient."""
    bess = 2 * n * (n - 1) * (b + n_neg) * dim * itemsize
    naive = 2 * n * (n - 1) * size * dim * itemsize
    return {"bess": bess, "naive_all_gather": naive}

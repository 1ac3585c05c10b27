"""BESS (Cattaneo et al. 2022): balanced entity sampling and sharing across devices, in JAX with shard_map.

Entities are split into n random shards of equal size S (the last padded with rows that are never sampled), one
per device of a 1-D mesh (axis "shard"); relation embeddings are replicated. Triples fall into n^2 blocks by
(head shard i, tail shard j). A balanced batch draws b triples from every block and, per block, n_neg negative
tails from shard j. Device i scores each of its n*b triples against all n*n_neg negatives of its blocks (i, *),
which come from every shard: the negatives are shared across the device's triples, and each triple sees negatives
drawn uniformly from the whole entity set (n_neg from each of the n equal shards).

Blocks differ in size (on 4 shards, Nations' largest block holds 8.8 times as many triples as its smallest), yet
each gives b triples per step. So that the objective is the plain average over training triples, every triple of
block (i, j) is weighted by w_ij = n^2 |B_ij| / |T|: the expected step loss is then sum_ij |B_ij|/|T| times the mean
loss of block (i, j), the mean over all training triples (tested by enumeration on a tiny graph). The weights average
1 over the n^2 blocks, so the per-triple mean keeps its scale.

Embedding-moving step, seen from device i:
  1. gather its own rows: heads of blocks (i, *), and -- as the tail owner -- the tails and negatives of blocks
     (*, i);
  2. one balanced all_to_all sends the tails and negatives of block (k, i) to device k, so device i now holds the
     tails and negatives of its blocks (i, *);
  3. score every local triple against all n*n_neg local negatives and take the loss; the loss is the psum over
     devices, so gradients flow back through the
     transposed all_to_all to the entity shards and are summed over devices for the replicated relations.

`reference_loss` computes the same quantity on one device from a plain entity table, which is what the tests
compare against (scores, loss and gradients). `all_gather_loss_fn` is the scheme BESS avoids: every device
all-gathers the whole table and the backward pass reduce-scatters its gradient; papers.bess.scaling compiles both and
reads the bytes their collectives move from the compiled programs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from papers.bess.losses import Loss
from papers.bess.scoring import score, score_candidates

AXIS = "shard"
LOG_SIGMOID = Loss()  # the default loss: log-sigmoid with uniform negative weights


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


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["head_row", "relation", "tail_row", "negative_row", "head", "tail", "negative", "weight"],
    meta_fields=[],
)
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
    weight: np.ndarray  # [n, n, b] float32: w_ij = n^2 |B_ij| / |T| for every triple of block (i, j)


class BalancedSampler:
    """Triples bucketed by (head shard, tail shard); every batch draws b from each bucket (uniformly, with
    replacement) and, independently for every block (i, j), n_neg negatives from shard j (with replacement). Each
    triple carries its block's weight `block_weights[i, j]` = n^2 |B_ij| / |T|, which makes the expected batch loss
    the mean over all training triples. The batch of step `step` depends only on (seed, step), so a resumed run draws
    what the killed run would have. An empty bucket cannot be balanced: `empty` counts them and the constructor
    raises."""

    def __init__(self, triples: np.ndarray, sharding: Sharding, b: int, n_neg: int, seed: int):
        if b < 1 or n_neg < 1:
            raise ValueError(f"triples per block b={b} and negatives per block n_neg={n_neg} must be positive")
        self.triples, self.sharding, self.b, self.n_neg, self.seed = np.asarray(triples), sharding, b, n_neg, seed
        n = sharding.n
        hs, ts = sharding.shard_of[self.triples[:, 0]], sharding.shard_of[self.triples[:, 2]]
        self.buckets = [[np.flatnonzero((hs == i) & (ts == j)) for j in range(n)] for i in range(n)]
        self.empty = sum(len(x) == 0 for row in self.buckets for x in row)
        if self.empty:
            raise ValueError(
                f"{self.empty} of the {n * n} (head shard, tail shard) blocks have no training triple, so batches "
                f"cannot be balanced: use fewer than n={n} shards"
            )
        self.members = [sharding.members(k) for k in range(n)]
        self._sizes = np.array([[len(x) for x in row] for row in self.buckets])
        self._offsets = np.concatenate([[0], np.cumsum(self._sizes.ravel())])[:-1].reshape(n, n)
        self._flat = np.concatenate([x for row in self.buckets for x in row])
        self._shard_sizes = np.array([len(m) for m in self.members])
        self.block_weights = (n * n * self._sizes / len(self.triples)).astype(np.float32)

    def sample(self, step: int = 0) -> Batch:
        n, b, s = self.sharding.n, self.b, self.sharding
        rng = np.random.default_rng([self.seed, 4, step])
        # a uniform position in each block's bucket, b times; n_neg uniform members of shard j per block (i, j)
        pos = (rng.random((n, n, b)) * self._sizes[..., None]).astype(np.int64)
        t = self.triples[self._flat[self._offsets[..., None] + pos]]
        k = (rng.random((n, n, self.n_neg)) * self._shard_sizes[None, :, None]).astype(np.int64)
        neg_row = k  # members(j) is ordered by row, so the k-th member of shard j sits at row k
        neg = np.stack([self.members[j][k[:, j]] for j in range(n)], 1)
        weight = np.broadcast_to(self.block_weights[..., None], (n, n, b)).copy()
        return Batch(s.row_of[t[..., 0]], t[..., 1], s.row_of[t[..., 2]], neg_row, t[..., 0], t[..., 2], neg, weight)


def _scores(model, gamma, heads, rel, tails, negs):
    """Device-local scores: heads/tails [n, b, d], rel [n, b, d_r], negs [n, n_neg, d] (block (i, j)'s negatives
    from shard j) -> positive [n, b] and negative [n, b, n * n_neg]: every triple against every negative."""
    positive = score(model, heads, rel, tails, gamma)
    negative = score_candidates(model, heads, rel, negs.reshape(-1, negs.shape[-1]), gamma)
    return positive, negative


def reference_loss(entities, relations, batch: Batch, model: str, gamma: float, loss: Loss = LOG_SIGMOID):
    """The batch's loss on one device from the global tables [N, d], [R, d_r]; returns (loss, (pos, neg)) with
    pos [n, n, b] and neg [n, n, b, n * n_neg]."""
    pos, neg = jax.vmap(partial(_scores, model, gamma))(
        entities[batch.head], relations[batch.relation], entities[batch.tail], entities[batch.negative]
    )
    return loss(pos, neg, batch.weight), (pos, neg)


def bess_loss_fn(mesh: Mesh, model: str, gamma: float, loss: Loss = LOG_SIGMOID):
    """loss(shards [n, S, d] sharded over the mesh, relations [R, d_r] replicated, batch) -> (loss, (pos [n, n, b],
    neg [n, n, b, n * n_neg])), computed BESS-style with one all_to_all."""

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(AXIS), P(), P(AXIS), P(AXIS), P(AXIS), P(None, AXIS), P(None, AXIS)),
        out_specs=(P(), P(AXIS), P(AXIS)),
    )
    def step(shard, relations, head_row, relation, weight, tail_row_by_owner, negative_row_by_owner):
        # shard [1, S, d]; head_row, relation, weight [1, n, b] (this device's blocks (i, *));
        # tail_row_by_owner [n, 1, b], negative_row_by_owner [n, 1, n_neg]: blocks (*, i) whose tails live here
        table = shard[0]
        heads = table[head_row[0]]  # [n, b, d]
        tails_out = table[tail_row_by_owner[:, 0]]  # [n (destination), b, d]
        negs_out = table[negative_row_by_owner[:, 0]]  # [n (destination), n_neg, d]
        moved = jax.lax.all_to_all(jnp.concatenate([tails_out, negs_out], 1), AXIS, 0, 0, tiled=True)
        b = head_row.shape[-1]
        tails, negs = moved[:, :b], moved[:, b:]  # [n (source = tail shard j), ...] for blocks (i, j)
        pos, neg = _scores(model, gamma, heads, relations[relation[0]], tails, negs)
        total = jax.lax.psum(loss(pos, neg, weight[0]), AXIS)
        return total, pos[None], neg[None]

    def loss_and_scores(shards, relations, batch: Batch):
        value, pos, neg = step(
            shards,
            relations,
            jnp.asarray(batch.head_row),
            jnp.asarray(batch.relation),
            jnp.asarray(batch.weight),
            jnp.asarray(batch.tail_row),
            jnp.asarray(batch.negative_row),
        )
        return value, (pos, neg)

    return loss_and_scores


def all_gather_loss_fn(mesh: Mesh, model: str, gamma: float, loss: Loss = LOG_SIGMOID):
    """The same loss as `bess_loss_fn` (same signature and outputs), computed the way BESS avoids: every device
    all-gathers the whole sharded table and reads its heads, tails and negatives from it; the backward pass
    reduce-scatters the table's gradient. Only compiled, for the bytes its collectives move (papers.bess.scaling)."""

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(AXIS), P(), P(AXIS), P(AXIS), P(AXIS), P(AXIS), P(AXIS)),
        out_specs=(P(), P(AXIS), P(AXIS)),
    )
    def step(shard, relations, head_row, relation, weight, tail_row, negative_row):
        # shard [1, S, d]; head_row, relation, weight, tail_row [1, n, b], negative_row [1, n, n_neg]: blocks (i, *)
        table = jax.lax.all_gather(shard[0], AXIS, tiled=True)  # [n * S, d]: shard j's row k at j * S + k
        size = shard.shape[1]
        i = jax.lax.axis_index(AXIS)
        j = jnp.arange(head_row.shape[1])[:, None]
        heads = table[i * size + head_row[0]]  # [n, b, d]
        tails, negs = table[j * size + tail_row[0]], table[j * size + negative_row[0]]
        pos, neg = _scores(model, gamma, heads, relations[relation[0]], tails, negs)
        total = jax.lax.psum(loss(pos, neg, weight[0]), AXIS)
        return total, pos[None], neg[None]

    def loss_and_scores(shards, relations, batch: Batch):
        value, pos, neg = step(
            shards,
            relations,
            jnp.asarray(batch.head_row),
            jnp.asarray(batch.relation),
            jnp.asarray(batch.weight),
            jnp.asarray(batch.tail_row),
            jnp.asarray(batch.negative_row),
        )
        return value, (pos, neg)

    return loss_and_scores


def bytes_per_step(n: int, b: int, n_neg: int, dim: int, size: int, itemsize: int = 4) -> dict[str, int]:
    """Analytic: entity-embedding bytes crossing devices per step, forward and backward. BESS's all_to_all moves
    the tails and negatives of the n(n-1) off-diagonal blocks; the naive scheme all-gathers every shard to every
    device and reduce-scatters the table's gradient. The run reads the same quantities from the compiled programs
    (papers.bess.scaling.collective_bytes); the tests check one against the other."""
    bess = 2 * n * (n - 1) * (b + n_neg) * dim * itemsize
    naive = 2 * n * (n - 1) * size * dim * itemsize
    return {"bess": bess, "naive_all_gather": naive}

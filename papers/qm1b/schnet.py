"""SchNet (Schuett et al. 2017) in flax, and its training on generated HOMO-LUMO gaps: QM1B's scaling experiment.

Molecules are small (at most ~25 atoms), so a batch is dense: atoms padded to a fixed count A, all A x A pair
distances, masks for padding and self-pairs, and the `neighbours` nearest atoms within `cutoff` kept (QM1B: k=28
within 15 Bohr, i.e. every pair of these molecules). One interaction block:

    W_ij = Dense(ssp(Dense(rbf(d_ij)))) * f_cut(d_ij)         filter from Gaussian-expanded distances
    m_i  = sum_j W_ij * Dense(x_j)                            continuous-filter convolution
    x_i <- x_i + Dense(ssp(Dense(m_i)))                       atom-wise update, residual

with ssp(x) = softplus(x) - log 2, rbf_k(d) = exp(-(d - mu_k)^2 / (2 delta^2)) on an even grid of `gaussians`
centres over [0, cutoff] (delta = their spacing) and f_cut(d) = (cos(pi d / cutoff) + 1) / 2 for d < cutoff. The
gap is intensive, so atom outputs are averaged over the molecule's atoms (SchNetPack's "avg" aggregation). Targets
are standardised with the training set's mean and std; the loss is L1, as in QM1B. The model's presets
(SchNetConfig, PRESETS) and how it trains (TrainConfig) are config: papers.qm1b.config.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.nn.transfer import elements
from core.train import fit_seeds, init_state, optimizer_step
from papers.qm1b.config import PRESETS, SchNetConfig, TrainConfig  # noqa: F401  (PRESETS: re-exported)

MAX_Z = 10  # H..F


def shifted_softplus(x: jax.Array) -> jax.Array:
    return jax.nn.softplus(x) - math.log(2.0)


def neighbour_mask(d: jax.Array, mask: jax.Array, k: int, cutoff: float) -> jax.Array:
    """Pairs (i, j), i != j, both real atoms, j among the k nearest of i and within the cutoff: [B, A, A] bool."""
    A = d.shape[-1]
    pair = mask[:, :, None] & mask[:, None, :] & ~jnp.eye(A, dtype=bool)
    pair &= d < cutoff
    if k < A - 1:
        far = jnp.where(pair, d, jnp.inf)
        rank = jnp.argsort(jnp.argsort(far, axis=-1), axis=-1)  # 0 = nearest
        pair &= rank < k
    return pair


class SchNet(nn.Module):
    cfg: SchNetConfig

    @nn.compact
    def __call__(self, z: jax.Array, pos: jax.Array, mask: jax.Array) -> jax.Array:
        """z [B, A] atomic numbers (0 = padding), pos [B, A, 3] Bohr, mask [B, A] bool -> [B] standardised gap."""
        c = self.cfg
        x = nn.Embed(MAX_Z, c.features)(z)
        diff = pos[:, :, None, :] - pos[:, None, :, :]
        d = jnp.sqrt(jnp.sum(diff**2, -1) + 1e-12)  # the epsilon keeps the gradient of d at i == j finite
        pair = neighbour_mask(d, mask, c.neighbours, c.cutoff)
        mu = jnp.linspace(0.0, c.cutoff, c.gaussians)
        delta = mu[1] - mu[0] if c.gaussians > 1 else c.cutoff
        rbf = jnp.exp(-((d[..., None] - mu) ** 2) / (2 * delta**2))
        f_cut = jnp.where(pair, 0.5 * (jnp.cos(jnp.pi * d / c.cutoff) + 1.0), 0.0)
        for _ in range(c.interactions):
            w = nn.Dense(c.filters)(shifted_softplus(nn.Dense(c.filters)(rbf))) * f_cut[..., None]
            m = jnp.einsum("bijf,bjf->bif", w, nn.Dense(c.filters, use_bias=False)(x))
            x = x + nn.Dense(c.features)(shifted_softplus(nn.Dense(c.features)(m)))
        atom = nn.Dense(1)(shifted_softplus(nn.Dense(c.features // 2)(x)))[..., 0]
        return jnp.sum(atom * mask, -1) / jnp.maximum(jnp.sum(mask, -1), 1)


def parameter_count(cfg: SchNetConfig) -> int:
    """The model's parameter count, from the shapes alone (jax.eval_shape: no initialiser runs)."""
    params = jax.eval_shape(
        SchNet(cfg).init,
        jax.random.key(0),
        jnp.zeros((1, 3), jnp.int32),
        jnp.zeros((1, 3, 3)),
        jnp.ones((1, 3), bool),
    )
    return elements(params)


@partial(jax.tree_util.register_dataclass, data_fields=["z", "pos", "y"], meta_fields=[])
@dataclass(frozen=True)
class Molecules:
    """Padded arrays of conformers: z [N, A] int32, pos [N, A, 3] float32 (Bohr), y [N] float32 (gap, eV)."""

    z: np.ndarray
    pos: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    @property
    def mask(self) -> np.ndarray:
        return self.z > 0

    def take(self, index) -> Molecules:
        return Molecules(self.z[index], self.pos[index], self.y[index])


def molecules_from_rows(z: list[list[int]], pos: list[list[float]], y, atoms: int | None = None) -> Molecules:
    """Pad QM1B rows (z lists, flattened Bohr positions, gaps) to `atoms` (default: the largest molecule)."""
    A = atoms or max(len(zz) for zz in z)
    Z = np.zeros((len(z), A), np.int32)
    P = np.zeros((len(z), A, 3), np.float32)
    for i, (zz, pp) in enumerate(zip(z, pos, strict=True)):
        if len(zz) > A:
            raise ValueError(f"molecule {i} has {len(zz)} atoms, more than atoms={A}")
        Z[i, : len(zz)] = zz
        P[i, : len(zz)] = np.asarray(pp, np.float32).reshape(-1, 3)
    return Molecules(Z, P, np.asarray(y, np.float32))


def split_by_smiles(smiles: list[str], valid_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, valid) such that all conformers of a SMILES land on the same side, as QM1B split."""
    if not 0 < valid_fraction < 1:
        raise ValueError(f"valid_fraction={valid_fraction} must be in (0, 1)")
    unique = sorted(set(smiles))
    rng = np.random.default_rng([seed, 7])
    n_valid = max(1, round(valid_fraction * len(unique)))
    valid = set(rng.permutation(unique)[:n_valid].tolist())
    is_valid = np.array([s in valid for s in smiles])
    return np.flatnonzero(~is_valid), np.flatnonzero(is_valid)


class Shuffled:
    """Batches of `batch` molecules without replacement: a permutation of the training set per epoch, drawn one after
    another from one generator seeded (seed, 1); a partial last batch is dropped. Batch k of any run is the same."""

    def __init__(self, data: Molecules, batch: int, seed: int):
        self.data, self.batch = data, batch
        self.per_epoch = len(data) // batch
        self._rng = np.random.default_rng([seed, 1])
        self._orders: list[np.ndarray] = []

    def __call__(self, k: int) -> Molecules:
        epoch, i = divmod(k, self.per_epoch)
        while len(self._orders) <= epoch:
            self._orders.append(self._rng.permutation(len(self.data)))
        return self.data.take(self._orders[epoch][i * self.batch : (i + 1) * self.batch])


def train_schnet(
    model_cfg: SchNetConfig,
    train: Molecules | Sequence[Molecules],
    valid: Molecules,
    tc: TrainConfig,
    *,
    seeds: list[int] | tuple[int, ...] = (0,),
    checkpoint_dir=None,
    resume: bool = False,
    progress_bar=None,
    name: str = "schnet",
):
    """Adam on the L1 loss of standardised gaps (cosine decay after a linear warm-up), one model per seed trained
    together (core.train.fit_seeds, vmapped): seed s draws the initialisation and the batch order. `train` is one
    training set for every seed, or one per seed (equal sizes: independent replicates of a subset draw); each seed
    standardises the gaps with its own training set's mean and std.
    Returns (params stacked over the seeds, {"seeds", "train_mae": [meV per seed, on its own training set],
    "valid_mae": [meV per seed], "curve": [(step, [train meV per seed], [valid meV per seed])]})."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds={seeds}: give at least one seed, none repeated")
    trains = [train] * len(seeds) if isinstance(train, Molecules) else list(train)
    if len(trains) != len(seeds) or len({len(t) for t in trains}) != 1:
        raise ValueError(
            f"train: {len(trains)} training sets of sizes {sorted({len(t) for t in trains})} for {len(seeds)} "
            "seeds: give one set, or one per seed, all of one size"
        )
    model = SchNet(model_cfg)
    # per seed: (mean, std) of its training gaps, [S, 1] each, to undo the standardisation of its predictions
    mean = np.array([[float(t.y.mean())] for t in trains], np.float32)
    std = np.array([[float(t.y.std() + 1e-6)] for t in trains], np.float32)
    standardised = [Molecules(t.z, t.pos, (t.y - m[0]) / d[0]) for t, m, d in zip(trains, mean, std, strict=True)]
    schedule = optax.warmup_cosine_decay_schedule(0.0, tc.lr, tc.warmup, max(tc.steps, tc.warmup + 1), tc.lr * 0.01)
    opt = optax.adam(schedule)

    def init(seed):
        return init_state(model.init(jax.random.key(seed), trains[0].z[:1], trains[0].pos[:1], trains[0].mask[:1]), opt)

    def loss_fn(p, b: Molecules):  # b.y already standardised by its seed's training statistics
        return jnp.mean(jnp.abs(model.apply(p, b.z, b.pos, b.mask) - b.y))

    # every seed's standardised prediction of the same molecules
    predict = jax.jit(jax.vmap(lambda p, z, pos, mask: model.apply(p, z, pos, mask), (0, None, None, None)))

    def mae_mev(p, data: Molecules) -> np.ndarray:
        """[S] MAE (meV) of every seed's model on `data`."""
        errors = []
        for i in range(0, len(data), 256):
            b = data.take(slice(i, i + 256))
            errors.append(np.abs(np.asarray(predict(p, b.z, b.pos, b.mask)) * std + mean - b.y))
        return np.concatenate(errors, axis=1).mean(1) * 1000

    def train_mae(p) -> list[float]:
        if all(t is trains[0] for t in trains):
            return mae_mev(p, trains[0]).tolist()
        return [float(mae_mev(p, t)[k]) for k, t in enumerate(trains)]  # seed k on its own training set

    batches = {s: Shuffled(t, min(tc.batch_size, len(t)), s) for s, t in zip(seeds, standardised, strict=True)}
    run = fit_seeds(
        seeds,
        init,
        optimizer_step(loss_fn, opt),
        lambda s, k: batches[s](k),
        evaluate=lambda st: {"train/mae": train_mae(st["params"]), "valid/mae": mae_mev(st["params"], valid).tolist()},
        steps=tc.steps,
        eval_every=tc.eval_every,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=tc.checkpoint_every,
        resume=resume,
        name=name,
        bar=progress_bar,
    )
    steps, train_curve = run.history.series("train/mae")
    curve = [
        (int(k), np.atleast_1d(t).tolist(), np.atleast_1d(v).tolist())
        for k, t, v in zip(steps, train_curve, run.history.series("valid/mae")[1], strict=True)
    ]
    return run.state["params"], {"seeds": seeds, "train_mae": curve[-1][1], "valid_mae": curve[-1][2], "curve": curve}

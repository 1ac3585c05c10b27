"""The character-level language-model experiment that four papers run (unit scaling, u-muP, FP8 LLMs, SparQ's
evaluation model): a core.nn.TransformerLM on Shakespeare's characters (core.data.shakespeare), trained with Adam
under a warm-up + cosine schedule on windows drawn from the training text, scored on fixed validation windows.

The papers declare their arms against these pieces; where their settings differ, the difference and its reason
are stated here, once:

- `Adam`: nanoGPT's character-level settings (b1 0.9, b2 0.99: "a bit bigger because the number of tokens per
  iteration is small", its train_shakespeare_char config) for unit scaling, FP8 LLMs and SparQ. Weight decay:
  the config's (0 by default) in unit scaling, optax's default 1e-4 in FP8 LLMs, 0.01 in SparQ's model. FP8 LLMs
  clip the global gradient norm at 1 (nanoGPT's grad_clip). u-muP uses Adam's usual b2 0.999 and no decay, as its
  runs were first specified (whether the u-muP paper's own Adam settings differ is not checked here); its
  per-tensor learning rates multiply Adam's normalised update, so it uses `Adam.scale_by_adam`. These differences
  predate this module and are kept so that every run reproduces its recorded numbers.
- `warmup_cosine`: linear warm-up from 0 to the peak, cosine decay to a tenth of it (nanoGPT's min_lr = lr / 10);
  u-muP schedules a factor of 1 that multiplies each run's own learning rate (its runs share one jitted step).
- `train_windows`: the batch of step k of seed s is drawn from numpy's generator seeded [s, k], so every batch is
  replayable (core.train.fit resumes exactly) and the arms of one seed see the same batches (paired comparisons).
- `FP8Casts`: the named FP8 cast recipes (E4M3 values, E5M2 gradients, matmul operands only): `SIMULATE_FP8`, the
  unit-scaling library's simulate_fp8 (stochastic rounding, saturating) with the LM head in FP32, and `PLAIN_FP8`
  (round to nearest, overflowing, head cast too); FP8 LLMs' scaled FP8 is core.nn.Formats(fp8=policy) instead.
- `fp16_moments`: Adam with its moments stored in FP16 after every update, an optax wrapper (`store_moments`:
  "fp16", both moments round-to-nearest; "paper", the first moment stochastically rounded, the unit-scaling
  authors' storage), with `rescale_moments` for a loss scale that moves and `to_fp16_grid` / `to_fp16_stochastic`
  for FP16 weights.
- `evaluate`: every seed's mean validation loss, compiled once per model (a model is a hashable description, so
  every arm, seed and checkpoint of one shape and number format shares the compiled function) and vmapped over
  the seeds; `compiled_loss` is the same for one set of variables (FP8 LLMs' post-training inference).

The training loop is core.train's (`fit_seeds`: every seed of an arm vmapped, resumable); each paper's step stays
its own, because its arithmetic is the paper's: u-muP multiplies Adam's normalised update by each run's learning
rate outside optax (its learning rates are vmapped with the seeds), unit scaling scales the loss and stores FP16
state, FP8 LLMs carry their scaling state through the step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.data.shakespeare import sample_windows
from core.fp8casts import PLAIN_FP8, SIMULATE_FP8, FP8Casts  # noqa: F401  (re-exported)
from core.nn import TransformerLM
from core.numerics import quantise, stochastic_rounding


@dataclass(frozen=True)
class Adam:
    b1: float = 0.9
    b2: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.0
    clip: float | None = None  # global gradient-norm clip, applied before Adam

    def optimizer(self, learning_rate: float | optax.Schedule) -> optax.GradientTransformation:
        """AdamW with these settings at `learning_rate` (a number or a schedule)."""
        adam = optax.adamw(learning_rate, b1=self.b1, b2=self.b2, eps=self.eps, weight_decay=self.weight_decay)
        return adam if self.clip is None else optax.chain(optax.clip_by_global_norm(self.clip), adam)

    def scale_by_adam(self) -> optax.GradientTransformation:
        """Adam's normalised update alone (no learning rate, decay or clip), for per-tensor learning rates."""
        return optax.scale_by_adam(b1=self.b1, b2=self.b2, eps=self.eps)


UNIT_SCALING_ADAM = Adam()  # weight decay from the paper's config (0 by default)
FP8_LLM_ADAM = Adam(weight_decay=1e-4, clip=1.0)
SPARQ_ADAM = Adam(weight_decay=0.01)
UMUP_ADAM = Adam(b2=0.999)


FP16_MOMENTS = ("fp16", "paper")


def to_fp16_grid(tree):
    """Every float leaf rounded to FP16 (nearest-even) and back: FP16 storage; other leaves kept."""
    return jax.tree_util.tree_map(
        lambda x: x.astype(jnp.float16).astype(x.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree
    )


def to_fp16_stochastic(tree, key: jax.Array):
    """Every float leaf rounded to FP16 stochastically (unbiased, as the IPU rounds FP16 arithmetic with stochastic
    rounding on), each leaf with its own bits from `key` (folded with the leaf's index)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out = [
        quantise(x, "fp16", rounding="stochastic", key=jax.random.fold_in(key, i))
        if jnp.issubdtype(x.dtype, jnp.floating)
        else x
        for i, x in enumerate(leaves)
    ]
    return jax.tree_util.tree_unflatten(treedef, out)


def _map_adam(state, fn):
    """`fn(ScaleByAdamState) -> ScaleByAdamState` applied to every Adam state inside an optimiser state."""
    return jax.tree_util.tree_map(
        lambda x: fn(x) if isinstance(x, optax.ScaleByAdamState) else x,
        state,
        is_leaf=lambda x: isinstance(x, optax.ScaleByAdamState),
    )


def store_moments(state, moments: str, key: jax.Array | None = None):
    """Adam's moments inside `state` as `moments` stores them: "fp16", both rounded to FP16 (nearest-even); "paper",
    the first moment rounded to FP16 stochastically with `key`, the second kept FP32 (the unit-scaling authors'
    character-LM storage, papers/unit_scaling/REFERENCES.md US-STORAGE)."""
    if moments == "fp16":
        return to_fp16_grid(state)
    if moments == "paper":
        return _map_adam(state, lambda x: x._replace(mu=to_fp16_stochastic(x.mu, key)))
    raise ValueError(f"store_moments: moments={moments!r} is not one of {', '.join(FP16_MOMENTS)}")


def rescale_moments(state, ratio):
    """Adam's first moment times `ratio` and second moment times ratio^2: the moments of a gradient scaled by it."""

    def rescale(x):
        mu = jax.tree_util.tree_map(lambda m: m * ratio, x.mu)
        return x._replace(mu=mu, nu=jax.tree_util.tree_map(lambda v: v * ratio**2, x.nu))

    return _map_adam(state, rescale)


def fp16_moments(inner: optax.GradientTransformation, moments: str) -> optax.GradientTransformationExtraArgs:
    """`inner` (an Adam) whose moments are stored in FP16 after every update (`store_moments`; the update's
    arithmetic stays FP32). Its update takes `key=` for the "paper" storage's stochastic rounding."""
    if moments not in FP16_MOMENTS:
        raise ValueError(f"fp16_moments: moments={moments!r} is not one of {', '.join(FP16_MOMENTS)}")

    def update(updates, state, params=None, *, key=None, **extra):
        updates, state = inner.update(updates, state, params)
        return updates, store_moments(state, moments, key)

    return optax.GradientTransformationExtraArgs(inner.init, update)


def warmup_cosine(peak: float, warmup: int, steps: int) -> optax.Schedule:
    """0 -> `peak` linearly over `warmup` steps (at least 1, at most steps - 1), then cosine decay to peak / 10 at
    `steps`."""
    warmup = max(1, min(warmup, steps - 1))
    return optax.warmup_cosine_decay_schedule(0.0, peak, warmup, max(steps, warmup + 1), end_value=peak * 0.1)


def train_windows(text: np.ndarray, seq_len: int, batch: int, seed: int, step: int) -> np.ndarray:
    """The training batch of `step` for `seed`: `batch` windows of seq_len + 1 characters (inputs and the next
    character), drawn by numpy's generator seeded [seed, step]."""
    return sample_windows(text, seq_len + 1, batch, np.random.default_rng([seed, step]))


def window_loss(model: TransformerLM) -> Callable[[dict, jax.Array], jax.Array]:
    """(variables, windows [B, seq_len + 1]) -> the mean next-character loss in nats of `model` on the windows."""

    def loss(variables, windows):
        return model.apply(variables, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

    return loss


def _window_loss_with_rounding(model: TransformerLM):
    """(variables, windows) -> mean next-character loss in nats; stochastic casts keyed by key(0), so an evaluation
    is reproducible (casts that round to nearest draw nothing)."""

    plain = window_loss(model)

    def loss(variables, windows):
        with stochastic_rounding(jax.random.key(0)):
            return plain(variables, windows)

    return loss


@functools.cache
def compiled_loss(model: TransformerLM) -> Callable[[dict, jax.Array], jax.Array]:
    """`model`'s loss on windows [B, seq_len + 1] for one set of variables, jitted once per model (a model is a
    frozen, hashable description: every arm, seed or checkpoint of one shape and number format shares it)."""
    return jax.jit(_window_loss_with_rounding(model))


@functools.cache
def _compiled_seed_loss(model: TransformerLM, axes) -> Callable:
    return jax.jit(jax.vmap(_window_loss_with_rounding(model), in_axes=(dict(axes), None)))


def evaluate(
    model: TransformerLM,
    variables: dict,
    windows: np.ndarray | jax.Array,
    *,
    batch_size: int | None = None,
    shared: Sequence[str] = (),
) -> np.ndarray:
    """The mean loss (nats) of every seed's variables (stacked on a leading axis; the collections named in `shared`
    are one copy for all seeds, e.g. FP8 LLMs' probes) on `windows`, compiled once per model and batch shape and
    vmapped over the seeds. With `batch_size`, the windows are scored in batches of that many and the batch means
    averaged, weighted by the batch sizes (float64); without, in one batch (float32, as the step computes it)."""
    axes = tuple(sorted((k, None if k in shared else 0) for k in variables))
    loss = _compiled_seed_loss(model, axes)
    if batch_size is None:
        return np.asarray(loss(variables, jnp.asarray(windows)))
    starts = range(0, len(windows), batch_size)
    losses = [np.asarray(loss(variables, jnp.asarray(windows[i : i + batch_size]))) for i in starts]
    weights = [min(batch_size, len(windows) - i) for i in starts]
    return np.average(np.stack(losses), axis=0, weights=weights)

"""Training groups of runs of the character LM: one parametrization, width, hyperparameter set and number format,
at several learning rates and seeds, all vmapped into one jitted step; resumable, each group's result kept."""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.data.shakespeare import CharCorpus, evaluation_windows, sample_windows
from core.io import atomic_write_json
from core.nn import Ops, TransformerLM
from core.train import fit_seeds
from core.unit_scaling import umup

ADAM = dict(b1=0.9, b2=0.999, eps=1e-8)


@dataclass(frozen=True)
class Group:
    """Runs trained together: every (learning rate, seed) pair of one model and number format. `lrs` are the
    global learning rates (u-muP's eta; SP's and muP's Adam rate at the base width)."""

    parametrization: str
    width: int
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    mults: umup.Mults = field(default_factory=umup.Mults)
    fp8: bool = False
    fp8_head: str = "low"  # "low": the readout cast like every linear layer; "fp32": kept out of FP8

    @property
    def name(self) -> str:
        parts = [self.parametrization, f"w{self.width}"]
        defaults = umup.Mults()
        parts += [f"{k}{v:g}" for k, v in asdict(self.mults).items() if v != getattr(defaults, k)]
        if self.fp8:
            parts.append("fp8" if self.fp8_head == "low" else "fp8headfp32")
        lo, hi = math.log2(min(self.lrs)), math.log2(max(self.lrs))
        return "_".join(parts) + f"_lr{lo:g}to{hi:g}x{len(self.lrs)}_s{'-'.join(map(str, self.seeds))}"

    @property
    def runs(self) -> list[tuple[float, int]]:
        return list(itertools.product(self.lrs, self.seeds))


@dataclass
class GroupResult:
    group: str
    parametrization: str
    width: int
    fp8: bool
    mults: dict[str, float]
    lr: list[float]  # per run
    seed: list[int]  # per run
    valid_loss: list[float]  # per run, nats per character (NaN: diverged)
    train_loss: list[float]  # per run, the mean over the last logged interval
    seconds: float
    params: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def at_lr(self, lr: float | None = None) -> dict[int, float]:
        """seed -> valid loss of the runs at learning rate `lr` (default: the group's only one)."""
        if lr is None:
            if len(set(self.lr)) != 1:
                raise ValueError(f"{self.group}: {len(set(self.lr))} learning rates; name the one to read")
            lr = self.lr[0]
        return {s: v for s, v, r in zip(self.seed, self.valid_loss, self.lr, strict=True) if r == lr}


def build_model(cfg, corpus: CharCorpus, group: Group) -> TransformerLM:
    m = cfg.model
    fp8 = (
        dict(
            fwd_fmt="e4m3",
            bwd_fmt="e5m2",
            cast_scope="matmul",
            rounding="nearest",
            saturate=False,
            head_precision=group.fp8_head,
        )
        if group.fp8
        else {}
    )
    ops = Ops(scaling=group.parametrization, width_ratio=group.width / min(cfg.widths), mults=group.mults, **fp8)
    return TransformerLM(
        vocab=corpus.vocab_size, d_model=group.width, depth=m.depth, heads=m.heads, seq_len=m.seq_len, ops=ops
    )


def schedule(cfg) -> optax.Schedule:
    """The learning-rate factor over training: linear warm-up, then cosine decay to a tenth."""
    warmup = max(1, min(cfg.warmup_steps, cfg.steps - 1))
    return optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup, max(cfg.steps, warmup + 1), end_value=0.1)


def train_group(cfg, corpus: CharCorpus, group: Group, out_dir: Path | None, resume: bool) -> GroupResult:
    """Train every run of `group` together (vmapped) and measure each one's validation loss. With `out_dir`, the
    result is kept as out_dir/<group>.json (a resumed run reuses it) and training checkpoints beside it."""
    result_file = None if out_dir is None else Path(out_dir) / f"{group.name}.json"
    if resume and result_file is not None and result_file.exists():
        return GroupResult(**json.loads(result_file.read_text()))
    t0 = time.perf_counter()
    model = build_model(cfg, corpus, group)
    seq = cfg.model.seq_len
    dummy = jnp.zeros((1, seq), jnp.int32)
    template = model.init(jax.random.key(0), dummy)
    scales = umup.lr_scales(
        template, model.param_kinds(template), group.parametrization, width_ratio=model.ops.width_ratio
    )
    optimizer = optax.chain(optax.scale_by_adam(**ADAM), umup.scale_by_tree(scales))
    factor = schedule(cfg)
    runs = group.runs
    lrs = jnp.asarray([lr for lr, _ in runs], jnp.float32)
    run_seeds = [s for _, s in runs]

    def init(i):
        params = model.init(jax.random.key(jnp.asarray(run_seeds)[i]), dummy)
        return {"params": params, "opt": optimizer.init(params), "lr": lrs[i], "step": jnp.int32(0)}

    def loss_fn(params, windows):
        return model.apply(params, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

    def step(s, windows):
        loss, grads = jax.value_and_grad(loss_fn)(s["params"], windows)
        updates, opt = optimizer.update(grads, s["opt"], s["params"])
        rate = s["lr"] * factor(s["step"])
        params = jax.tree_util.tree_map(lambda p, u: p - rate * u, s["params"], updates)
        return {"params": params, "opt": opt, "lr": s["lr"], "step": s["step"] + 1}, {"loss": loss}

    valid = jnp.asarray(evaluation_windows(corpus.valid, seq + 1, cfg.valid_windows))
    eval_fn = jax.jit(jax.vmap(loss_fn, in_axes=(0, None)))

    def evaluate(state) -> dict:
        return {"valid/loss": np.asarray(eval_fn(state["params"], valid)).tolist()}

    fit = fit_seeds(
        list(range(len(runs))),
        init,
        step,
        # runs of one seed see the same batches whatever their learning rate (paired comparisons)
        lambda i, k: sample_windows(corpus.train, seq + 1, cfg.batch_size, np.random.default_rng([run_seeds[i], k])),
        evaluate=evaluate,
        steps=cfg.steps,
        eval_every=cfg.steps,
        log_every=cfg.log_every,
        checkpoint_every=cfg.checkpoint_every,
        checkpoint_dir=None if out_dir is None else Path(out_dir) / "checkpoints" / group.name,
        resume=resume,
        name=group.name,
    )
    valid_loss = [float(v) if math.isfinite(v) else math.nan for v in fit.history.last("valid/loss")]
    train_loss = [float(v) for v in np.atleast_1d(fit.history.last("train/loss"))]
    result = GroupResult(
        group=group.name,
        parametrization=group.parametrization,
        width=group.width,
        fp8=group.fp8,
        mults=asdict(group.mults),
        lr=[float(lr) for lr, _ in runs],
        seed=run_seeds,
        valid_loss=valid_loss,
        train_loss=train_loss,
        seconds=time.perf_counter() - t0,
        params=int(sum(x.size for x in jax.tree_util.tree_leaves(template))),
    )
    if result_file is not None:
        atomic_write_json(result_file, result.to_dict())
    return result


# ---------------------------------------------------------------------------------------------- optimum


def mean_curve(result: GroupResult, seeds: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(log2 lr, mean valid loss over `seeds`, repeats counted (a resample); default: every seed once) sorted by
    lr; a diverged run makes its lr's mean +inf."""
    by_lr: dict[float, dict[int, float]] = {}
    for lr, seed, loss in zip(result.lr, result.seed, result.valid_loss, strict=True):
        by_lr.setdefault(lr, {})[seed] = loss if math.isfinite(loss) else math.inf
    lrs = sorted(by_lr)
    return np.log2(lrs), np.asarray([np.mean([by_lr[lr][s] for s in seeds or by_lr[lr]]) for lr in lrs])


@dataclass(frozen=True)
class Optimum:
    log2_lr: float  # the sub-grid estimate (parabola through the best grid point and its neighbours)
    grid_log2_lr: float  # the best grid point
    loss: float  # the best grid point's loss
    at_edge: bool  # the best grid point is the first or last: the optimum is not bracketed


def optimum(log2_lrs: np.ndarray, losses: np.ndarray) -> Optimum:
    """Where the loss-vs-log2(lr) curve is lowest: the best grid point refined by the parabola through it and its
    two neighbours, the vertex kept within half a grid step of it."""
    x, y = np.asarray(log2_lrs, float), np.asarray(losses, float)
    if len(x) == 0 or not np.isfinite(y).any():
        return Optimum(math.nan, math.nan, math.inf, True)
    b = int(np.nanargmin(np.where(np.isfinite(y), y, np.inf)))
    edge = b in (0, len(x) - 1)
    best = float(x[b])
    if not edge and np.isfinite(y[b - 1]) and np.isfinite(y[b + 1]):
        h = (x[b + 1] - x[b - 1]) / 2
        curvature = y[b - 1] - 2 * y[b] + y[b + 1]
        if curvature > 0:
            shift = h / 2 * (y[b - 1] - y[b + 1]) / curvature
            best = float(x[b] + np.clip(shift, -h / 2, h / 2))
    return Optimum(best, float(x[b]), float(y[b]), edge)

"""Training groups of runs of the character LM: one parametrization, width, hyperparameter set and number format,
at several learning rates and seeds, all vmapped into one jitted step; resumable, each group's result kept in the run's
memo store (`kept_group`, core.memo: a papers/umup/results.GroupResult, which the run's Results hold)."""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.charlm import PLAIN_FP8, UMUP_ADAM, evaluate, train_windows, warmup_cosine, window_loss
from core.context import RunContext
from core.data.shakespeare import CharCorpus, evaluation_windows
from core.nn import FP32, TransformerLM, param_kinds
from core.nn.parametrization import by_name, lr_scales
from core.nn.transfer import elements
from core.train import fit_seeds
from core.unit_scaling import umup
from papers.umup.results import GroupResult


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


def build_model(cfg, corpus: CharCorpus, group: Group) -> TransformerLM:
    """The group's model: its parametrization at width / the narrowest width of the sweep (muP's base width), in
    FP32 or with PLAIN_FP8 casts on the linear layers only (the u-muP paper's FP8 scheme leaves attention out)."""
    m = cfg.model
    p = by_name(group.parametrization, width_ratio=group.width / min(cfg.widths), mults=group.mults)
    formats = replace(PLAIN_FP8, head=group.fp8_head).formats(attention=False) if group.fp8 else FP32
    return TransformerLM(
        vocab=corpus.vocab_size,
        d_model=group.width,
        depth=m.depth,
        heads=m.heads,
        seq_len=m.seq_len,
        parametrization=p,
        formats=formats,
    )


def kept_group(cfg, corpus: CharCorpus, group: Group, ctx: RunContext) -> GroupResult:
    """`train_group`'s result, kept in the run's memo store (core.memo, stage "group": keyed by the config and the
    group, and by the training code with the corpus loader), so a resumed run reuses every finished group; its
    training checkpoints are under the run's checkpoint directory."""
    from core.data.shakespeare import load_shakespeare

    compute = functools.partial(train_group, cfg, corpus, group, ctx.checkpoint_dir, ctx.resume)
    return ctx.memo("group", {"umup": cfg, "group": group}, compute, like=GroupResult, code=[load_shakespeare])


def group_step(cfg, corpus: CharCorpus, group: Group):
    """(model, template, init, step) of a group's runs: `template` the variables of a model initialised from key 0
    (the learning-rate scales are read from it), `init(i)` the state of run i (its parameters from its seed, Adam's
    state, its learning rate, the step count), `step(state, windows)` one training step (u-muP's Adam scaled per
    tensor, the run's learning rate times the warmup-cosine factor) returning (state, {"loss"})."""
    model = build_model(cfg, corpus, group)
    dummy = jnp.zeros((1, cfg.model.seq_len), jnp.int32)
    template = model.init(jax.random.key(0), dummy)
    scales = lr_scales(template["params"], param_kinds(model, template, dummy), model.parametrization)
    optimizer = optax.chain(UMUP_ADAM.scale_by_adam(), umup.scale_by_tree({"params": scales}))
    factor = warmup_cosine(1.0, cfg.warmup_steps, cfg.steps)  # times each run's own learning rate
    runs = group.runs
    lrs = jnp.asarray([lr for lr, _ in runs], jnp.float32)
    run_seeds = [s for _, s in runs]

    def init(i):
        params = model.init(jax.random.key(jnp.asarray(run_seeds)[i]), dummy)
        return {"params": params, "opt": optimizer.init(params), "lr": lrs[i], "step": jnp.int32(0)}

    loss_fn = window_loss(model)

    def step(s, windows):
        loss, grads = jax.value_and_grad(loss_fn)(s["params"], windows)
        updates, opt = optimizer.update(grads, s["opt"], s["params"])
        rate = s["lr"] * factor(s["step"])
        params = jax.tree_util.tree_map(lambda p, u: p - rate * u, s["params"], updates)
        return {"params": params, "opt": opt, "lr": s["lr"], "step": s["step"] + 1}, {"loss": loss}

    return model, template, init, step


def train_group(cfg, corpus: CharCorpus, group: Group, out_dir: Path | None, resume: bool) -> GroupResult:
    """Train every run of `group` together (vmapped) and measure each one's validation loss. With `out_dir`, the
    training checkpoints are kept under out_dir/checkpoints/<group> (and resumed when `resume`)."""
    t0 = time.perf_counter()
    model, template, init, step = group_step(cfg, corpus, group)
    seq = cfg.model.seq_len
    runs = group.runs
    run_seeds = [s for _, s in runs]
    valid = evaluation_windows(corpus.valid, seq + 1, cfg.valid_windows)

    def evaluate_runs(state) -> dict:
        return {"valid/loss": evaluate(model, state["params"], valid).tolist()}

    fit = fit_seeds(
        list(range(len(runs))),
        init,
        step,
        # runs of one seed see the same batches whatever their learning rate (paired comparisons)
        lambda i, k: train_windows(corpus.train, seq, cfg.batch_size, run_seeds[i], k),
        evaluate=evaluate_runs,
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
        params=elements(template),
    )
    return result


IPU_ROWS = 4  # windows of the micro-batch the simulated IPU costs a step on


def ipu_steps(cfg) -> list:
    """The training step (`group_step`'s, one run) of each parametrization at the sweep's widest width, and of each
    FP8 parametrization with the run's FP8 scheme, for the simulated IPU (ipu_model.steps): a micro-batch of
    IPU_ROWS windows at the run's sequence length."""
    from core.data.shakespeare import load_shakespeare
    from ipu_model.steps import Step

    c = cfg.umup
    corpus, width = load_shakespeare(), max(c.widths)
    groups = [Group(p, width, (1.0,), (0,)) for p in c.parametrizations]
    groups += [Group(p, width, (1.0,), (0,), fp8=True, fp8_head=c.fp8_head) for p in c.fp8_parametrizations]
    windows = jax.ShapeDtypeStruct((IPU_ROWS, c.model.seq_len + 1), jnp.int32)
    steps = []
    for group in groups:
        _, _, init, step = group_step(c, corpus, group)
        steps.append(
            Step(
                f"{group.parametrization}{' FP8' if group.fp8 else ''} training step",
                jax.jit(step),
                (jax.eval_shape(init, jnp.int32(0)), windows),
                f"width {width}, depth {c.model.depth}, {c.model.heads} heads; {IPU_ROWS} windows of {c.model.seq_len} "
                "tokens" + (f"; FP8 linear layers (head {c.fp8_head})" if group.fp8 else ""),
            )
        )
    return steps

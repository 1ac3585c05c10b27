"""Training the shared transformer LM (core.nn) in FP32 or with FP8 linear layers under a scaling policy, and
evaluating it, including post-training FP8 quantisation of a trained FP32 model.

An arm is a policy: "fp32" (the baseline: FP32 everywhere), or one of core.numerics.fp8.POLICIES for every block's
linear layers. `cscale` is calibrated once, from the statistics of a first (untaken) step at initialisation, and
then held for the whole run: the paper's constant scale. Every step's scaling statistics (amax and bias of
activations, weights and gradients of every layer) come back through the probes (core.nn.fp8); the run keeps them
every `stats_every` steps for the bias-distribution plots, and counts bad amaxes (zero or non-finite).

An arm trains from several seeds at once (core.train.fit_seeds, vmapped): seed s draws the initialisation and the
batches, so seed s of two arms sees the same batches from the same initial weights and the arms pair up by seed.

The settings (SizeConfig, RunConfig) and the MX variants are papers/fp8_llm/config.py's, the ArmResult it returns
papers/fp8_llm/results.py's (re-exported here); papers/fp8_llm/run.py calls it for every (size, arm).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.charlm import FP8_LLM_ADAM, compiled_loss, evaluate, train_windows, warmup_cosine
from core.data.shakespeare import CharCorpus, evaluation_windows
from core.nn import FP32, Formats, TransformerLM
from core.nn.fp8 import calibrate_fp8, fp8_statistics, split_fp8, update_fp8
from core.nn.transfer import elements
from core.train import fit_seeds, stack
from papers.fp8_llm.config import ARMS, MX_VARIANTS, RunConfig, SizeConfig
from papers.fp8_llm.results import ArmResult


def build_model(
    size: SizeConfig, vocab: int, seq_len: int, arm: str, history: int = 16, mx: str | None = None
) -> TransformerLM:
    """The LM of one size for an arm (`mx`: an MX_VARIANTS name, for the "mx" arm's element formats)."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")
    if mx is not None and mx not in MX_VARIANTS:
        raise ValueError(f"unknown MX variant {mx!r}; choose from {', '.join(MX_VARIANTS)}")
    formats = (
        FP32
        if arm == "fp32"
        else Formats(fp8=arm, fp8_history=history, fp8_formats=MX_VARIANTS[mx] if arm == "mx" and mx else None)
    )
    return TransformerLM(
        vocab=vocab, d_model=size.d_model, depth=size.depth, heads=size.heads, seq_len=seq_len, formats=formats
    )


def validation_windows(corpus: CharCorpus, rc: RunConfig) -> jax.Array:
    """The validation windows every arm and the inference are scored on."""
    return jnp.asarray(evaluation_windows(corpus.valid, rc.seq_len + 1, rc.valid_windows))


def _nats_step(model, params, meta, probes, ids, labels):
    def f(params, probes):
        variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
        return model.apply(variables, ids, labels, method=TransformerLM.loss)

    return jax.value_and_grad(f, argnums=(0, 1))(params, probes)


def fp8_step(model: TransformerLM, probes, optimiser: optax.GradientTransformation, policy: str | None):
    """The training step of a model whose linear layers may run in FP8: state (params, optimiser state, FP8
    scaling state); metrics: the loss and the step's scaling statistics. `policy` None: FP32."""

    def step(state, windows):
        params, opt_state, meta = state
        loss, (grads, stats) = _nats_step(model, params, meta, probes, windows[:, :-1], windows[:, 1:])
        updates, opt_state = optimiser.update(grads, opt_state, params)
        if policy is not None:  # delayed: next biases from the history; every policy: count bad amaxes
            meta = update_fp8(meta, stats, policy)
        return (optax.apply_updates(params, updates), opt_state, meta), {"loss": loss, "stats": stats}

    return step


def _plain(stats) -> dict:
    return {k: np.asarray(v).tolist() for k, v in fp8_statistics(stats).items()}


def train_arm(
    corpus: CharCorpus,
    size: SizeConfig,
    arm: str,
    rc: RunConfig,
    *,
    seeds: list[int] | tuple[int, ...] = (0,),
    checkpoint_dir: str | Path | None = None,
    resume: bool = True,
    progress_bar=None,
) -> tuple[dict, ArmResult]:
    """Train one (size, arm) from every seed in `seeds` together (vmapped); returns (parameters stacked over the
    seeds, result)."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds={seeds}: give at least one seed, none repeated")
    model = build_model(size, corpus.vocab_size, rc.seq_len, arm, rc.history)
    optimiser = FP8_LLM_ADAM.optimizer(warmup_cosine(rc.lr, rc.warmup, rc.steps))
    policy = None if arm == "fp32" else arm
    probes = split_fp8(model.init(jax.random.key(0), jnp.zeros((1, rc.seq_len), jnp.int32)))[2]  # zeros: shapes only

    def batch(seed: int, k: int):  # the batch of step k (k = -1: the calibration batch, never trained on)
        return train_windows(corpus.train, rc.seq_len, rc.batch_size, seed, k + 1)

    calibration = jax.jit(lambda p, m, w: _nats_step(model, p, m, probes, w[:, :-1], w[:, 1:])[1][1])

    def initial_state(seed: int):
        params, meta, _ = split_fp8(model.init(jax.random.key(seed), jnp.zeros((1, rc.seq_len), jnp.int32)))
        if arm == "cscale":  # one constant scale per tensor, from the statistics of the initial model
            meta = calibrate_fp8(meta, calibration(params, meta, jnp.asarray(batch(seed, -1))))
        return (params, optimiser.init(params), meta)

    # fit_seeds vmaps `init` over the seeds; the calibration batch comes from numpy, so the states are built here
    # and `init` picks seed s's from the stack
    initial = stack([initial_state(s) for s in seeds])
    seed_index = jnp.asarray(seeds)

    def init(seed):
        i = jnp.argmax(seed_index == seed)
        return jax.tree.map(lambda x: jnp.asarray(x)[i], initial)

    def valid_loss(params, meta, windows):  # per seed; the probes are one copy for all
        variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
        return evaluate(model, variables, windows, shared=("fp8_probe",))

    valid = validation_windows(corpus, rc)

    def record_stats(done, state, metrics, history):  # the scaling statistics every stats_every steps, per seed
        if policy is not None and ((done - 1) % rc.stats_every == 0 or done == rc.steps):
            history.note("stats", done, _plain(metrics["stats"]))

    run = fit_seeds(
        seeds,
        init,
        fp8_step(model, probes, optimiser, policy),
        batch,
        evaluate=lambda state: {"valid/loss": valid_loss(state[0], state[2], valid)},
        steps=rc.steps,
        eval_every=rc.eval_every,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=rc.checkpoint_every,
        resume=resume,
        name=f"{size.name}/{arm}",
        bar=progress_bar,
        on_step=record_stats,
    )
    params, _, meta = run.state
    steps, train = run.history.series("train/loss")
    _, valid_curve = run.history.series("valid/loss")
    losses = np.atleast_1d(np.asarray(run.history.last("valid/loss"), np.float64))
    stats = [
        (step, seed, {layer: v[i] for layer, v in per_layer.items()})
        for step, per_layer in run.history.notes.get("stats", [])
        for i, seed in enumerate(seeds)
    ]
    result = ArmResult(
        arm,
        size.name,
        seeds,
        valid_losses=[float(v) if math.isfinite(v) else float("inf") for v in losses],
        curve=[
            (int(k), np.atleast_1d(t).tolist(), np.atleast_1d(v).tolist())
            for k, t, v in zip(steps, train, valid_curve, strict=True)
        ],
        stats=stats,
        bad_amax=int(sum(int(np.sum(m.bad)) for m in jax.tree.leaves(meta, is_leaf=lambda x: hasattr(x, "bad")))),
        parameters=elements(jax.tree.map(lambda x: x[0], params)),
        seconds=run.wall_seconds,
        resumed_from=run.resumed_from,
    )
    return params, result


def seed_params(params, i: int):
    """Seed i's parameters out of a stack returned by train_arm."""
    return jax.tree.map(lambda x: x[i], params)


@functools.cache
def _quantised_loss(model: TransformerLM, seq_len: int):
    """The jitted FP8 inference of `model` (loss and the probes' statistics), built once per model description: every
    seed's parameters go through one compiled program (the same program each seed compiled for itself before)."""
    _, meta, probes = split_fp8(model.init(jax.random.key(0), jnp.zeros((1, seq_len), jnp.int32)))

    @jax.jit
    def run(params, windows):
        # the probes' gradient carries the forward's statistics; the gradient entries are not used at inference
        def f(probes):
            variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
            return model.apply(variables, windows[:, :-1], windows[:, 1:], method=TransformerLM.loss)

        return jax.value_and_grad(f)(probes)

    return run


def quantised_inference(corpus: CharCorpus, size: SizeConfig, params: dict, rc: RunConfig) -> tuple[float, dict]:
    """Validation loss of trained FP32 `params` with every block's linear layers cast to FP8 with amax scaling
    (post-training quantisation), and the activation and weight biases it used per layer."""
    model = build_model(size, corpus.vocab_size, rc.seq_len, "amax")
    loss, stats = _quantised_loss(model, rc.seq_len)(params, validation_windows(corpus, rc))
    return float(loss), _plain(stats)


def mx_inference(corpus: CharCorpus, size: SizeConfig, params: dict, rc: RunConfig, variant: str) -> float:
    """Validation loss of trained FP32 `params` with every block's linear layers in MX (post-training direct cast:
    activations and weights in blocks of 32 along the contraction axis, MX_VARIANTS[variant] element formats)."""
    model = build_model(size, corpus.vocab_size, rc.seq_len, "mx", mx=variant)
    _, meta, probes = split_fp8(model.init(jax.random.key(0), jnp.zeros((1, rc.seq_len), jnp.int32)))
    valid = validation_windows(corpus, rc)
    variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
    return float(compiled_loss(model)(variables, valid))  # compiled once per variant, not once per seed


__all__ = [
    "ARMS",
    "MX_VARIANTS",
    "ArmResult",
    "RunConfig",
    "SizeConfig",
    "build_model",
    "fp8_step",
    "mx_inference",
    "quantised_inference",
    "seed_params",
    "train_arm",
    "validation_windows",
]


IPU_ROWS = 4  # windows of the micro-batch the simulated IPU costs a step on
# the paper's comparison: FP32 against FP8 with per-tensor amax scaling (cscale's step is amax's with constant scales:
# the same graph less the amax updates, and as slow to lower: 15 GB and more than 15 minutes on the 2-core machine)
IPU_ARMS = ("fp32", "amax")


def ipu_steps(cfg) -> list:
    """The training step of the FP32 and amax-scaled FP8 arms (IPU_ARMS; `fp8_step`, as `train_arm` fits it, one
    seed) at the run's smallest size and its sequence length, for the simulated IPU (ipu_model.steps): a micro-batch
    of IPU_ROWS windows. The FP8 casts
    are JAX's simulated ones (values rounded to the FP8 grid in float32), so an FP8 arm costs its float32 matmuls and
    the casts and scaling around them, not the IPU's native FP8 arithmetic."""
    from core.data.shakespeare import load_shakespeare
    from ipu_model.steps import Step

    c, rc = cfg.fp8_llm, cfg.fp8_llm.run
    size = min(c.sizes, key=lambda s: (s.depth, s.d_model))
    vocab = load_shakespeare().vocab_size
    optimiser = FP8_LLM_ADAM.optimizer(warmup_cosine(rc.lr, rc.warmup, rc.steps))
    windows = jax.ShapeDtypeStruct((IPU_ROWS, rc.seq_len + 1), jnp.int32)
    steps = []
    for arm in (a for a in IPU_ARMS if a in c.arms):
        model = build_model(size, vocab, rc.seq_len, arm, rc.history)
        params, meta, probes = split_fp8(model.init(jax.random.key(0), jnp.zeros((1, rc.seq_len), jnp.int32)))
        state = jax.eval_shape(lambda p=params, m=meta: (p, optimiser.init(p), m))
        steps.append(
            Step(
                f"{arm} training step",
                jax.jit(fp8_step(model, probes, optimiser, None if arm == "fp32" else arm)),
                (state, windows),
                f"size {size.name}: d_model {size.d_model}, depth {size.depth}, {size.heads} heads; {IPU_ROWS} windows "
                f"of {rc.seq_len} tokens",
            )
        )
    return steps

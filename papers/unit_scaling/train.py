"""Training one arm of the character-LM experiment: every seed at once (vmapped), resumable, with progress; and the
analyses at initialisation (the per-tensor scales, the FP8 gradient error). What they return are the types of
papers/unit_scaling/results.py; the arms themselves are papers/unit_scaling/arms.py."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.charlm import (
    PLAIN_FP8,
    SIMULATE_FP8,
    UNIT_SCALING_ADAM,
    FP8Casts,
    evaluate,
    fp16_moments,
    rescale_moments,
    store_moments,
    to_fp16_grid,
    to_fp16_stochastic,
    train_windows,
    warmup_cosine,
)
from core.data.shakespeare import CharCorpus, evaluation_windows, sample_windows
from core.io import atomic_write_json
from core.nn import FP32, Formats, Standard, TransformerLM, UnitScaled
from core.nn.parametrization import Parametrization
from core.numerics import (
    all_finite,
    dynamic_loss_scale_init,
    dynamic_loss_scale_update,
    format_stats,
    stochastic_rounding,
    unscale_grads,
)
from core.train import SKIPPED, fit_seeds, if_finite
from core.unit_scaling.analysis import collect_tensors, tensor_scales
from papers.unit_scaling.arms import ARMS, IID_LABEL, Arm
from papers.unit_scaling.results import ArmResult, GradientError, TensorScale


def parametrization(arm: Arm, constraint: str | None = "gmean") -> Parametrization:
    """The arm's parametrization: unit-scaled (with `constraint`) or standard."""
    return UnitScaled(constraint) if arm.scaling == "unit" else Standard()


def formats(arm: Arm, fp8: FP8Casts | None = None) -> Formats:
    """The arm's number formats. FP8 arms follow the `fp8` recipe (default SIMULATE_FP8: casts at matmul operands
    only, as the paper); FP16 arms cast every op boundary, the head included, rounding to nearest (pure FP16)."""
    if arm.fp8:
        return (fp8 or SIMULATE_FP8).formats()
    if arm.fwd is None:
        return FP32
    return Formats(fwd=arm.fwd, bwd=arm.bwd, head="low")


def recipe(cfg) -> FP8Casts:
    """The FP8 arms' cast recipe of the config's `fp8` section."""
    return FP8Casts(cfg.fp8.rounding, bool(cfg.fp8.saturate), cfg.fp8.head)


def build_model(cfg, corpus: CharCorpus, arm: Arm, fp8: FP8Casts | None = None) -> TransformerLM:
    m = cfg.model
    return TransformerLM(
        vocab=corpus.vocab_size,
        d_model=m.d_model,
        depth=m.depth,
        heads=m.heads,
        seq_len=m.seq_len,
        parametrization=parametrization(arm, cfg.constraint),
        formats=formats(arm, fp8 or recipe(cfg)),
        norm=m.norm,
    )


STORE_STREAM = 0x5707  # folded into a step's rounding key for the FP16 storage casts (apart from the model's casts)


def storage_keys(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The rounding keys of the "paper" FP16 storage in the step of rounding key `key`, three streams apart from the
    model's casts: the weights', the moments' after the update, the moments' after a loss-scale rescale."""
    weights = jax.random.fold_in(key, STORE_STREAM)
    return weights, jax.random.fold_in(weights, 1), jax.random.fold_in(key, STORE_STREAM + 1)


def _bpc(nats):
    return nats / math.log(2)


def arm_step(cfg, corpus: CharCorpus, arm: Arm, lr: float):
    """(model, init_one, train_step) of `arm` at learning rate `lr`: `init_one(seed)` a seed's state (its parameters,
    in FP16 storage where the arm keeps them so, the optimiser's state, the loss scale, the step and the seed),
    `train_step(state, windows)` one training step (the loss-scaled gradient under stochastic rounding keyed by
    (seed, step), unscaled, Adam, FP16 storage, skipped where not finite) returning (state, {"loss", SKIPPED})."""
    model = build_model(cfg, corpus, arm)

    adam = replace(UNIT_SCALING_ADAM, weight_decay=cfg.weight_decay)

    def make_optimizer(eps):
        return replace(adam, eps=eps).optimizer(warmup_cosine(lr, cfg.warmup_steps, cfg.steps))

    optimizer = make_optimizer(adam.eps)
    dummy = jnp.zeros((1, cfg.model.seq_len), jnp.int32)

    storage = cfg.fp16_storage if arm.fp16 else "fp32"  # arms.FP16_STORAGE
    low_storage = storage != "fp32"

    def init_one(seed):
        with stochastic_rounding(jax.random.key(0)):  # init runs the forward pass, casts and all
            params = model.init(jax.random.key(seed), dummy)
        params = to_fp16_grid(params) if low_storage else params
        ls = dynamic_loss_scale_init(cfg.dynamic_initial_scale) if arm.loss_scale == "dynamic" else None
        # the step counter keys stochastic rounding: fold_in(key(seed), step), reproducible on resume
        return {"params": params, "opt": optimizer.init(params), "loss_scale": ls, "step": jnp.int32(0), "seed": seed}

    def loss_fn(params, ids, labels, key=None):
        with stochastic_rounding(jax.random.key(0) if key is None else key):
            return model.apply(params, ids, labels, method=TransformerLM.loss)

    def train_step(s, windows):
        ids, labels = windows[:, :-1], windows[:, 1:]
        if arm.loss_scale == "dynamic":
            scale = s["loss_scale"].scale
        else:
            scale = jnp.float32(arm.static_scale if arm.loss_scale == "static" else 1.0)
        key = jax.random.fold_in(jax.random.key(s["seed"]), s["step"])
        loss, scaled_grads = jax.value_and_grad(lambda p: loss_fn(p, ids, labels, key) * scale)(s["params"])
        grads = unscale_grads(scaled_grads, scale)
        finite = all_finite(grads)
        if low_storage:
            # Adam keeps the moments of the loss-scaled gradient, which FP16 can hold where the unscaled ones would
            # underflow; with eps scaled alike its update equals Adam's on the unscaled gradient (the authors' code:
            # "Adam updates are invariant to fixed gradient scale"). The update arithmetic is FP32; what is stored
            # in FP16 follows `storage`.
            weights_key, moments_key, _ = storage_keys(key)  # the "paper" storage's rounding bits
            optimizer_ = fp16_moments(make_optimizer(adam.eps * scale), storage)
            updates, opt = optimizer_.update(scaled_grads, s["opt"], s["params"], key=moments_key)
            params = optax.apply_updates(s["params"], updates)
            params = to_fp16_grid(params) if storage == "fp16" else to_fp16_stochastic(params, weights_key)
        else:
            updates, opt = optimizer.update(grads, s["opt"], s["params"])
            params = optax.apply_updates(s["params"], updates)
        kept = if_finite(finite, {"params": params, "opt": opt}, {"params": s["params"], "opt": s["opt"]})
        loss_scale = (
            dynamic_loss_scale_update(s["loss_scale"], finite, growth_interval=cfg.dynamic_growth_interval)
            if arm.loss_scale == "dynamic"
            else None
        )
        if low_storage and loss_scale is not None:  # the moments follow the scale into its new units (exact:
            # the ratio is a power of two)
            rescaled = rescale_moments(kept["opt"], loss_scale.scale / scale)
            kept["opt"] = store_moments(rescaled, storage, storage_keys(key)[2])
        new = {"step": s["step"] + 1, "seed": s["seed"], **kept, "loss_scale": loss_scale}
        return new, {"loss": loss / scale, SKIPPED: (~finite).astype(jnp.int32)}

    return model, init_one, train_step


def train_arm(
    cfg, corpus: CharCorpus, arm: Arm, lr: float, checkpoint_dir: Path | None, resume: bool, track: bool = False
) -> ArmResult:
    """Train `arm` for cfg.steps steps on every seed of cfg.seeds at once; return its measurements. With `track`,
    the std of every tensor is recorded at initialisation and at the evaluations of cfg.track_steps (kept beside
    the checkpoints, so a resumed run keeps the steps it had)."""
    t_start = time.perf_counter()
    seeds = list(cfg.seeds)
    model, init_one, train_step = arm_step(cfg, corpus, arm, lr)
    seq = cfg.model.seq_len

    tracks_file = None if checkpoint_dir is None else Path(checkpoint_dir) / "scale_tracks.json"
    tracks: dict[int, list[TensorScale]] = {}
    if track and resume and tracks_file is not None and tracks_file.exists():
        tracks = {
            int(k): [TensorScale(r["name"], r["kind"], r["std"], tuple(r["shape"])) for r in v]
            for k, v in json.loads(tracks_file.read_text()).items()
        }

    def record_scales(step: int, stacked_params) -> None:
        if not track or (step != 0 and step not in set(cfg.track_steps)) or step in tracks:
            return
        tracks[step] = scales_of(cfg, corpus, model, jax.tree_util.tree_map(lambda x: x[0], stacked_params))
        if tracks_file is not None:
            atomic_write_json(tracks_file, {k: [asdict(r) for r in v] for k, v in tracks.items()})

    def evaluate_and_track(s) -> dict:
        record_scales(int(np.asarray(s["step"]).ravel()[0]), s["params"])
        return {"valid/bpc": evaluate_bpc(s["params"], valid_windows)}

    valid_windows = evaluation_windows(corpus.valid, seq + 1, cfg.valid_windows)
    test_windows = evaluation_windows(corpus.test, seq + 1, cfg.test_windows)

    def evaluate_bpc(params, windows) -> list[float]:  # per seed
        return [float(_bpc(v)) for v in evaluate(model, params, windows, batch_size=cfg.eval_batch_size)]

    run = fit_seeds(
        seeds,
        init_one,
        train_step,
        lambda seed, k: train_windows(corpus.train, seq, cfg.batch_size, seed, k),
        evaluate=evaluate_and_track,
        steps=cfg.steps,
        eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        checkpoint_dir=checkpoint_dir,
        resume=resume,
        name=arm.name,
    )
    state = run.state
    init_params = jax.vmap(init_one)(jnp.asarray(seeds))["params"]
    record_scales(0, init_params)
    test_bpc = evaluate_bpc(state["params"], test_windows)
    initial_scale = {"static": arm.static_scale, "dynamic": cfg.dynamic_initial_scale}.get(arm.loss_scale, 1.0)
    final_scale = (
        [float(v) for v in np.asarray(state["loss_scale"].scale)]
        if arm.loss_scale == "dynamic"
        else [initial_scale] * len(seeds)
    )
    underflow = {
        "init": gradient_underflow(cfg, corpus, arm, model, init_params, initial_scale),
        "final": gradient_underflow(cfg, corpus, arm, model, state["params"], final_scale[0]),
    }
    steps, valid = run.history.series("valid/bpc")
    return ArmResult(
        arm=arm.name,
        test_bpc=test_bpc,
        valid_curve=[(int(s), v.tolist()) for s, v in zip(steps, valid, strict=True)],
        skipped_steps=[int(v) for v in np.atleast_1d(run.skipped)],
        grad_underflow=underflow,
        final_loss_scale=final_scale,
        seconds=time.perf_counter() - t_start,
        resumed_from=int(run.resumed_from),
        scale_tracks=dict(sorted(tracks.items())),
    )


def scales_of(cfg, corpus: CharCorpus, model: TransformerLM, params) -> list[TensorScale]:
    """The std of every tensor of `model` (casts and all) at `params` on a fixed validation batch."""
    windows = sample_windows(corpus.valid, cfg.model.seq_len + 1, cfg.batch_size, np.random.default_rng(54321))
    ids, labels = jnp.asarray(windows[:, :-1]), jnp.asarray(windows[:, 1:])
    with stochastic_rounding(jax.random.key(0)):
        rows = tensor_scales(model, params, lambda m: m.loss(ids, labels))
    return [TensorScale(r.name, r.kind, r.std, tuple(r.shape)) for r in rows]


def gradient_underflow(
    cfg, corpus: CharCorpus, arm: Arm, model: TransformerLM, stacked_params, loss_scale: float
) -> float:
    """Fraction of non-zero activation-gradient values (computed in FP32, with the arm's scaling and the given
    loss scale) that the arm's gradient format would flush to zero. 0 for FP32 arms. Measured on the first seed."""
    if arm.bwd is None:
        return 0.0
    params = jax.tree_util.tree_map(lambda x: x[0], stacked_params)
    fp32_model = model.clone(formats=FP32)
    windows = sample_windows(corpus.valid, cfg.model.seq_len + 1, cfg.batch_size, np.random.default_rng(12345))
    ids, labels = jnp.asarray(windows[:, :-1]), jnp.asarray(windows[:, 1:])
    # the scale given: a dynamic arm's final underflow is measured at its final scale, not its initial one
    tensors = collect_tensors(fp32_model, params, lambda m: m.loss(ids, labels), loss_scale=loss_scale)
    grads = [np.asarray(v).ravel() for (_, kind), v in tensors.items() if kind == "activation grad"]
    flat = np.concatenate(grads)
    flat = flat[flat != 0]
    if flat.size == 0:
        return 0.0
    stats = format_stats(flat, arm.bwd)
    return stats["underflow"]


def init_scales(c, corpus: CharCorpus) -> dict[str, list[TensorScale]]:
    """Per-tensor stds at initialisation for the regular and the unit-scaled FP32 model on one training batch,
    and for the unit-scaled model on i.i.d. uniform tokens (the independence the scaling rules assume)."""
    rng = np.random.default_rng(0)
    text = sample_windows(corpus.train, c.model.seq_len + 1, c.analysis_batch_size, rng)
    iid = rng.integers(1, corpus.vocab_size, text.shape).astype(np.int32)
    out = {}
    for label, name, windows in (
        (ARMS["fp32_regular"].label, "fp32_regular", text),
        (ARMS["fp32_unit"].label, "fp32_unit", text),
        (IID_LABEL, "fp32_unit", iid),
    ):
        ids, labels = jnp.asarray(windows[:, :-1]), jnp.asarray(windows[:, 1:])
        model = build_model(c, corpus, ARMS[name])
        variables = model.init(jax.random.key(int(c.seeds[0])), ids)
        tensors = collect_tensors(model, variables, lambda m, ids=ids, labels=labels: m.loss(ids, labels))
        out[label] = _scales_with_qkv_split(tensors)
    return out


def _scales_with_qkv_split(tensors) -> list[TensorScale]:
    """TensorScale of every tensor, with each attention's fused qkv projection output (and its gradient) measured
    as q, k and v separately (the last axis holds them one after another, as Attention reshapes it)."""
    rows = []
    for (name, kind), x in tensors.items():
        x = jnp.asarray(x, jnp.float32)
        if name.endswith("/qkv") and kind.startswith("activation"):
            for part, y in zip("qkv", jnp.split(x, 3, axis=-1), strict=True):
                rows.append(TensorScale(f"{name[:-3]}{part}", kind, float(jnp.std(y)), tuple(y.shape)))
        else:
            rows.append(TensorScale(name, kind, float(jnp.std(x)), tuple(x.shape)))
    return rows


GRADIENT_RECIPES = (
    PLAIN_FP8,
    FP8Casts("stochastic", True, "low"),
    FP8Casts("nearest", False, "fp32"),
    SIMULATE_FP8,
)


def gradient_errors(c, corpus: CharCorpus) -> list[GradientError]:
    """At initialisation (first seed, one training batch): how far each FP8 recipe's parameter gradient is from the
    FP32 gradient of the same model at the same weights, for the unit-scaled and the regular model. Relative error
    ||g - g_fp32|| / ||g_fp32|| over all parameters together, and the smallest per-parameter cosine."""
    windows = sample_windows(corpus.train, c.model.seq_len + 1, c.batch_size, np.random.default_rng(777))
    ids, labels = jnp.asarray(windows[:, :-1]), jnp.asarray(windows[:, 1:])
    rows = []
    for scaling, fp8_arm, fp32_arm in (("unit", "fp8_unit", "fp32_unit"), ("regular", "fp8_regular", "fp32_regular")):
        fp32_model = build_model(c, corpus, ARMS[fp32_arm])
        params = fp32_model.init(jax.random.key(int(c.seeds[0])), ids)

        def grads(model, params=params):
            def loss(p):
                with stochastic_rounding(jax.random.key(1)):
                    return model.apply(p, ids, labels, method=TransformerLM.loss)

            return [np.asarray(g, np.float64).ravel() for g in jax.tree_util.tree_leaves(jax.grad(loss)(params))]

        reference = grads(fp32_model)
        ref_all = np.concatenate(reference)
        for rec in GRADIENT_RECIPES:
            ours = grads(build_model(c, corpus, ARMS[fp8_arm], rec))
            cosines = [
                float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) if np.linalg.norm(a) > 0 else 0.0
                for a, b in zip(ours, reference, strict=True)
            ]
            diff = np.concatenate(ours) - ref_all
            rows.append(
                GradientError(
                    scaling=scaling,
                    recipe=rec.label,
                    relative_error=float(np.linalg.norm(diff) / np.linalg.norm(ref_all)),
                    min_cosine=min(cosines),
                )
            )
    return rows


IPU_ROWS = 4  # windows of the micro-batch the simulated IPU costs a step on
IPU_ARMS = ("fp32_regular", "fp32_unit", "fp8_unit", "fp16_unit")  # the baseline and unit scaling in each format


def ipu_steps(cfg) -> list:
    """The training step (`arm_step`'s, one seed) of the FP32 baseline and of unit scaling in FP32, FP16 and FP8,
    those of them the run trains, at the run's model and sequence length, for the simulated IPU (ipu_model.steps): a
    micro-batch of IPU_ROWS windows."""
    from core.data.shakespeare import load_shakespeare
    from ipu_model.steps import Step

    c = cfg.unit_scaling
    corpus, m = load_shakespeare(), c.model
    windows = jax.ShapeDtypeStruct((IPU_ROWS, m.seq_len + 1), jnp.int32)
    steps = []
    for name in (a for a in IPU_ARMS if a in c.arms):
        _, init_one, train_step = arm_step(c, corpus, ARMS[name], float(c.lr[name]))
        steps.append(
            Step(
                f"{name} training step",
                jax.jit(train_step),
                (jax.eval_shape(init_one, jnp.int32(0)), windows),
                f"d_model {m.d_model}, depth {m.depth}, {m.heads} heads, {m.norm}-norm; {IPU_ROWS} windows of "
                f"{m.seq_len} tokens",
            )
        )
    return steps

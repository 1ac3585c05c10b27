"""The FP8 LLM run: train every (size, arm) from its seeds, evaluate every trained FP32 model in post-training FP8
and MX, and run SmolLM2's FP8 and MX inference. Everything the claims, tables and figures read is in the Results it
returns (papers/fp8_llm/results.py); each (size, arm) keeps its checkpoints under the run's checkpoint directory and
a finished SmolLM2 evaluation is kept in the memo store (core.memo), so a resumed run retrains and re-evaluates
nothing."""

from __future__ import annotations

import dataclasses
import functools

from core.context import RunContext
from papers.fp8_llm.config import arm_seeds
from papers.fp8_llm.results import Inference, PretrainedResult, Results

STATS_ARMS = ("amax",)  # the arms whose scaling statistics the Results keep (the claims, the fact and the figure read)


def run(cfg, ctx: RunContext) -> Results:
    from core.data.shakespeare import load_shakespeare
    from core.progress import progress
    from papers.fp8_llm.train import mx_inference, quantised_inference, seed_params, train_arm

    c = cfg.fp8_llm
    corpus = load_shakespeare()
    rc = c.run
    arms: dict = {}
    inference = {}
    bar = progress(total=len(c.sizes) * len(c.arms) * rc.steps, desc="FP8 LM arms", unit="step")
    for size in c.sizes:
        size_name = size.name
        arms[size_name] = {}
        for arm in c.arms:
            params, result = train_arm(
                corpus,
                size,
                arm,
                rc,
                seeds=arm_seeds(cfg, arm),
                checkpoint_dir=ctx.checkpoint_path(size_name, arm),
                resume=ctx.resume,
                progress_bar=bar,
            )
            if arm not in STATS_ARMS:
                result = dataclasses.replace(result, stats=[])
            arms[size_name][arm] = result
            if arm == "fp32":
                # compared with the FP32 arm's own final validation loss, seed by seed (same windows, parameters)
                per_seed = [
                    quantised_inference(corpus, size, seed_params(params, i), rc) for i in range(len(result.seeds))
                ]
                inference[size_name] = Inference(
                    fp8=[loss for loss, _ in per_seed],
                    stats=per_seed[0][1],
                    mx={
                        v: [mx_inference(corpus, size, seed_params(params, i), rc, v) for i in range(len(result.seeds))]
                        for v in c.mx
                    },
                )
    bar.close()
    return Results(arms, inference, _pretrained(c.pretrained, ctx))


def _pretrained(pc, ctx: RunContext) -> PretrainedResult | None:
    """SmolLM2's FP8 inference (resumable: a finished evaluation is kept in the memo store, stage "pretrained",
    keyed by its settings and the evaluation's code, and reused on resume)."""
    if not pc.windows:
        return None
    key = {"windows": pc.windows, "window": pc.window, "policies": list(pc.policies)}
    compute = functools.partial(evaluate_pretrained, pc.windows, pc.window, tuple(pc.policies))
    return ctx.memo("pretrained", key, compute, like=PretrainedResult)


def evaluate_pretrained(windows: int, window: int, policies: tuple[str, ...]) -> PretrainedResult:
    from papers.fp8_llm.pretrained import pretrained_fp8_inference

    return pretrained_fp8_inference(windows, window, policies)

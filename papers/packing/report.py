"""The packing report: claims, the paper's table beside ours, training throughput and curves."""

from __future__ import annotations

from typing import Any

import numpy as np

from core.report import Claim, Figure, Report, Rule, Table, at_least, at_most
from papers.packing.tables import LABELS, PUBLISHED, PUBLISHED_BOUND, PUBLISHED_SECONDS, Cell


def to_the_digits() -> Rule:
    """Ours, printed to as many decimals as the paper prints (see `_printed`), is the paper's printed figure."""
    return Rule("equal at the paper's printed digits", lambda ours, paper: ours == paper)


def _printed(value: float, like: str) -> str:
    """`value` with as many decimals as the printed figure `like`."""
    decimals = len(like.split(".")[1]) if "." in like else 0
    return f"{value:.{decimals}f}"


CONTAMINATION_TOL = 1e-5  # float32: outputs of a 4-layer model differ from the unpacked ones only by rounding
THROUGHPUT_FRACTION = 0.8  # packed tokens/s gain >= 80% of the packing speed-up (the target)
CONVERGENCE_REL = 0.02  # validation loss at equal sequences seen, packed vs padded


def _cell_claims(cells: list[Cell]) -> list[Claim]:
    claims = []
    for cell in cells:
        pub = cell.published
        if pub is None:
            continue
        eff, speed = pub
        tag = f"{cell.histogram}-{cell.method}{cell.limit}".replace("_", "-")
        where = f"{cell.method.upper()} (max {cell.limit} per pack) on {LABELS[cell.histogram]}"
        claims.append(
            Claim(f"{tag}-speedup", f"{where}: speed-up over padding", speed, to_the_digits()).measured(
                _printed(cell.speedup, speed), f"{cell.speedup:.7f}; {cell.packs:,} packs; bound {cell.bound:.5f}"
            )
        )
        claims.append(
            Claim(f"{tag}-efficiency", f"{where}: efficiency, %", eff, to_the_digits()).measured(
                _printed(100 * cell.efficiency, eff), f"{100 * cell.efficiency:.5f}%"
            )
        )
    for name, printed in PUBLISHED_BOUND.items():
        bound = next((c.bound for c in cells if c.histogram == name), None)
        if bound is not None:
            claims.append(
                Claim(
                    f"bound-{name}".replace("_", "-"),
                    f"Theoretical speed-up bound on {LABELS[name]}",
                    printed,
                    to_the_digits(),
                ).measured(_printed(bound, printed), f"{bound:.7f}")
            )
    for (name, method), seconds in PUBLISHED_SECONDS.items():
        limit = 12 if method != "nnlshp" else 3
        ours = next((c for c in cells if (c.histogram, c.method, c.limit) == (name, method, limit)), None)
        if ours is not None:
            claims.append(
                Claim(
                    f"{method}-{name}-time".replace("_", "-"),
                    f"{method.upper()} ({limit}) packs {LABELS[name]} no slower than the paper's run, seconds",
                    seconds,
                    at_most(seconds),
                ).measured(ours.seconds)
            )
    return claims


def build_report(cfg, cells: list[Cell], training: dict[str, Any] | None) -> Report:
    claims = _cell_claims(cells)
    rows = []
    for c in cells:
        pub = c.published
        paper_s = PUBLISHED_SECONDS.get((c.histogram, c.method)) if pub else None
        rows.append(
            [
                LABELS[c.histogram],
                c.method.upper(),
                c.limit,
                f"{c.packs:,}",
                f"{100 * c.efficiency:.3f}%",
                f"{c.speedup:.5f}",
                f"{pub[0]}%" if pub else "-",
                pub[1] if pub else "-",
                f"{c.bound:.4f}",
                f"{c.seconds:.3f}",
                paper_s if paper_s is not None else "-",
            ]
        )
    tables = [
        Table(
            "packing",
            "Histogram packing: ours beside the paper (Krell et al. 2021, Table 2 and text)",
            [
                "dataset",
                "method",
                "max seq./pack",
                "packs",
                "efficiency",
                "speed-up",
                "paper efficiency",
                "paper speed-up",
                "bound",
                "seconds",
                "paper seconds",
            ],
            rows,
            caption="Efficiency = real tokens / (packs x L); speed-up = sequences / packs. Run times on this "
            "machine (the paper's on its own).",
        )
    ]
    figures, metrics, notes = [], {}, []
    if training is not None:
        runs, check, corpus = training["runs"], training["contamination"], training["corpus"]
        padded, packed = runs["padded"], runs["packed"]
        lengths = np.array([s.size for s in corpus.train])
        probe = corpus.packing
        gain = packed.tokens_per_second / padded.tokens_per_second
        worst = max(check["loss"], check["cls"], check["hidden"])
        claims.append(
            Claim(
                "no-cross-contamination",
                "A packed sequence's hidden states, [CLS] output and MLM loss equal those it gets alone "
                "(largest absolute difference)",
                0.0,
                at_most(CONTAMINATION_TOL),
            ).measured(
                worst,
                f"{check['sequences']} validation sequences in {check['packs']} packs; loss "
                f"{check['loss']:.1e}, [CLS] {check['cls']:.1e}, hidden {check['hidden']:.1e}",
            )
        )
        claims.append(
            Claim(
                "packed-throughput",
                "Packed training processes real tokens faster than padded by at least 80% of the packing "
                "speed-up (ratio of the gain to the speed-up)",
                1.0,
                at_least(THROUGHPUT_FRACTION),
            ).measured(
                gain / probe.speedup,
                f"real tokens/s {packed.tokens_per_second:,.0f} packed vs "
                f"{padded.tokens_per_second:,.0f} padded: {gain:.2f}x; packing speed-up {probe.speedup:.2f}x "
                f"(bound {probe.speedup_bound:.2f}x)",
            )
        )
        v_pad, v_pack = padded.curve[-1][1], packed.curve[-1][1]
        rel = (v_pack - v_pad) / v_pad
        claims.append(
            Claim(
                "equal-convergence",
                "Packed training reaches the padded run's validation MLM loss at the same number of sequences "
                "seen (relative difference)",
                0.0,
                at_most(CONVERGENCE_REL),
            ).measured(
                abs(rel),
                f"{v_pack:.4f} packed vs {v_pad:.4f} padded nats after {packed.curve[-1][0]:,} / "
                f"{padded.curve[-1][0]:,} sequences",
            )
        )
        tables.append(
            Table(
                "training",
                "Padded vs packed masked-LM training (same sequences, same masks)",
                [
                    "run",
                    "rows per step",
                    "steps",
                    "sequences",
                    "real tokens",
                    "slot tokens",
                    "token efficiency",
                    "step time (s)",
                    "real tokens/s",
                    "final valid loss",
                ],
                [
                    [
                        r.mode,
                        r.rows_per_step,
                        r.steps,
                        r.sequences,
                        f"{r.real_tokens:,}",
                        f"{r.slot_tokens:,}",
                        f"{r.real_tokens / max(r.slot_tokens, 1):.1%}",
                        f"{r.step_seconds:.1f}",
                        f"{r.tokens_per_second:,.0f}",
                        f"{r.curve[-1][1]:.4f}",
                    ]
                    for r in (padded, packed)
                ],
                caption=f"{len(corpus.train):,} training speeches as [CLS] + text, at most "
                f"{cfg.packing.train.max_len} characters ({corpus.truncated:.1%} truncated); SPFHP with at most "
                f"{cfg.packing.train.max_sequences_per_pack} per pack. Compilation is excluded from step times.",
            )
        )
        figures.append(
            Figure(
                "training_curves",
                _curves(padded, packed),
                "Validation MLM loss against sequences seen: padded and packed.",
            )
        )
        figures.append(
            Figure(
                "lengths",
                _lengths(lengths, cfg.packing.train.max_len),
                "Length histogram of the training sequences (characters).",
            )
        )
        metrics.update(
            {
                "tokens_per_second/padded": padded.tokens_per_second,
                "tokens_per_second/packed": packed.tokens_per_second,
                "throughput_gain": gain,
                "packing_speedup": probe.speedup,
                "valid_loss/padded": v_pad,
                "valid_loss/packed": v_pack,
                "contamination_max_diff": worst,
            }
        )
        notes.append(
            "Both runs train the same model from the same initialisation on the same masked sequences; the packed "
            "run puts about as many sequences in a step as the padded run (fewer rows), so the optimiser sees the "
            "same number of sequences per step and the curves compare per sequence seen."
        )
    metrics.update({f"speedup/{c.histogram}/{c.method}{c.limit}": c.speedup for c in cells})
    return Report(
        "packing", "Efficient sequence packing without cross-contamination", claims, tables, figures, metrics, notes
    )


def _curves(padded, packed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in (padded, packed):
        x, y = zip(*r.curve, strict=True)
        ax.plot(x, y, marker="o", label=f"{r.mode} ({r.tokens_per_second:,.0f} real tokens/s)")
    ax.set_xlabel("sequences seen")
    ax.set_ylabel("validation MLM loss (nats)")
    ax.legend()
    fig.tight_layout()
    return fig


def _lengths(lengths: np.ndarray, max_len: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(lengths, bins=np.arange(1, max_len + 2), color="tab:blue")
    ax.set_xlabel("sequence length (characters, with [CLS])")
    ax.set_ylabel("sequences")
    fig.tight_layout()
    return fig


__all__ = ["PUBLISHED", "build_report"]

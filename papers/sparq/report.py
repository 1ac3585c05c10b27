"""The SparQ report: the claims at the paper's 1/8 compression (declared from the config alone, before any run), the
sweep table, and score and BPC against transfer."""

from __future__ import annotations

from core import plots
from core.report import Claim, Figure, Report, Table, at_least, at_most, is_true

# Ribar et al. 2024 at 1/8 of the dense transfer, Llama-2-7B (refs/PAPERS.md)
PAPER_REPETITION = {"dense": 207, "sparq": 186, "h2o": 12, "local": 19}
PAPER_BPC = {"dense": 0.770, "sparq": 0.782, "h2o": 0.829, "local": 0.881}  # WikiText-103

# ---------------------------------------------------------------------------------------------- claims

BEATEN = {"h2o": "H2O", "local": "the local window"}  # the baselines SparQ is claimed to beat, in report order

CLAIMS = {
    "sparq-repetition": Claim(
        "sparq-repetition",
        "SparQ at 1/8 of the dense transfer keeps at least 90% of the dense repetition "
        "score (ratio of mean characters copied)",
        round(186 / 207, 3),
        at_least(0.9),
    ),
    "sparq-bpc": Claim(
        "sparq-bpc",
        "SparQ at 1/8 of the dense transfer: BPC within 2% of dense (relative increase)",
        round(0.782 / 0.770 - 1, 4),
        at_most(0.02),
    ),
    **{
        f"sparq-beats-{name}": Claim(
            f"sparq-beats-{name}",
            f"At 1/8 of the transfer SparQ beats {label} on both repetition score and BPC",
            "yes",
            is_true("higher score and lower BPC"),
        )
        for name, label in BEATEN.items()
    },
    "transfer-formula": Claim(
        "transfer-formula",
        "The instrumented transfer equals the paper's formulas: SparQ (2+2k)d + d + Sr "
        "+ 2d, dense (2+2S)d, per head and step",
        "yes",
        is_true("equal at every cache length checked"),
    ),
}


def decode_speed_claim(speed_seq: int) -> Claim:
    return Claim(
        "decode-speed",
        f"SparQ decode-step attention is faster than dense at S={speed_seq} on this CPU "
        "(the paper: 3.0x on an A100, 7.4x on an IPU), speed-up",
        3.0,
        at_least(3.0),
    )


def claims(cfg) -> list[Claim]:
    """The claims the configured methods can test (every SparQ claim needs SparQ in `sparq.methods`, a
    beats-X claim also X), declared before the run."""
    c = cfg.sparq
    out = []
    if "sparq" in c.methods:
        out += [CLAIMS["sparq-repetition"], CLAIMS["sparq-bpc"]]
        out += [CLAIMS[f"sparq-beats-{name}"] for name in BEATEN if name in c.methods]
        out.append(CLAIMS["transfer-formula"])
    return [*out, decode_speed_claim(c.speed_seq)]


def _find(results, name, ratio=None):
    for r in results:
        m = r["method"]
        if m.name == name and (ratio is None or abs(m.ratio - ratio) < 1e-9):
            return r
    return None


def measure(cfg, results, speed) -> list[Claim]:
    """Our figure for every declared claim. The repetition claims stay in the report when the dense model copies
    too little for the task to tell the methods apart, with a detail saying so."""
    c = cfg.sparq
    dense = _find(results, "dense")
    ratio = float(c.claim_ratio)
    sparq = _find(results, "sparq", ratio)
    found: dict[str, tuple] = {}  # claim id -> (ours, detail)
    if sparq is not None:
        copies = dense["score"] >= c.min_dense_score  # else the task does not tell the methods apart
        why = (
            ""
            if copies
            else f"; not measured: the dense model copies only {dense['score']:.1f} characters (< "
            f"{c.min_dense_score:g}), so the task cannot tell the methods apart at this scale"
        )
        found["sparq-repetition"] = (
            sparq["score"] / dense["score"] if copies else float("nan"),
            f"{sparq['score']:.1f} vs dense {dense['score']:.1f} characters (of {c.generate}){why}",
        )
        found["sparq-bpc"] = (sparq["bpc"] / dense["bpc"] - 1, f"{sparq['bpc']:.4f} vs dense {dense['bpc']:.4f} BPC")
        for name in BEATEN:
            other = _find(results, name, ratio)
            if other is None:
                continue
            found[f"sparq-beats-{name}"] = (
                copies and sparq["score"] > other["score"] and sparq["bpc"] < other["bpc"],
                f"score {sparq['score']:.1f} vs {other['score']:.1f}; BPC {sparq['bpc']:.4f} vs "
                f"{other['bpc']:.4f}{why}",
            )
        d = c.model.d_model // c.model.heads
        m = sparq["method"]
        S_end = c.model.seq_len  # the cache length at the last generated character
        formula_ok = all(
            sparq_attention_transfer(S, d, m.r, m.k) == measured
            for S, measured in _transfers_at(S_end, d, m.r, m.k, m.local_k)
        )
        found["transfer-formula"] = (
            formula_ok,
            f"checked at S = {S_end // 2} and {S_end} with d={d}, r={m.r}, k={m.k}",
        )
    t_dense, t_sparq, transfer = speed
    found["decode-speed"] = (
        t_dense / t_sparq,
        f"dense {t_dense * 1e3:.2f} ms vs SparQ {t_sparq * 1e3:.2f} ms per step over "
        f"{c.speed_rows} heads x {c.speed_seq} positions x 128, r={c.speed_r}, k={c.speed_k}: "
        f"{transfer:.3f} of the dense transfer",
    )
    return [claim.measured(*found[claim.id]) for claim in claims(cfg)]


def sparq_attention_transfer(S: int, d: int, r: int, k: int) -> int:
    """The paper's formula, elements per head per step."""
    return (2 + 2 * k) * d + d + S * r + 2 * d


def _transfers_at(S_end: int, d: int, r: int, k: int, local_k: int):
    """(S, transfer counted by the instrumented sparq_attention and dense_attention) for a few cache lengths, the
    dense count checked against its formula on the way."""
    import jax.numpy as jnp

    from papers.sparq.attention import dense_attention, sparq_attention

    for S in sorted({S_end // 2, S_end}):
        if S < k:
            continue
        q, K = jnp.ones((1, d)), jnp.ones((1, S, d))
        _, dense = dense_attention(q, K, K)
        if dense != (2 + 2 * S) * d:
            yield S, -1
        _, t = sparq_attention(q, K, K, r=r, k=k, local_k=local_k)
        yield S, t


# ---------------------------------------------------------------------------------------------- tables


def tables(cfg, results) -> list[Table]:
    c = cfg.sparq
    dense = _find(results, "dense")
    rows = []
    for r in results:
        m = r["method"]
        rows.append(
            [
                m.label,
                f"{r['transfer'] / dense['transfer']:.3f}",
                m.r or "-",
                m.k or "-",
                m.local_k or "-",
                f"{r['score']:.1f}",
                f"{r['bpc']:.4f}",
                PAPER_REPETITION.get(m.name, "-") if m.name == "dense" or abs(m.ratio - 0.125) < 1e-9 else "-",
                PAPER_BPC.get(m.name, "-") if m.name == "dense" or abs(m.ratio - 0.125) < 1e-9 else "-",
            ]
        )
    table = Table(
        "sweep",
        "Repetition score and BPC against transfer (ours: char-level Shakespeare LM; paper: Llama-2-7B)",
        [
            "method",
            "transfer / dense (measured)",
            "r",
            "k",
            "local k",
            "repetition score (chars)",
            "BPC",
            "paper repetition (1/8)",
            "paper BPC (1/8, WikiText)",
        ],
        rows,
        caption=f"Repetition: {c.repetition_examples} test-split contexts of "
        f"{c.model.seq_len - c.prompt_len - c.generate} characters, a {c.prompt_len}-character prompt copied from "
        f"each, {c.generate} characters generated greedily (score = correct before the first mismatch; the paper's "
        f"contexts are ~6000 characters and its scores count up to 256). BPC: {c.bpc_windows} validation windows "
        f"of {c.model.seq_len}, the first {c.bpc_prefill} prefilled densely.",
    )
    return [table]


# ---------------------------------------------------------------------------------------------- figures


def figures(results) -> list[Figure]:
    return [
        Figure(
            "score_vs_transfer",
            _plot(results, _find(results, "dense")),
            "Repetition score and BPC against the measured fraction of the dense transfer.",
        )
    ]


def build_report(cfg, results, info, speed) -> Report:
    c = cfg.sparq
    dense = _find(results, "dense")
    t_dense, t_sparq, _ = speed
    metrics = {f"score/{r['method'].label}": r["score"] for r in results}
    metrics.update({f"bpc/{r['method'].label}": r["bpc"] for r in results})
    metrics.update({"decode_ms/dense": t_dense * 1e3, "decode_ms/sparq": t_sparq * 1e3})
    notes = [
        f"The LM: {c.model.depth} layers, d_model {c.model.d_model}, {c.model.heads} heads of "
        f"{c.model.d_model // c.model.heads}, {c.model.seq_len} characters, {c.model.position} positions, "
        f"{c.model.steps} steps ({'loaded from its checkpoint' if info.get('loaded') else 'trained in this run'}; "
        f"final train loss {info['train_loss'][-1][1]:.3f} nats); {c.model.repeat_share:.0%} of the text windows end "
        f"with a {c.model.repeat_span}-character copy of an earlier span.",
    ]
    if c.model.induction_steps:
        notes.append(
            f"The first {c.model.induction_steps} steps were an induction warm-up on {c.model.induction_len}-character "
            f"windows of random characters ending in a {c.model.induction_span}-character copy (no text): a model this "
            "small did not learn to copy from long text windows in the time budget, and the time induction heads take "
            "to form grows about quadratically with the window length. Every score and BPC is measured on "
            "held-out Shakespeare."
        )
    windowed = [r for r in results if r["method"].name == "local" and r["bpc"] < dense["bpc"]]
    if windowed:
        best = min(windowed, key=lambda r: r["bpc"])
        notes.append(
            f"The local window ({best['method'].label}) has a lower BPC than dense attention itself "
            f"({best['bpc']:.4f} vs {dense['bpc']:.4f}): this small model, trained on windows that mostly end in a "
            "copy, over-trusts long-range matches on plain text, and cutting the far context helps it. The paper's "
            "LLMs do not have this weakness; here it decides the BPC half of the beats-H2O/local claims."
        )
    return Report(
        "sparq",
        "SparQ Attention: bandwidth-efficient LLM inference",
        measure(cfg, results, speed),
        tables(cfg, results),
        figures(results),
        metrics,
        notes,
    )


def _plot(results, dense):
    fig, axes = plots.figure(2, panel=(5.5, 4))
    markers = {"sparq": "o", "h2o": "s", "local": "^"}
    for ax, key, ylabel in (
        (axes[0], "score", "repetition score (characters)"),
        (axes[1], "bpc", "bits per character"),
    ):
        series = {}
        for name in markers:
            pts = sorted(
                (r["transfer"] / dense["transfer"], r["score"], r["bpc"]) for r in results if r["method"].name == name
            )
            if pts:
                series[name] = ([p[0] for p in pts], [p[1 if key == "score" else 2] for p in pts])
        styles = {name: {"marker": marker, "ms": 6} for name, marker in markers.items()}
        plots.curves(ax, series, xlabel="transfer / dense", ylabel=ylabel, styles=styles, legend=False)
        ax.axhline(dense[key], color="k", ls="--", label="dense")
        ax.set_xscale("log", base=2)
        ax.legend()
    return fig

"""The SparQ report: claims at the paper's 1/8 compression, the sweep table, score and BPC against transfer."""

from __future__ import annotations

from core.report import Claim, Figure, Report, Table, at_least, at_most, is_true

# Ribar et al. 2024 at 1/8 of the dense transfer, Llama-2-7B (refs/PAPERS.md)
PAPER_REPETITION = {"dense": 207, "sparq": 186, "h2o": 12, "local": 19}
PAPER_BPC = {"dense": 0.770, "sparq": 0.782, "h2o": 0.829, "local": 0.881}  # WikiText-103


def _find(results, name, ratio=None):
    for r in results:
        m = r["method"]
        if m.name == name and (ratio is None or abs(m.ratio - ratio) < 1e-9):
            return r
    return None


def build_report(cfg, results, info, speed) -> Report:
    c = cfg.sparq
    dense = _find(results, "dense")
    ratio = float(c.claim_ratio)
    sparq, h2o, local = (_find(results, n, ratio) for n in ("sparq", "h2o", "local"))
    claims = []
    if sparq is not None:
        copies = dense["score"] >= c.min_dense_score  # else the task does not tell the methods apart
        why = (
            ""
            if copies
            else f"; not measured: the dense model copies only {dense['score']:.1f} characters (< "
            f"{c.min_dense_score:g}), so the task cannot tell the methods apart at this scale"
        )
        claims.append(
            Claim(
                "sparq-repetition",
                "SparQ at 1/8 of the dense transfer keeps at least 90% of the dense repetition "
                "score (ratio of mean characters copied)",
                round(186 / 207, 3),
                at_least(0.9),
            ).measured(
                sparq["score"] / dense["score"] if copies else float("nan"),
                f"{sparq['score']:.1f} vs dense {dense['score']:.1f} characters (of {c.generate}){why}",
            )
        )
        claims.append(
            Claim(
                "sparq-bpc",
                "SparQ at 1/8 of the dense transfer: BPC within 2% of dense (relative increase)",
                round(0.782 / 0.770 - 1, 4),
                at_most(0.02),
            ).measured(sparq["bpc"] / dense["bpc"] - 1, f"{sparq['bpc']:.4f} vs dense {dense['bpc']:.4f} BPC")
        )
        for other, label in ((h2o, "H2O"), (local, "the local window")):
            if other is None:
                continue
            better = copies and sparq["score"] > other["score"] and sparq["bpc"] < other["bpc"]
            claims.append(
                Claim(
                    f"sparq-beats-{other['method'].name}",
                    f"At 1/8 of the transfer SparQ beats {label} on both repetition score and BPC",
                    "yes",
                    is_true("higher score and lower BPC"),
                ).measured(
                    better,
                    f"score {sparq['score']:.1f} vs {other['score']:.1f}; BPC {sparq['bpc']:.4f} vs "
                    f"{other['bpc']:.4f}{why}",
                )
            )
        d = c.model.d_model // c.model.heads
        m = sparq["method"]
        S_end = c.model.seq_len  # the cache length at the last generated character
        formula_ok = all(
            sparq_attention_transfer(S, d, m.r, m.k) == measured
            for S, measured in _transfers_at(S_end, d, m.r, m.k, m.local_k)
        )
        claims.append(
            Claim(
                "transfer-formula",
                "The instrumented transfer equals the paper's formulas: SparQ (2+2k)d + d + Sr "
                "+ 2d, dense (2+2S)d, per head and step",
                "yes",
                is_true("equal at every cache length checked"),
            ).measured(formula_ok, f"checked at S = {S_end // 2} and {S_end} with d={d}, r={m.r}, k={m.k}")
        )
    t_dense, t_sparq, transfer = speed
    claims.append(
        Claim(
            "decode-speed",
            f"SparQ decode-step attention is faster than dense at S={c.speed_seq} on this CPU "
            "(the paper: 3.0x on an A100, 7.4x on an IPU), speed-up",
            3.0,
            at_least(3.0),
        ).measured(
            t_dense / t_sparq,
            f"dense {t_dense * 1e3:.2f} ms vs SparQ {t_sparq * 1e3:.2f} ms per step over "
            f"{c.speed_rows} heads x {c.speed_seq} positions x 128, r={c.speed_r}, k={c.speed_k}: "
            f"{transfer:.3f} of the dense transfer",
        )
    )
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
    figure = Figure(
        "score_vs_transfer",
        _plot(results, dense),
        "Repetition score and BPC against the measured fraction of the dense transfer.",
    )
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
        "sparq", "SparQ Attention: bandwidth-efficient LLM inference", claims, [table], [figure], metrics, notes
    )


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


def _plot(results, dense):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, marker in (("sparq", "o"), ("h2o", "s"), ("local", "^")):
        pts = sorted(
            (r["transfer"] / dense["transfer"], r["score"], r["bpc"]) for r in results if r["method"].name == name
        )
        if not pts:
            continue
        x, score, bpc = zip(*pts, strict=True)
        axes[0].plot(x, score, marker=marker, label=name)
        axes[1].plot(x, bpc, marker=marker, label=name)
    for ax, key in ((axes[0], "score"), (axes[1], "bpc")):
        ax.axhline(dense[key], color="k", ls="--", label="dense")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("transfer / dense")
        ax.legend()
    axes[0].set_ylabel("repetition score (characters)")
    axes[1].set_ylabel("bits per character")
    fig.tight_layout()
    return fig

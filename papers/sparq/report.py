"""The SparQ report, `render(cfg, results, decided)`: the sweep table, the paper's figures, the decode-step table,
score and BPC against transfer, and the notes. It formats the stored Results and what `decide` (papers/sparq/claims.py)
decided: every interval it shows is a decided claim's or one of `decided.estimates`; it computes none."""

from __future__ import annotations

from core import plots
from core.claims import Decided, Interval
from core.nn.decode_methods import Dense, SparQ
from core.report import Figure, Report, Table
from papers.sparq.published import (
    BPC_INCREASE,
    IPU_DENSE_MS,
    IPU_SPARQ_MS,
    IPU_SPEEDUP,
    IPU_THEORY,
    NEEDLE_KEPT,
    PAPER_NEEDLE,
    PAPER_SPEEDUP,
    PAPER_TABLE2,
    REPETITION_KEPT,
    ratio_key,
)
from papers.sparq.results import IpuTiming, Results

__all__ = ["figures", "render", "tables"]

MARKERS = {"sparq": "o", "h2o": "s", "local": "^", "streaming": "v", "quest": "D"}


# ---------------------------------------------------------------------------------------------- tables


def _sweep_setup(c) -> str:
    """The sweep table's caption opening: the model and how each task is set up."""
    if c.lm == "smollm2":
        s = c.smollm2
        return (
            f"SmolLM2-135M, {c.examples} contexts of {s.context} tokens of the held-out test plays, each prefilled "
            f"once (densely) and continued three ways. Repetition: a {s.prompt}-token prompt (~128 characters) copied "
            f"from the context, up to {s.generate} tokens generated greedily, score = characters equal to the text "
            f"that followed the copied span before the first mismatch, counted up to {s.truth_chars} (the paper: "
            "~6000-character contexts, a 128-character prompt, up to 256 characters). Needle: every context holds "
            "a line 'The secret number is N.' (5 random digits) at a depth spread evenly over the examples; the "
            f"question follows the context and a hit is a greedy answer that starts with N. BPC: the {s.bpc_predict} "
            "tokens that followed each context in the play, scored teacher-forced with the method (bits over their "
            "characters)."
        )
    return (
        f"Character LM, {c.examples} test-split contexts of {c.model.seq_len - c.prompt_len - c.generate} "
        f"characters. Repetition: a {c.prompt_len}-character prompt copied from each, {c.generate} characters "
        f"generated greedily. BPC: the {c.generate} characters that followed each context."
    )


def _table_sweep(cfg, results: Results, estimates: dict) -> Table:
    """Every method's repetition score, needle retrieval (where run) and BPC against its transfer, with its ratios to
    dense and their paired-bootstrap intervals as decided (`decided.estimates`)."""
    c = cfg.sparq
    dense = results.find("dense")
    needles = dense.needles is not None
    rows = []
    for r in results.methods:
        m = r.method
        counted = "- (masked kernel)" if r.counted is None else f"{r.counted:.3f}"
        row = [m.label, f"{r.transfer:.3f}", counted, m.build().settings, f"{r.score:.1f}"]
        row += [f"{r.needle:.3f}"] if needles else []
        row.append(f"{r.bpc:.4f}")
        if m.name == "dense":
            row += ["-"] * (3 if needles else 2)
        else:
            key = ratio_key(m.name, m.ratio)
            row.append(estimates.get(f"repetition_ratio/{key}", "-"))
            if needles:
                row.append(estimates.get(f"needle_ratio/{key}", "-"))
            row.append(estimates[f"bpc_rise/{key}"])
        rows.append(row)
    width = len(rows[0])
    for name, ratio in results.unreachable:
        what = f"k={c.k}: r=1 already moves more" if name == "sparq" else "the smallest budget moves more"
        if name == "quest":
            what = f"reading every page's key bounds ({c.page} positions per page) already moves more"
        rows.append(
            [f"{name} 1/{round(1 / ratio)}", f"not reachable ({what} than 1.25x the target)"] + ["-"] * (width - 2)
        )
    columns = ["method", "transfer / dense (analytic)", "transfer / dense (counted)", "settings", "repetition (chars)"]
    columns += ["needle (share retrieved)"] if needles else []
    columns += ["BPC", "repetition / dense (95% CI)"]
    columns += ["needle / dense (95% CI)"] if needles else []
    columns += ["BPC / dense - 1 (95% CI)"]
    return Table(
        "sweep",
        f"Repetition{', needle retrieval' if needles else ''} and BPC against transfer "
        f"({'SmolLM2-135M' if c.lm == 'smollm2' else 'char-level Shakespeare LM'})",
        columns,
        rows,
        caption=_sweep_setup(c) + " Every method starts from the same dense prefill (H2O from its accumulated "
        "attention); the ratios' intervals are paired bootstraps over contexts. Settings: each method's budget is "
        "the nearest to the target fraction of the dense transfer at the decode-start cache length (SparQ: k fixed, "
        "r from the budget; the others: k from the budget); k counts cache positions read, the current token "
        "being free for every method (the reference implementation's k + 1). Transfer (analytic): elements per KV "
        "head and step by the paper's formulas (core.nn.decode_methods: each method's transfer). Transfer "
        "(counted): what each scoring kernel's traced program reads and writes per KV head and step at the same "
        "cache length (its counted_transfer: the current token's key and value included, Quest given its page "
        "bounds, SparQ's write of the new key to its transposed copy of K left to the cache update); H2O's scoring "
        "kernel is a masked attention over every position, so its count is not shown. The timed kernels are in the "
        "decode-step table.",
    )


def _table_paper() -> Table:
    """The paper's figures at 1/8 that the claims' margins come from."""
    rows = []
    for model, t in PAPER_TABLE2.items():
        for task in ("repetition", "squad", "bpc"):
            rows.append([f"{model} (Table 2)", task, *t[task]])
    rows.append(["LLaMA-2-7B-32K, 8k-16k tokens (Table 3)", "needle (share)", *PAPER_NEEDLE])
    return Table(
        "paper",
        "The paper at 1/8 of the dense transfer: its grouped-query models and the needle task",
        ["model", "task", "dense", "SparQ", "H2O", "LM-Infinite (16 sinks + window)"],
        rows,
        caption="Ribar et al. 2024 (ICML version), Table 2 (values closest to 1/8 for each technique) and Table 3. "
        f"The margins: repetition {REPETITION_KEPT:.4f} (Mistral 201/231), BPC +{BPC_INCREASE:.4f} (Mistral "
        f"0.65/0.62 - 1), needle {NEEDLE_KEPT:.3f} (Table 3); the paper's models have head dimension 128 and 4 "
        "query heads per KV head, SmolLM2-135M 64 and 3.",
    )


def _table_decode_step(results: Results, estimates: dict) -> Table:
    """The timed decode-step kernels at each operating point: elements read (counted from their programs, beside
    the paper's formula), milliseconds per step and SparQ's speed-up over dense, measured (as decided) and in
    theory."""
    rows = []
    for p in results.speed:
        what, t = p.label, p.timing
        formula = SparQ(r=t.r, k=t.k).transfer(t.S, t.d, 1)
        rows += [
            [
                what,
                f"dense S={t.S} d={t.d}",
                t.dense_elements,
                Dense().transfer(t.S, t.d, 1),
                t.dense_seconds * 1e3,
                1.0,
                1.0,
            ],
            [
                what,
                f"SparQ r={t.r} k={t.k}",
                t.sparq_elements,
                formula,
                t.sparq_seconds * 1e3,
                estimates[f"decode_speedup/{p.key}/measured"],
                estimates[f"decode_speedup/{p.key}/theoretical"],
            ],
            [what, f"SparQ's step 3 alone: top-{t.k} of {t.S}", "-", "-", t.select_seconds * 1e3, "-", "-"],
        ]
    paper = "; ".join(f"{k}: {v:.2f}x" for k, v in PAPER_SPEEDUP.items())
    first = results.speed[0].timing
    return Table(
        "decode_step",
        f"Decode-step attention on this machine, {first.rows} heads, float32: transfer counted from the traced "
        "kernels, time measured",
        ["operating point", "kernel", "elements per head (counted)", "paper's formula", "ms per step (median)",
         "speed-up over dense (measured)", "theoretical (counted elements)"],
        rows,
        caption=f"Both kernels warmed and timed in the same {len(first.dense_rounds)} interleaved rounds "
        "(median; the measured speed-up is the median of the per-round ratios with a 95% bootstrap interval over "
        "rounds). Counted: elements each kernel's traced program reads (gathers count what they return, anything "
        "else the whole array) plus its output; SparQ's 2d writes of the new key to its transposed K copy and of "
        "the V mean are added as the formula counts them. Theory assumes a memory-bound step. Not a claim: the "
        f"paper's speed-ups are for other hardware (labelled context: {paper}).",
    )  # fmt: skip


def _table_ipu_step(t: IpuTiming) -> Table:
    """The timed kernels on the simulated IPU beside Section 6.1's times: where each one's cycles go."""
    rows = []
    for name, k, paper in (("dense", t.dense, IPU_DENSE_MS), ("SparQ", t.sparq, IPU_SPARQ_MS)):
        shares = [k.shares.get(p, 0.0) for p in ("stream", "compute", "exchange", "sync")]
        host = " + ".join(f"{k.wall.get(p, 0.0):.0f}" for p in ("lower", "compile", "simulate"))
        rows.append([name, k.seconds * 1e3 if k.fits else "does not fit", float(paper), k.cycles, *shares,
                     k.streamed_bytes / 2**20, k.memory_peak_bytes / 1024, host])  # fmt: skip
    rows.append(["dense / SparQ", t.speedup, f"{IPU_SPEEDUP} (theory {IPU_THEORY})", "-", "-", "-", "-", "-", "-", "-",
                 "-"])  # fmt: skip
    return Table(
        "ipu_step",
        f"The decode step on the simulated {t.device} IPU ({t.heads} heads, S={t.S}, d={t.d}, r={t.r}, k={t.k}, "
        "float16) beside the paper's Bow IPU (Section 6.1)",
        [
            "kernel",
            "simulated ms",
            "paper ms",
            "cycles",
            "streaming share",
            "compute share",
            "exchange share",
            "sync share",
            "MiB streamed",
            "fullest tile KiB",
            "host s: lower + compile + simulate",
        ],
        rows,
        caption="The same kernels as the table above, lowered from JAX by ipu_model.lowering and costed (cost-only) "
        "on the simulated IPU: q in tile memory, K and V (and SparQ's transposed copy of K and mean of V) in "
        "streaming memory as the authors' benchmark keeps them; dense streams K and V in whole, SparQ reads the "
        f"rows it gathers. Streaming memory is read at {t.streaming_bytes_per_second / 1e9:g} GB/s, an assumption "
        "without a Graphcore source (ipu_model/README.md [STREAM]); the paper's times imply about 6.6 GB/s "
        "(REFERENCES.md, IPU benchmark). The claims sparq-ipu-* decide these against the paper's.",
    )


def tables(cfg, results: Results, decided: Decided) -> list[Table]:
    """The report's tables: the sweep over methods, the paper's figures at 1/8, the timed decode step, then the same
    kernels on the simulated IPU (where run)."""
    estimates = decided.estimates
    out = [_table_sweep(cfg, results, estimates), _table_paper(), _table_decode_step(results, estimates)]
    return out + ([_table_ipu_step(results.ipu)] if results.ipu is not None else [])


# ---------------------------------------------------------------------------------------------- figures


def figures(results: Results) -> list[Figure]:
    return [
        Figure(
            "score_vs_transfer",
            _plot(results),
            "Repetition score, needle retrieval (with SmolLM2) and BPC against the analytic fraction of the dense "
            "transfer.",
        )
    ]


def _power(claimed) -> str:
    """The power note: for each decided quality claim, the interval's half-width against the distance from its
    margin to the no-loss value (the design resolves the claim when the half-width is the smaller)."""
    parts = []
    for c in claimed:
        ours = c.ours
        if not isinstance(ours, Interval) or c.id.startswith("sparq-beats"):
            continue
        half = (ours.high - ours.low) / 2
        room = abs((0.0 if c.id == "sparq-bpc" else 1.0) - float(c.paper))
        parts.append(f"{c.id}: half-width {half:.3f} vs {room:.3f} from the margin to no loss")
    return (
        "Power: a non-inferiority claim can hold only if its interval fits between the margin and the no-loss value "
        "(1 for the shares, 0 for the BPC increase); at this run's spread " + "; ".join(parts) + ". A half-width "
        "above the room means the design cannot decide that claim even when SparQ loses nothing; the interval "
        "shrinks as 1/sqrt(contexts) (scale=full runs 4x the contexts)."
    )


def render(cfg, results: Results, decided: Decided) -> Report:
    """The tables, the figure, the metrics (per-method means and decode-step times, for the logger) and the notes."""
    c = cfg.sparq
    info = results.lm
    dense = results.find("dense")
    metrics = {f"score/{r.method.label}": r.score for r in results.methods}
    metrics.update({f"bpc/{r.method.label}": r.bpc for r in results.methods})
    for p in results.speed:
        t = p.timing
        metrics.update(
            {
                f"decode_ms/{p.key}/dense": t.dense_seconds * 1e3,
                f"decode_ms/{p.key}/sparq": t.sparq_seconds * 1e3,
                f"decode_speedup/{p.key}/theoretical": t.theoretical_speedup,
            }
        )
    metrics.update({f"needle/{r.method.label}": r.needle for r in results.methods if r.needles is not None})
    if c.lm == "smollm2":
        notes = [
            f"The LM: {info.name}: 30 layers, d_model 576, 9 query heads sharing 3 KV heads (head dimension 64, 3 "
            "query heads per KV head), RoPE, 8192 positions, loaded offline (core.nn.gguf); the paper's GQA models "
            "(Llama 3 8B, Mistral 7B) have head dimension 128 and 4 query heads per KV head, so r of 64 here is "
            "r of 128 there at half the index transfer. SparQ with grouped queries selects by the group's summed "
            "approximate scores and, as the paper runs its GQA models, without step 5 (the mean-value "
            "reallocation); H2O keeps one set per KV head, Quest one set of pages per KV head (bounds summed over "
            "the group). Everything is scored on held-out Shakespeare (the test plays).",
        ]
    else:
        notes = [
            f"The LM: {c.model.depth} layers, d_model {c.model.d_model}, {c.model.heads} heads of "
            f"{c.model.d_model // c.model.heads}, {c.model.seq_len} characters, {c.model.position} positions, "
            f"{c.model.steps} steps ({'loaded from its checkpoint' if info.loaded else 'trained in this run'}; "
            f"final train loss {info.train_loss[-1][1]:.3f} nats); {c.model.repeat_share:.0%} of the text windows "
            f"end with a {c.model.repeat_span}-character copy of an earlier span.",
        ]
    notes.append(_power(decided.claims))
    windowed = [r for r in results.methods if r.method.name in ("local", "streaming") and r.bpc < dense.bpc]
    if windowed:
        best = min(windowed, key=lambda r: r.bpc)
        notes.append(
            f"A windowed method ({best.method.label}) has a lower BPC than dense attention itself "
            f"({best.bpc:.4f} vs {dense.bpc:.4f})."
        )
    return Report(
        "sparq",
        "SparQ Attention: bandwidth-efficient LLM inference",
        tables=tables(cfg, results, decided),
        figures=figures(results),
        metrics=metrics,
        notes=notes,
    )


def _plot(results: Results):
    dense = results.find("dense")
    panels = [("score", "repetition score (characters)"), ("bpc", "bits per character")]
    if dense.needles is not None:
        panels.insert(1, ("needle", "needle retrieval (share of examples)"))
    fig, axes = plots.figure(len(panels), panel=(5.5, 4))
    for ax, (key, ylabel) in zip(axes, panels, strict=True):
        series = {}
        for name in MARKERS:
            pts = sorted((r.transfer, getattr(r, key)) for r in results.methods if r.method.name == name)
            if pts:
                series[name] = ([p[0] for p in pts], [p[1] for p in pts])
        styles = {name: {"marker": marker, "ms": 6} for name, marker in MARKERS.items()}
        plots.curves(ax, series, xlabel="transfer / dense", ylabel=ylabel, styles=styles, legend=False)
        ax.axhline(getattr(dense, key), color="k", ls="--", label="dense")
        ax.set_xscale("log", base=2)
        ax.legend()
    return fig

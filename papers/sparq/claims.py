"""The SparQ claims at the paper's 1/8 compression, declared from the config alone before any run, and the functions
that measure them.

Each claim names the paper's figure (papers/sparq/REFERENCES.md), the statistic we measure, the rule that decides
it and the design (confidence, unit of replication, the smallest effect the default design resolves). The report
module (papers/sparq/report.py) builds the tables and figures.
"""

from __future__ import annotations

import math

import numpy as np

from core.report import Claim, Fact, Interval, Rule, at_least, at_most, interval_above, is_true
from core.stats import paired_bootstrap

# Ribar et al. 2024 at 1/8 of the dense transfer, Llama-2-7B (papers/sparq/REFERENCES.md, "results at 1/8")
PAPER_REPETITION = {"dense": 207, "sparq": 186, "h2o": 12, "local": 19}
PAPER_BPC = {"dense": 0.770, "sparq": 0.782, "h2o": 0.829, "local": 0.881}  # WikiText-103
PAPER_SQUAD = {"dense": 0.769, "sparq": 0.727, "h2o": 0.470, "local": 0.261}  # in-context extraction (accuracy)
PAPER_SPEEDUP = 3.0  # A100 kernel, S=4096, batch 64 (REFERENCES.md, "kernel speed"); the IPU's 7.4x in the statement
HEAD_DIM = 128  # the timed kernels' head dimension, as the paper's models

# The thresholds are the paper's own SparQ figures at 1/8: SparQ keeps 186/207 = 0.899 of the dense repetition
# score, and its BPC is 0.782/0.770 - 1 = 1.56% above dense. The claims ask ours to do at least as well.
REPETITION_KEPT = PAPER_REPETITION["sparq"] / PAPER_REPETITION["dense"]
BPC_INCREASE = PAPER_BPC["sparq"] / PAPER_BPC["dense"] - 1
# needle retrieval is not in the paper's table; its nearest task is SQuAD (the answer is extracted from the prompt's
# own text): SparQ keeps 0.727/0.769 = 0.945 of dense there
NEEDLE_KEPT = PAPER_SQUAD["sparq"] / PAPER_SQUAD["dense"]


# The rules the 1/8 claims were decided by until 2026-11-25 (our point estimate against the paper's point value, so
# a faithful replication failed about half the time); papers/sparq/ledger.py evaluates them beside the interval rules.


def _estimate_at_least(bound: float, what: str) -> Rule:
    return Rule(
        f"estimate >= {bound:.4f} ({what}); 95% interval reported",
        lambda ours, paper: isinstance(ours, Interval) and math.isfinite(ours.estimate) and ours.estimate >= bound,
    )


def _estimate_at_most(bound: float, what: str) -> Rule:
    return Rule(
        f"estimate <= {bound:.4f} ({what}); 95% interval reported",
        lambda ours, paper: isinstance(ours, Interval) and math.isfinite(ours.estimate) and ours.estimate <= bound,
    )


# ---------------------------------------------------------------------------------------------- helpers


def find(results, name, ratio=None):
    for r in results:
        m = r["method"]
        if m.name == name and (ratio is None or abs(m.ratio - ratio) < 1e-9):
            return r
    return None


def ratio_of_means(a, b, *, seed: int = 0, n_resamples: int = 2000) -> Interval:
    """mean(a) / mean(b) over paired examples, with a 95% percentile bootstrap interval from resampling the examples
    (scipy.stats.bootstrap, paired; the ratio is not a statistic of the differences, so core.stats.paired_bootstrap
    does not fit it)."""
    from scipy import stats

    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"ratio_of_means: need two paired samples of >= 2 values, got {x.size} and {y.size}")
    if y.mean() == 0:
        raise ValueError("ratio_of_means: the mean of the denominator's sample is 0")
    point = float(x.mean() / y.mean())
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return Interval(point, point, point, 0.95, f"{x.size} identical examples")
    res = stats.bootstrap(
        (x, y),
        lambda u, v, axis=-1: np.mean(u, axis) / np.mean(v, axis),
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    low, high = res.confidence_interval
    if not (np.isfinite(low) and np.isfinite(high)):  # some resamples drew only zeros in the denominator
        return Interval(point, -np.inf, np.inf, 0.95, f"bootstrap undefined over {x.size} examples")
    return Interval(point, low, high, 0.95, f"paired bootstrap over {x.size} examples")


def sparq_attention_transfer(S: int, d: int, r: int, k: int) -> int:
    """The paper's formula, elements per head per step."""
    return (2 + 2 * k) * d + d + S * r + 2 * d


def _operating_point(c) -> tuple[int, int]:
    """(r, k) of the timed kernels: the paper's S=16384 operating point unless configured otherwise."""
    return int(c.speed_r), int(c.speed_k)


def _pair(cfg, results):
    """(dense, SparQ at the claim ratio, whether dense copies enough for the task to tell methods apart, why not)."""
    c = cfg.sparq
    dense = find(results, "dense")
    sparq = find(results, "sparq", float(c.claim_ratio))
    copies = dense["score"] >= c.min_dense_score  # else the task does not tell the methods apart
    why = (
        ""
        if copies
        else f"; not measured: the dense model copies only {dense['score']:.1f} characters (< "
        f"{c.min_dense_score:g}), so the task cannot tell the methods apart at this scale"
    )
    return dense, sparq, copies, why


# ---------------------------------------------------------------------------------------------- measuring
# One function per claim: (cfg, results, speed) -> (ours, detail), or None where it cannot be measured; each is
# fingerprinted into the claims lock (core.ledger) with its claim.


def measure_repetition(cfg, results, speed) -> tuple | None:
    c = cfg.sparq
    dense, sparq, copies, why = _pair(cfg, results)
    if sparq is None:
        return None
    return (
        ratio_of_means(sparq["scores"], dense["scores"], seed=int(cfg.seed)) if copies else float("nan"),
        f"{sparq['score']:.1f} vs dense {dense['score']:.1f} characters (of "
        f"{f'{c.smollm2.generate} tokens' if c.lm == 'smollm2' else f'{c.generate} characters'} generated) over "
        f"{len(dense['scores'])} examples{why}",
    )


def measure_bpc(cfg, results, speed) -> tuple | None:
    dense, sparq, _, _ = _pair(cfg, results)
    if sparq is None:
        return None
    rise = ratio_of_means(sparq["bpcs"], dense["bpcs"], seed=int(cfg.seed))
    return (
        Interval(rise.estimate - 1, rise.low - 1, rise.high - 1, rise.confidence, rise.method),
        f"{sparq['bpc']:.4f} vs dense {dense['bpc']:.4f} BPC over {len(dense['bpcs'])} windows",
    )


def measure_needle(cfg, results, speed) -> tuple | None:
    c = cfg.sparq
    dense, sparq, _, _ = _pair(cfg, results)
    if sparq is None or "needles" not in dense:
        return None
    retrieves = dense["needle"] >= c.min_dense_needle
    return (
        ratio_of_means(sparq["needles"], dense["needles"], seed=int(cfg.seed)) if retrieves else float("nan"),
        f"{sparq['needle']:.3f} vs dense {dense['needle']:.3f} of {len(dense['needles'])} needles retrieved"
        + (
            ""
            if retrieves
            else f"; not measured: dense retrieves under {c.min_dense_needle:g}, so the task cannot tell "
            "the methods apart"
        ),
    )


def _measure_beats(cfg, results, name: str) -> tuple | None:
    seed = int(cfg.seed)
    _, sparq, copies, why = _pair(cfg, results)
    other = find(results, name, float(cfg.sparq.claim_ratio))
    if sparq is None or other is None:
        return None
    gain = paired_bootstrap(sparq["scores"], other["scores"], seed=seed)
    drop = paired_bootstrap(sparq["bpcs"], other["bpcs"], seed=seed)
    return (
        copies and gain.low > 0 and drop.high < 0,
        f"score gain {gain} characters ({sparq['score']:.1f} vs {other['score']:.1f}); BPC difference "
        f"{drop} ({sparq['bpc']:.4f} vs {other['bpc']:.4f}){why}",
    )


def measure_beats_h2o(cfg, results, speed) -> tuple | None:
    return _measure_beats(cfg, results, "h2o")


def measure_beats_local(cfg, results, speed) -> tuple | None:
    return _measure_beats(cfg, results, "local")


def facts(speed) -> list[Fact]:
    """Rows that are not claims. `transfer-counted` (analytic): the timed SparQ kernel's transfer counted from its
    traced program equals the paper's formula; our kernel checked against our own formula, so it is a test
    (tests/papers/sparq/test_transfer.py::test_timed_kernels_move_the_papers_transfer), shown here for context."""
    formula = sparq_attention_transfer(speed.S, speed.d, speed.r, speed.k)
    return [
        Fact(
            "transfer-counted",
            f"Elements the timed SparQ decode-step kernel moves per head and step at S={speed.S}, d={speed.d}, "
            f"r={speed.r}, k={speed.k}, counted from its traced program, against the paper's formula "
            "(2+2k)d + d + Sr + 2d",
            speed.sparq_elements,
            "analytic",
            detail=f"counted: SparQ {speed.sparq_elements:,} (formula {formula:,}), dense {speed.dense_elements:,} "
            f"(formula (2+2S)d = {(2 + 2 * speed.S) * speed.d:,}); SparQ moves {speed.transfer:.4f} of dense",
            paper=formula,
        )
    ]


def measure_decode_speed(cfg, results, speed) -> tuple:
    speedup = speed.speedup(int(cfg.seed))
    return (
        speedup,
        f"dense {speed.dense_seconds * 1e3:.2f} ms vs SparQ {speed.sparq_seconds * 1e3:.2f} ms per step (medians of "
        f"{len(speed.dense_rounds)} interleaved rounds, both warmed) over {speed.rows} heads x {speed.S} positions x "
        f"{speed.d}, r={speed.r}, k={speed.k}; measured {speedup.estimate:.2f}x vs "
        f"theoretical {speed.theoretical_speedup:.2f}x (counted transfer {speed.transfer:.4f} of dense); of SparQ's "
        f"step, the top-{speed.k} selection over {speed.S} positions alone takes {speed.select_seconds * 1e3:.2f} ms",
    )


# ---------------------------------------------------------------------------------------------- claims

BEATEN = {"h2o": "H2O", "local": "the local window"}  # the baselines SparQ is claimed to beat, in report order
_BEATS_MEASURE = {"h2o": measure_beats_h2o, "local": measure_beats_local}
_CONTEXTS = "128 contexts of 512 tokens (paired bootstrap over examples)"

CLAIMS = {
    "sparq-repetition": Claim(
        "sparq-repetition",
        "SparQ at 1/8 of the dense transfer keeps at least the share of the dense repetition score that the "
        "paper's SparQ keeps (ratio of mean characters copied, paired bootstrap over examples)",
        round(REPETITION_KEPT, 4),
        at_least(REPETITION_KEPT, kind="non-inferiority"),
        source="REFERENCES.md, results at 1/8 (repetition 207 / 186)",
        statistic="SparQ / dense ratio of mean repetition scores (characters before the first mismatch) at 1/8",
        unit=_CONTEXTS,
        resolution="bootstrap half-width ~0.04 at 0.21, ~0.08 at 0.72 (README run 2026-11-24: 1/8 0.21 [0.17, "
        "0.24], 1/4 0.72 [0.64, 0.80])",
        measure=measure_repetition,
    ),
    "sparq-bpc": Claim(
        "sparq-bpc",
        "SparQ at 1/8 of the dense transfer: BPC at most as far above dense as the paper's (relative increase, "
        "paired bootstrap over windows)",
        round(BPC_INCREASE, 4),
        at_most(BPC_INCREASE),
        source="REFERENCES.md, results at 1/8 (WikiText-103 BPC 0.770 / 0.782)",
        statistic="SparQ / dense - 1 of the mean BPC at 1/8",
        unit="32 validation windows (paired bootstrap over windows)",
        resolution="bootstrap half-width ~1.6% at 1/4, ~5.5% at 1/8 (README run 2026-11-24: +3.3% [+1.9, +5.1], "
        "+27% [+22, +33])",
        measure=measure_bpc,
    ),
    "sparq-needle": Claim(
        "sparq-needle",
        "SparQ at 1/8 of the dense transfer keeps at least the share of dense accuracy that the paper's SparQ keeps "
        "on its nearest task, SQuAD (in-context extraction): needle retrieval, ratio of hit rates, paired bootstrap "
        "over examples",
        round(NEEDLE_KEPT, 4),
        at_least(NEEDLE_KEPT, kind="non-inferiority"),
        source="REFERENCES.md, results at 1/8 (SQuAD .769 / .727)",
        statistic="SparQ / dense ratio of needle hit rates at 1/8",
        unit=_CONTEXTS,
        resolution="bootstrap half-width ~0.08 (README run 2026-11-24: 0.89 [0.82, 0.98])",
        measure=measure_needle,
    ),
    **{
        f"sparq-beats-{name}": Claim(
            f"sparq-beats-{name}",
            f"At 1/8 of the transfer SparQ beats {label} on both repetition score and BPC (paired bootstrap over "
            "examples and windows)",
            "yes",
            is_true("score gain's 95% interval above 0 and BPC difference's below 0"),
            source="REFERENCES.md, results at 1/8 (repetition 186 vs 12 / 19, BPC 0.782 vs 0.829 / 0.881)",
            statistic=f"paired differences SparQ - {name} at 1/8: repetition score (characters) and BPC",
            unit="128 contexts and 32 windows (paired bootstrap)",
            resolution="bootstrap half-widths ~1-2 characters and ~0.03 BPC (README run 2026-11-24: repetition "
            "8.8 vs 5.7 / 5.1, BPC 1.905 vs 1.627 / 2.435)",
            measure=_BEATS_MEASURE[name],
        )
        for name, label in BEATEN.items()
    },
}


def decode_speed_claim(c) -> Claim:
    r, k = _operating_point(c)
    S = int(c.speed_seq)
    share = sparq_attention_transfer(S, HEAD_DIM, r, k) / ((2 + 2 * S) * HEAD_DIM)
    return Claim(
        "decode-speed",
        f"At r={r}, k={k}, S={S} ({share:.3f} of the dense transfer; the paper's IPU operating point is S=16384, "
        "r=32, k=128) SparQ's decode-step attention is at least as much faster than dense on this CPU as on the "
        "paper's A100 (3.0x; 7.4x on an IPU): speed-up, median of paired timing rounds",
        PAPER_SPEEDUP,
        interval_above(PAPER_SPEEDUP),
        source="REFERENCES.md, kernel speed and timing operating point",
        statistic="dense / SparQ decode-step time, median of the per-round ratios",
        unit=f"{int(c.speed_repeat)} interleaved timing rounds (bootstrap over rounds)",
        resolution="bootstrap half-width ~0.45x (README run 2026-11-24: 3.10x [2.71, 3.58])",
        measure=measure_decode_speed,
    )


def claims(cfg) -> list[Claim]:
    """The claims the configured methods can test (every SparQ quality claim needs SparQ in `sparq.methods`, a
    beats-X claim also X), declared before the run; the speed claim is about the timed kernels."""
    c = cfg.sparq
    out = []
    if "sparq" in c.methods:
        out += [CLAIMS["sparq-repetition"], CLAIMS["sparq-bpc"]]
        if c.lm == "smollm2" and c.smollm2.needle:
            out.append(CLAIMS["sparq-needle"])
        out += [CLAIMS[f"sparq-beats-{name}"] for name in BEATEN if name in c.methods]
    return [*out, decode_speed_claim(c)]


def measure(cfg, results, speed) -> list[Claim]:
    """Our figure for every declared claim. The repetition claims stay in the report when the dense model copies
    too little for the task to tell the methods apart, with a detail saying so."""
    out = []
    for claim in claims(cfg):
        found = claim.measure(cfg, results, speed)
        out.append(claim.measured(*found) if found is not None else claim)
    return out

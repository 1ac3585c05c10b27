"""The packing claims, declared from the config alone before any run, and their decision: a pure function of the
stored Results (`decide`), with the functions that measure each claim from them.

Every figure: papers/packing/REFERENCES.md (the entry named in each claim's `source`). The history of these claims
is papers/packing/ledger.py; their fingerprints, papers/packing/claims.lock.json.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from core.claims import Claim, Decided, Interval, Rule, at_least, at_most, printed, within_abs
from core.stats import seed_mean
from papers.packing.results import Results
from papers.packing.tables import LABELS, PUBLISHED, PUBLISHED_BOUND, planned_cells, published

CONTAMINATION_TOL = 1e-5  # float32: outputs of a 4-layer model differ from the unpacked ones only by rounding
THROUGHPUT_FRACTION = 0.8  # packed tokens/s gain >= 80% of the packing speed-up (the target)

TABLE_DESIGN = {
    "confidence": 0.95,
    "unit": "deterministic (the packing of the published histogram)",
    "resolution": "exact",
}


def to_the_digits() -> Rule:
    """Ours (full precision) lies in the paper's printed figure's rounding interval (`printed("1.99340")` is
    [1.993395, 1.993405]): it rounds to the printed digits. The paper's figure is exact, so the margin is 0."""
    return Rule(
        "ours rounds to the paper's printed digits (inside its rounding interval)", within_abs(0).check, "equivalence"
    )


def _contamination(cfg, results: Results) -> tuple[float, str]:
    """The largest absolute difference between a packed sequence's outputs and its outputs alone."""
    check = results.training.contamination
    return (
        max(check.loss, check.cls, check.hidden),
        f"{check.sequences} validation sequences in {check.packs} packs; loss "
        f"{check.loss:.1e}, [CLS] {check.cls:.1e}, hidden {check.hidden:.1e}",
    )


def round_ratios(rounds: dict[str, Any], speedup: float) -> np.ndarray:
    """Per interleaved timing round: the real-tokens/s gain of packed over padded steps, over the packing speed-up."""
    pad, pack = rounds["padded"], rounds["packed"]
    gain = (pack.tokens_per_step / np.asarray(pack.seconds)) / (pad.tokens_per_step / np.asarray(pad.seconds))
    return gain / speedup


def _throughput(cfg, results: Results) -> tuple[Interval, str]:
    """The real-tokens/s gain of packed over padded steps as a fraction of the packing speed-up: a t interval over
    the interleaved timing rounds."""
    rounds, speedup = results.training.rounds, results.training.speedup
    ratios = round_ratios(rounds, speedup)
    spread = f"t interval over {ratios.size} interleaved timing rounds, std {ratios.std(ddof=1):.3g}"
    pad, pack = rounds["padded"], rounds["packed"]
    return (
        dataclasses.replace(seed_mean(ratios), method=spread),
        f"gain {np.median(ratios) * speedup:.3f}x (median of {ratios.size} rounds) against the packing "
        f"speed-up {speedup:.3f}x; {pack.rows} packed rows vs {pad.rows} padded per step",
    )


def _table_figures(cfg, results: Results) -> dict[str, tuple[Any, str]]:
    """Our figure, at full precision, for every published cell and bound the run packed."""
    ours: dict[str, tuple[Any, str]] = {}
    cells = results.cells
    for cell in cells:
        pub = published(cell)
        if pub is not None:
            eff, speed = pub
            tag = _tag(cell.histogram, cell.method, cell.limit)
            ours[f"{tag}-speedup"] = (
                cell.speedup,
                f"{cell.speedup:.7f} (paper {speed}); {cell.packs:,} packs; bound {cell.bound:.5f}",
            )
            ours[f"{tag}-efficiency"] = (100 * cell.efficiency, f"{100 * cell.efficiency:.5f}% (paper {eff}%)")
    for name, paper in PUBLISHED_BOUND.items():
        bound = next((c.bound for c in cells if c.histogram == name), None)
        if bound is not None:
            ours[_bound_id(name)] = (bound, f"{bound:.7f} (paper {paper})")
    return ours


CONTAMINATION = Claim(
    "no-cross-contamination",
    "A packed sequence's hidden states, [CLS] output and MLM loss equal those it gets alone "
    "(largest absolute difference)",
    0.0,
    at_most(CONTAMINATION_TOL),
    source="model changes",
    statistic="largest absolute difference (loss, [CLS] output, hidden states) between each validation sequence "
    "packed and alone, one padded-trained model",
    unit="96 validation sequences (deterministic maximum)",
    resolution="exact up to float32 rounding (~1e-6; README run 1.4e-6 against the 1e-5 bound)",
    measure=_contamination,
)


def throughput_claim(train_cfg) -> Claim:
    """The throughput claim for the configured timing rounds (its resolution is the t interval's half-width in
    per-round standard deviations, against the margin 1 - THROUGHPUT_FRACTION)."""
    from scipy import stats

    rounds = int(train_cfg.timing_rounds)
    half = stats.t.ppf(0.975, rounds - 1) / np.sqrt(rounds)
    margin = 1 - THROUGHPUT_FRACTION
    return Claim(
        "packed-throughput",
        "Packed training processes real tokens faster than padded by at least 80% of the packing "
        "speed-up (ratio of the gain to the speed-up)",
        1.0,
        at_least(THROUGHPUT_FRACTION),
        source="training",
        statistic="per round, real tokens/s of packed steps over padded steps (both warmed, one process, same "
        "threads), divided by the packing speed-up; mean with a t interval over the rounds",
        unit=f"{rounds} interleaved timing rounds of padded and packed steps (about {train_cfg.timing_seconds:g} s "
        "per arm and round)",
        resolution=f"the interval's half-width is t(0.975, {rounds - 1}) / sqrt({rounds}) = {half:.2f} per-round "
        f"standard deviations; the margin from the expected ratio (1) to {THROUGHPUT_FRACTION} is {margin:.1f}, so a "
        f"per-round spread below {margin / half:.2f} decides it",
        measure=_throughput,
    )


def _planned(cfg) -> list[tuple[str, str, int]]:
    t = cfg.packing.table
    return planned_cells(list(t.histograms), list(t.methods), list(t.max_sequences_per_pack), t.nnlshp_max_depth)


def _tag(histogram: str, method: str, limit: int) -> str:
    return f"{histogram}-{method}{limit}".replace("_", "-")


def _bound_id(histogram: str) -> str:
    return f"bound-{histogram}".replace("_", "-")


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run: one pair per published cell the config packs, the speed-up bound of
    every histogram it packs, and the training claims if it trains. The paper's run times are not claims: they were
    measured on other hardware, so the table shows them beside ours as context. Equal convergence holds by
    construction: a test (tests/papers/packing/test_train.py), not a claim."""
    planned = _planned(cfg)
    out = []
    for name, method, limit in planned:
        if (name, method, limit) not in PUBLISHED:
            continue
        eff, speed = PUBLISHED[(name, method, limit)]
        tag = _tag(name, method, limit)
        where = f"{method.upper()} (max {limit} per pack) on {LABELS[name]}"
        out.append(
            Claim(
                f"{tag}-speedup",
                f"{where}: speed-up over padding",
                printed(speed),
                to_the_digits(),
                source="packing table",
                statistic="sequences / packs of our packing, full precision",
                measure=_table_figures,
                **TABLE_DESIGN,
            )
        )
        out.append(
            Claim(
                f"{tag}-efficiency",
                f"{where}: efficiency, %",
                printed(eff),
                to_the_digits(),
                source="packing table",
                statistic="real tokens / (packs x L) of our packing, %, full precision",
                measure=_table_figures,
                **TABLE_DESIGN,
            )
        )
    packed = {name for name, _, _ in planned}
    for name, figure in PUBLISHED_BOUND.items():
        if name in packed:
            out.append(
                Claim(
                    _bound_id(name),
                    f"Theoretical speed-up bound on {LABELS[name]}",
                    printed(figure),
                    to_the_digits(),
                    source="speed-up bound",
                    statistic="1 / (1 - padding share) of the published histogram, full precision",
                    measure=_table_figures,
                    **TABLE_DESIGN,
                )
            )
    if cfg.packing.train.enabled:
        out += [CONTAMINATION, throughput_claim(cfg.packing.train)]
    return out


def throughput_factors(results: Results) -> dict[str, Any]:
    """The gain over the packing speed-up split into its factors, each per round with a t interval over the rounds:
    how full the packed rows are (fill, from the plans: a point), what a row costs padded over packed, and of that,
    the rows per step and the row content (the padded control at the packed run's rows)."""
    rounds, speedup = results.training.rounds, results.training.speedup
    pad, pack, control = rounds["padded"], rounds["packed"], rounds["padded, packed rows"]
    t = {name: np.asarray(a.seconds) for name, a in rounds.items()}

    def spread(values: np.ndarray, what: str) -> Interval:
        return dataclasses.replace(seed_mean(values), method=f"t interval over {values.size} timing rounds ({what})")

    return {
        "fill": (pack.tokens_per_step / pack.rows) / (pad.tokens_per_step / pad.rows) / speedup,
        "time-per-row": spread((t["padded"] / pad.rows) / (t["packed"] / pack.rows), "padded over packed"),
        "rows-per-step": spread(
            (t["padded"] / pad.rows) / (t["padded, packed rows"] / control.rows), "padded rows, two batch sizes"
        ),
        "row-content": spread(t["padded, packed rows"] / t["packed"], "padded over packed rows, same rows"),
    }


def decide(cfg, results: Results) -> Decided:
    """Every declared claim decided from the Results (one the run did not measure stays unmeasured), and the
    figures the tables show: every cell's speed-up and efficiency, and the throughput's factors."""
    ours = _table_figures(cfg, results)
    estimates: dict[str, Any] = {}
    for cell in results.cells:
        key = f"{cell.histogram}/{cell.method}{cell.limit}"
        estimates[f"speedup/{key}"] = cell.speedup
        estimates[f"efficiency/{key}"] = cell.efficiency
    if results.training is not None:
        for cid, fn in (("no-cross-contamination", _contamination), ("packed-throughput", _throughput)):
            ours[cid] = fn(cfg, results)
        estimates["packing-speedup/training"] = results.training.speedup
        estimates.update({f"throughput/{k}": v for k, v in throughput_factors(results).items()})
    claims_ = [claim.measured(*ours[claim.id]) if claim.id in ours else claim for claim in claims(cfg)]
    return Decided(claims_, estimates=estimates)

"""The packing claims, declared from the config alone before any run, and the functions that measure them.

Every figure: papers/packing/REFERENCES.md (the entry named in each claim's `source`). The history of these claims
is papers/packing/ledger.py; their fingerprints, papers/packing/claims.lock.json.
"""

from __future__ import annotations

from typing import Any

from core.report import Claim, Fact, Rule, at_least, at_most, printed, within_abs
from papers.packing.tables import LABELS, PUBLISHED, PUBLISHED_BOUND, Cell, planned_cells

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


def _contamination(training: dict[str, Any]) -> tuple[float, str]:
    """The largest absolute difference between a packed sequence's outputs and its outputs alone."""
    check = training["contamination"]
    return (
        max(check["loss"], check["cls"], check["hidden"]),
        f"{check['sequences']} validation sequences in {check['packs']} packs; loss "
        f"{check['loss']:.1e}, [CLS] {check['cls']:.1e}, hidden {check['hidden']:.1e}",
    )


def _gain(runs) -> float:
    """Real tokens/s packed over padded."""
    return runs["packed"].tokens_per_second / runs["padded"].tokens_per_second


def _throughput(training: dict[str, Any]) -> tuple[float, str]:
    """The real-tokens/s gain of packed over padded training as a fraction of the packing speed-up."""
    runs, probe = training["runs"], training["corpus"].packing
    padded, packed = runs["padded"], runs["packed"]
    gain = _gain(runs)
    return (
        gain / probe.speedup,
        f"real tokens/s {packed.tokens_per_second:,.0f} packed vs "
        f"{padded.tokens_per_second:,.0f} padded: {gain:.2f}x; packing speed-up {probe.speedup:.2f}x "
        f"(bound {probe.speedup_bound:.2f}x)",
    )


def facts(training: dict[str, Any] | None) -> list[Fact]:
    """What is true by construction, reported beside the claims and never counted: packed and padded training see
    the same sequences with the same masks from the same initialisation, and packing is exact (the
    `no-cross-contamination` claim), so their validation losses at equal sequences seen differ only by float32
    rounding and the grouping of sequences into steps (papers/packing/ledger.py: `equal-convergence`)."""
    if training is None:
        return []
    padded, packed = training["runs"]["padded"], training["runs"]["packed"]
    v_pad, v_pack = padded.curve[-1][1], packed.curve[-1][1]
    return [
        Fact(
            "equal-convergence",
            "Packed training reaches the padded run's validation MLM loss at the same number of sequences seen: "
            "exact packing of the same sequences with the same masks",
            f"{v_pack:.4f} packed, {v_pad:.4f} padded (nats)",
            "construction",
            f"after {packed.curve[-1][0]:,} / {padded.curve[-1][0]:,} sequences; relative difference "
            f"{abs((v_pack - v_pad) / v_pad):.1e}",
            paper="no loss of convergence (Section 6)",
        )
    ]


def _table_figures(cells: list[Cell]) -> dict[str, tuple[Any, str]]:
    """Our figure, at full precision, for every published cell and bound the run packed."""
    ours: dict[str, tuple[Any, str]] = {}
    for cell in cells:
        pub = cell.published
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


TRAINING_CLAIMS = {
    "no-cross-contamination": Claim(
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
    ),
    "packed-throughput": Claim(
        "packed-throughput",
        "Packed training processes real tokens faster than padded by at least 80% of the packing "
        "speed-up (ratio of the gain to the speed-up)",
        1.0,
        at_least(THROUGHPUT_FRACTION),
        source="training",
        statistic="real tokens/s packed over padded (compilation excluded), divided by the packing speed-up",
        unit="1 timed run per mode (point value)",
        resolution="not estimated: one run per mode, step-time noise unmeasured (README run 2.56x / 2.46x = 1.04 "
        "against 0.8)",
        measure=_throughput,
    ),
}


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
    measured on other hardware, so the table shows them beside ours as context. Equal convergence is a fact, not a
    claim (`facts`)."""
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
        out += TRAINING_CLAIMS.values()
    return out


def measure(cfg, cells: list[Cell], training: dict[str, Any] | None) -> list[Claim]:
    """Our figure for every declared claim (one the run did not measure stays unmeasured)."""
    ours = _table_figures(cells)
    if training is not None:
        for cid, fn in (("no-cross-contamination", _contamination), ("packed-throughput", _throughput)):
            ours[cid] = fn(training)
    return [claim.measured(*ours[claim.id]) if claim.id in ours else claim for claim in claims(cfg)]

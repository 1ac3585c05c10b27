"""A user's run held against the reference run: does it reproduce it, claim by claim and figure by figure?

    comparison = compare(reference_record, your_record)
    print(comparison.text()); sys.exit(0 if comparison.reproduces else 1)

Both records are decided afresh with the checkout's decision code (from their stored Results, nothing is
recomputed), so a difference is a difference of computation, never of decision code. A claim reproduces when its
verdict is the same and its figures agree: the user's value inside the reference's interval, the reference's inside
the user's, or the two intervals overlapping; point values (deterministic figures) agree within a relative
tolerance. Facts and the estimates the tables show (core.claims.Decided.estimates) are compared the same way.
Differences of scale, seed or any other setting are stated: the comparison is still made, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from core.claims import Decided, Interval, format_value, shown_verdict
from core.config import RECORD_ONLY_KEYS
from core.record import Record

RTOL = 1e-6  # point values: deterministic figures agree to this relative tolerance (rounding across machines)
# settings that change where or how a run is recorded, not what it computes

SHOWN = 10  # key figures named in the summary line of a comparison that differs (all are in its table)


@dataclass(frozen=True)
class Row:
    kind: str  # claim, fact or estimate
    id: str
    reference: str
    yours: str
    agrees: bool
    why: str


@dataclass
class Comparison:
    reference: Record
    yours: Record
    rows: list[Row]
    settings: list[str] = field(default_factory=list)  # the settings that differ, as 'key: reference -> yours'

    @property
    def reproduces(self) -> bool:
        return all(r.agrees for r in self.rows)

    @property
    def differing(self) -> list[Row]:
        return [r for r in self.rows if not r.agrees]

    def text(self) -> str:
        ref, you = self.reference.run, self.yours.run
        lines = [
            f"reference: {self.reference.run_dir} (scale {ref['scale']}, seed {ref['seed']}, commit "
            f"{ref.get('commit') or '-'}, compute code {ref['compute_fingerprint']})",
            f"your run:  {self.yours.run_dir} (scale {you['scale']}, seed {you['seed']}, commit "
            f"{you.get('commit') or '-'}{' (modified)' if you.get('modified') else ''}, compute code "
            f"{you['compute_fingerprint']})",
            "both decided with this checkout's decision code, from their stored Results",
        ]
        if ref["compute_fingerprint"] != you["compute_fingerprint"]:
            lines.append("note: the two runs were computed by different code")
        if self.settings:
            lines.append(
                "note: your run differs from the reference in its settings, so differences may be expected: "
                + "; ".join(self.settings)
            )
        lines.append("")
        head = ("", "id", "reference", "your run", "")
        table = [head] + [
            (r.kind, r.id, r.reference, r.yours, "same" if r.agrees else f"DIFFERS: {r.why}") for r in self.rows
        ]
        widths = [min(max(len(t[i]) for t in table), 60) for i in range(4)]
        for t in table:
            lines.append("  ".join(c[:60].ljust(w) for c, w in zip(t[:4], widths, strict=True)) + "  " + t[4])
        lines.append("")
        n = len(self.differing)
        if n == 0:
            lines.append(f"reproduces: all {len(self.rows)} claims, facts and key figures agree with the reference")
        else:
            # every differing claim and fact by name; key figures by name up to SHOWN, then how many more
            named = [r for r in self.differing if r.kind != "estimate"]
            figures = [r for r in self.differing if r.kind == "estimate"]
            names = [f"{r.kind} {r.id}" for r in named + figures[:SHOWN]]
            more = f", and {len(figures) - SHOWN} more estimates (above)" if len(figures) > SHOWN else ""
            lines.append(f"differs: {n} of {len(self.rows)} rows: " + ", ".join(names) + more)
        return "\n".join(lines)


def _bounds(v: Any) -> tuple[float, float] | None:
    if isinstance(v, Interval):
        return (v.low, v.high) if math.isfinite(v.low) and math.isfinite(v.high) else None
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        return float(v), float(v)
    return None


def values_agree(ref: Any, yours: Any, rtol: float = RTOL) -> tuple[bool, str]:
    """(whether two figures agree, why not): intervals overlap or hold the other's point; points agree to `rtol`;
    anything else (text, booleans, non-finite values) must be equal."""
    a, b = _bounds(ref), _bounds(yours)
    if a is None or b is None:
        same = ref == yours or (
            isinstance(ref, float) and isinstance(yours, float) and math.isnan(ref) and math.isnan(yours)
        )
        return same, "" if same else "different values"
    if isinstance(ref, Interval) or isinstance(yours, Interval):
        if a[0] <= b[1] and b[0] <= a[1]:
            return True, ""
        return False, "intervals apart" if isinstance(ref, Interval) and isinstance(yours, Interval) else "outside"
    scale = max(abs(a[0]), abs(b[0]))
    if abs(a[0] - b[0]) <= rtol * scale:
        return True, ""
    return False, f"relative difference {abs(a[0] - b[0]) / scale:.2g}"


def _value(v: Any) -> str:
    return format_value(v)


def compare_decisions(ref: Decided, yours: Decided, rtol: float = RTOL) -> list[Row]:
    """Row by row: every claim (verdict and figure), fact and estimate of either decision."""
    rows: list[Row] = []
    mine = {c.id: c for c in yours.claims}
    for c in ref.claims:
        y = mine.pop(c.id, None)
        if y is None:
            rows.append(Row("claim", c.id, f"{_value(c.ours)} ({shown_verdict(c)})", "-", False, "not in your run"))
            continue
        same_verdict = shown_verdict(c) == shown_verdict(y)
        agree, why = values_agree(c.ours, y.ours, rtol)
        reasons = [w for w in ("verdict " + shown_verdict(y) if not same_verdict else "", why) if w]
        rows.append(
            Row(
                "claim",
                c.id,
                f"{_value(c.ours)} ({shown_verdict(c)})",
                f"{_value(y.ours)} ({shown_verdict(y)})",
                same_verdict and agree,
                "; ".join(reasons),
            )
        )
    rows += [
        Row("claim", cid, "-", f"{_value(y.ours)} ({shown_verdict(y)})", False, "not in the reference")
        for cid, y in mine.items()
    ]
    for kind, left, right in (
        ("fact", {f.id: f.value for f in ref.facts}, {f.id: f.value for f in yours.facts}),
        ("estimate", dict(ref.estimates), dict(yours.estimates)),
    ):
        for key in list(left) + [k for k in right if k not in left]:
            if key not in right or key not in left:
                where = "not in your run" if key not in right else "not in the reference"
                rows.append(Row(kind, key, _value(left.get(key)), _value(right.get(key)), False, where))
                continue
            agree, why = values_agree(left[key], right[key], rtol)
            rows.append(Row(kind, key, _value(left[key]), _value(right[key]), agree, why))
    return rows


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): d}


def setting_differences(ref: dict[str, Any], yours: dict[str, Any]) -> list[str]:
    """'key: reference -> yours' for every setting that changes what a run computes."""
    a, b = _flat(ref["config"]), _flat(yours["config"])
    keys = sorted(k for k in {*a, *b} if k.split(".")[0] not in RECORD_ONLY_KEYS and a.get(k) != b.get(k))
    return [f"{k}: {a.get(k, '-')} -> {b.get(k, '-')}" for k in keys]


def compare(reference: Record, yours: Record, rtol: float = RTOL) -> Comparison:
    """Decide both records with the checkout's decision code and compare them row by row."""
    if reference.paper.name != yours.paper.name:
        raise ValueError(f"cannot compare a run of {yours.paper.name!r} with the reference of {reference.paper.name!r}")
    decided = []
    for record in (reference, yours):
        cfg = record.config()
        decided.append(record.paper.decide_results(cfg, record.results()))
    rows = compare_decisions(decided[0], decided[1], rtol)
    return Comparison(reference, yours, rows, setting_differences(reference.run, yours.run))

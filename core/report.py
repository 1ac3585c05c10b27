"""The report of a run: claims (core.claims) with their verdicts, facts, estimates, tables, figures, the ledger.

A paper declares each claim *before* it runs, in `papers/<name>/claims.py`, with the paper's figure and the rule
that decides our figure against it; `decide` only supplies ``ours``. The verdict (holds, fails, undecided) is always
derived from the rule, never typed in, so a report cannot say a claim holds when its own numbers say otherwise.

    CLAIM = Claim("fp16-matches-fp32", "Unit-scaled FP16 matches FP32 (test BPC)", paper=printed(1.54),
                  rule=within_rel(0.02), source="US-BPC", statistic="test BPC, mean of 3 seeds", unit="3 seeds")
    CLAIM.measured(Interval(1.551, 1.53, 1.57))

A paper's `render(cfg, results, decided)` returns a `Report` with its tables, figures, metrics and notes; the record
(core.record) puts in the decided claims, facts and estimates and the paper's ledger, and `check_declared` refuses a
report whose claims differ from the declarations (a claim added, dropped, or its figure or rule changed once results
were in). Across commits the paper's claims lock and ledger (core.ledger) do the same, and the report shows a
re-specified claim's original verdict beside the new one.

One module over 400 lines: the report's claims table, history, facts, ledger, tables, figures and their markdown
and JSON forms are one object (Report); split, each part would need the others' rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.claims import (
    Claim,
    Fact,
    Interval,
    Verdict,
    count_verdicts,
    format_value,
    jsonable,
    shown_verdict,
)
from core.claims import check_id as _check_id

# what a smoke run's verdicts mean, in its report and its terminal summary
SMOKE_NOTE = (
    "Smoke scale: these verdicts check the plumbing (the run computes, stores, decides and reports end to end), "
    "not the paper: its samples are far too few to decide the claims. `scale=default` decides them."
)


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


# ---------------------------------------------------------------------------------------------- formatting
# Cell and detail text the papers' reports share; format_value (core.claims) is the default for everything else.


def fixed(x: float | None, digits: int = 2, *, missing: str = "n/a") -> str:
    """`x` with `digits` decimals; `missing` where there is no finite value (None, NaN, an infinity), e.g.
    "diverged" for the loss of a run that did not train."""
    return missing if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def mean_std(values: Sequence[float], spec: str = ".4f") -> str:
    """'mean +- std' over seeds (the sample std, ddof=1), both in the format `spec` ('.1f', '+.2%': a sign shows on
    the mean only); a single value alone, as it is; '-' for none."""
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return "-"
    if v.size == 1:
        return f"{v[0]:{spec}}"
    return f"{v.mean():{spec}} +- {v.std(ddof=1):{spec.lstrip('+')}}"


def estimate_text(value: Any, spec: str = ".4f", missing: str = "-") -> str:
    """A decided estimate as a cell: an Interval as 'estimate [low, high]', a number alone (one seed's value) and
    both in the format `spec` ('+.1%', '.4f'); text (e.g. "diverged") as it is; `missing` for None."""
    if isinstance(value, Interval):
        return f"{value.estimate:{spec}} [{value.low:{spec}}, {value.high:{spec}}]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:{spec}}"
    return missing if value is None else str(value)


UNCOUNTED = ("unverified", "not measured")  # verdicts shown beside the undecided count, counted neither way


def names_claim(text: str, claim_id: str) -> bool:
    """Whether `text` (a ledger entry's moved_to) names `claim_id` as a whole id, not as part of a longer one."""
    return re.search(rf"(?<![\w-]){re.escape(claim_id)}(?![\w-])", text) is not None


def uncounted(n: dict[str, int]) -> list[str]:
    """['1 unverified', '2 not measured'] for the uncounted verdicts that occur in the counts `n`."""
    return [f"{n[k]} {k}" for k in UNCOUNTED if n[k]]


# ---------------------------------------------------------------------------------------------- tables, figures


@dataclass
class Table:
    """A table shaped like one of the paper's. Rows are sequences of values, one per column."""

    name: str
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    caption: str = ""

    def __post_init__(self) -> None:
        _check_id("table name", self.name)
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.name!r}: row {i} has {len(row)} values but there are {len(self.columns)} columns"
                )

    def to_markdown(self) -> str:
        head = "| " + " | ".join(_cell(c) for c in self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(_cell(format_value(v)) for v in row) + " |" for row in self.rows]
        return "\n".join([head, rule, *body])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "columns": list(self.columns),
            "rows": [[jsonable(v) for v in row] for row in self.rows],
            "caption": self.caption,
        }


@dataclass
class Figure:
    """A matplotlib figure; the runner saves it as `<name>.png` in the run directory."""

    name: str
    figure: Any  # matplotlib.figure.Figure (not imported here: core.report stays light)
    caption: str = ""

    def __post_init__(self) -> None:
        _check_id("figure name", self.name)
        if not hasattr(self.figure, "savefig"):
            raise TypeError(f"figure {self.name!r}: expected a matplotlib Figure, got {type(self.figure).__name__}")

    @property
    def filename(self) -> str:
        return f"{self.name}.png"


# ---------------------------------------------------------------------------------------------- the report


@dataclass
class Report:
    """What a paper's `render` returns (tables, figures, metrics, notes); core.record adds the decided claims, facts,
    estimates and the ledger, and writes it with the run's config, versions and fingerprints."""

    paper: str
    title: str
    claims: list[Claim] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    ledger: list[Any] = field(default_factory=list)  # core.ledger.Change, attached by core.record
    estimates: dict[str, Any] = field(default_factory=dict)  # the decision's named key figures (core.paper.Decided)

    def __post_init__(self) -> None:
        _check_id("paper", self.paper)

    def validate(self) -> None:
        """Raise if two claims, tables or figures share an id (their files and rows would collide)."""
        for kind, ids in (
            ("claim", [c.id for c in self.claims] + [f.id for f in self.facts]),
            ("table", [t.name for t in self.tables]),
            ("figure", [f.name for f in self.figures]),
        ):
            seen = {x for x in ids if ids.count(x) > 1}
            if seen:
                raise ValueError(f"report {self.paper!r}: duplicate {kind} ids {sorted(seen)}")

    def check_declared(self, declared: Sequence[Claim]) -> None:
        """Raise unless the report's claims are `declared` (ids, statements, paper figures, rules), in order; only
        `ours` and `detail` may have been filled in since."""
        got = [c.declaration() for c in self.claims]
        want = [c.declaration() for c in declared]
        if got != want:
            changed = [g["id"] for g, w in zip(got, want, strict=False) if g != w]
            missing = sorted({w["id"] for w in want} - {g["id"] for g in got})
            added = sorted({g["id"] for g in got} - {w["id"] for w in want})
            raise ValueError(
                f"report {self.paper!r}: its claims differ from those declared before the run "
                f"(changed {changed or 'none'}, dropped {missing or 'none'}, added {added or 'none'})"
            )

    @property
    def claims_holding(self) -> int:
        return sum(c.verdict is Verdict.HOLDS for c in self.claims)

    @property
    def verdicts(self) -> dict[str, int]:
        """{'holds': n, 'fails': n, 'undecided': n, 'not measured': n, 'unverified': n}."""
        return count_verdicts(self.claims)

    def verdict_summary(self) -> str:
        """'3 hold, 1 fails, 2 undecided of 6 claims' (and how many were unverified or not measured, if any)."""
        n = self.verdicts
        text = f"{n['holds']} hold, {n['fails']} fail, {n['undecided']} undecided of {len(self.claims)} claims"
        extra = uncounted(n)
        return text + (f" ({', '.join(extra)})" if extra else "")

    def respecified(self, claim_id: str) -> list[Any]:
        """The ledger's entries that changed this claim's rule, oldest first."""
        return [e for e in self.ledger if e.claim == claim_id and e.kind == "respecified"]

    def original_verdict(self, claim: Claim) -> str:
        """'-' for a claim never re-specified; else the original rule and its verdict (core.ledger.Change)."""
        entries = self.respecified(claim.id)
        if not entries:
            return "-"
        first = entries[0]
        return f"{first.old}: {first.original_verdict(claim)}"

    def lineage(self, claim_id: str, _seen: frozenset[str] = frozenset()) -> list[Any]:
        """Every re-specification behind this claim, oldest first: its own `respecified` entries and, where it was
        re-added under this id (a `removed` entry whose `moved_to` names it), the removal and the old claim's own
        re-specifications before it."""
        out = []
        for e in self.ledger:
            if e.claim == claim_id and e.kind == "respecified":
                out.append(e)
            elif e.kind == "removed" and e.claim not in _seen | {claim_id} and names_claim(e.moved_to, claim_id):
                out += [*self.lineage(e.claim, _seen | {claim_id}), e]
        return sorted(out, key=lambda e: e.date)  # stable: the ledger's order within a day

    def history(self, claim: Claim) -> str:
        """'-' for a claim never re-specified; else how many times it was (under this id or one it replaced), the
        rule most recently replaced and its verdict, and the original rule's where that is another."""

        def verdict(e: Any) -> str:
            own = e.claim == claim.id
            what = e.old if own else f"{e.claim}: {e.old}"
            return f"{what}: {e.original_verdict(claim if own else None)}"

        entries = self.lineage(claim.id)
        if not entries:
            return "-"
        k = len(entries)
        text = f"{k} re-specification{'s' if k > 1 else ''}; last replaced {verdict(entries[-1])}"
        return text + (f"; original {verdict(entries[0])}" if k > 1 else "")

    def claims_markdown(self) -> str:
        table = Table(
            "claims",
            "Claims",
            [
                "id",
                "claim",
                "paper",
                "ours",
                "rule",
                "decision",
                "unit",
                "distance from the margin",
                "verdict",
                "history",
            ],
            [
                [
                    c.id,
                    c.statement + (f" ({c.source})" if c.source else ""),
                    format_value(c.paper) + (f" [{c.figure_source}]" if c.figure_source else ""),
                    format_value(c.ours),
                    c.rule.description + (f" [margin {c.margin_source}]" if c.margin_source else ""),
                    c.rule.kind,
                    c.unit or "-",
                    str(c.distance) if c.distance is not None else "-",
                    shown_verdict(c),
                    self.history(c),
                ]
                for c in self.claims
            ],
        )
        return table.to_markdown()

    def design_markdown(self) -> str:
        """Per claim: the statistic, its confidence and the smallest effect the design resolves."""
        rows = [
            [c.id, c.statistic or "-", f"{100 * c.confidence:g}%", c.unit or "-", c.resolution or "-"]
            for c in self.claims
        ]
        return Table("design", "Design", ["claim", "statistic", "confidence", "unit", "resolves"], rows).to_markdown()

    def facts_markdown(self) -> str:
        rows = [[f.id, f.statement, f.kind, format_value(f.paper), format_value(f.value)] for f in self.facts]
        return Table("facts", "Facts", ["id", "fact", "kind", "paper", "ours"], rows).to_markdown()

    def ledger_markdown(self) -> str:
        by_id = {c.id: c for c in self.claims}
        rows = [
            [
                e.date,
                e.claim,
                e.kind,
                e.old or "-",
                e.new or "-",
                e.reason + (f" Now: {e.moved_to}." if e.moved_to else ""),
                e.original_verdict(by_id.get(e.claim)) if e.kind == "respecified" else "-",
            ]
            for e in self.ledger
        ]
        columns = ["date", "claim", "change", "old rule", "new rule", "reason", "original rule's verdict"]
        return Table("ledger", "Ledger", columns, rows).to_markdown()

    def to_markdown(
        self, *, header: dict[str, Any], config_yaml: str, versions: dict[str, str], profile: dict | None = None
    ) -> str:
        """The report.md text: header, claims table first, then notes, tables, figures, metrics, the run's time
        profile (core.profile; runs made before it have none), provenance."""
        out = [f"# {self.title}", ""]
        out += [" · ".join(f"**{k}**: {format_value(v)}" for k, v in header.items()), ""]
        out += ["## Claims", ""]
        if self.claims:
            out += [
                self.claims_markdown(),
                "",
                f"{self.verdict_summary()} at this scale. Undecided: the interval straddles the rule's margin, so "
                "the design cannot tell; it counts neither as holding nor as failing."
                + (
                    " Unverified: the paper's figure could not be checked in a primary source; the rule's own "
                    "outcome is shown in brackets, and it counts neither way."
                    if self.verdicts["unverified"]
                    else ""
                ),
                "",
            ]
            if header.get("scale") == "smoke":
                out += [SMOKE_NOTE, ""]
            details = [f"- `{c.id}`: {c.detail}" for c in self.claims if c.detail]
            details += [f"- `{c.id}`, to decide: {c.to_decide}" for c in self.claims if c.to_decide]
            if details:
                out += [*details, ""]
            out += ["### Design", "", self.design_markdown(), ""]
        else:
            out += ["This run checks no claims.", ""]
        if self.facts:
            out += [
                "## Facts (not claims)",
                "",
                "Analytic: arithmetic on shapes or config; calibration: a setting chosen so a paper figure is "
                "reached; construction: true by how the code is built. Shown for context, never counted.",
                "",
                self.facts_markdown(),
                "",
            ]
            out += [f"- `{f.id}`: {f.detail}" for f in self.facts if f.detail] + [""]
        if self.ledger:
            out += ["## Ledger", "", "Every recorded change to this paper's claims (papers/<name>/ledger.py).", ""]
            out += [self.ledger_markdown(), ""]
        if self.notes:
            out += ["## Notes", "", *[f"- {n}" for n in self.notes], ""]
        for t in self.tables:
            out += [f"## {t.title}", "", t.to_markdown(), ""]
            if t.caption:
                out += [t.caption, ""]
        for f in self.figures:
            out += [f"## Figure: {f.name}", "", f"![{f.caption or f.name}]({f.filename})", ""]
            if f.caption:
                out += [f.caption, ""]
        if self.estimates:
            out += [
                "## Key figures",
                "",
                "The estimates the decision made beside the claims (what `make compare` holds against the reference).",
                "",
                "| figure | value |",
                "|---|---|",
            ]
            out += [f"| {_cell(k)} | {_cell(format_value(v))} |" for k, v in self.estimates.items()]
            out += [""]
        if self.metrics:
            out += ["## Metrics", "", "| metric | value |", "|---|---|"]
            out += [f"| {k} | {format_value(v)} |" for k, v in sorted(self.metrics.items())]
            out += [""]
        if profile:
            from core.profile import profile_markdown

            out += ["## Time profile", "", *profile_markdown(profile), ""]
        out += ["## Config", "", "```yaml", config_yaml.rstrip(), "```", ""]
        out += ["## Environment", "", "| package | version |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in versions.items()]
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper,
            "title": self.title,
            "claims": [
                {**c.to_dict(), "original_verdict": self.original_verdict(c), "history": self.history(c)}
                for c in self.claims
            ],
            "verdicts": self.verdicts,
            "facts": [f.to_dict() for f in self.facts],
            "ledger": [e.to_dict({c.id: c for c in self.claims}.get(e.claim)) for e in self.ledger],
            "estimates": {k: jsonable(v) for k, v in self.estimates.items()},
            "metrics": {k: jsonable(v) for k, v in self.metrics.items()},
            "tables": [t.to_dict() for t in self.tables],
            "figures": [{"name": f.name, "file": f.filename, "caption": f.caption} for f in self.figures],
            "notes": list(self.notes),
        }

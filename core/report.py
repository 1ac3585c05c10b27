"""The paper contract's run record: claims with fixed tolerance rules, tables, figures and the Report.

A paper declares each claim *before* it runs, with the paper's figure and the rule that decides whether our
figure agrees with it; running only supplies ``ours``. ``holds`` is always derived from the rule, never typed in,
so a report cannot say a claim holds when its own numbers say otherwise.

    CLAIM = Claim("fp16-matches-fp32", "Unit-scaled FP16 matches FP32 (test BPC)", paper=1.540,
                  rule=within_rel(0.02))
    report.claims.append(CLAIM.measured(1.551))

A paper's `claims(cfg) -> list[Claim]` (computed from the config alone) is its declaration: the runner calls it
before `reproduce`, writes it to the run directory as `claims.json`, and afterwards `check_declared` refuses a report
whose claims differ from it (a claim added, dropped, or its figure or rule changed once results were in).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (or a mean with a seed spread), e.g. from `core.stats`.

    `low` and `high` bound the estimate at `confidence`; `method` says how they were computed ("paired bootstrap over
    412 test queries", "t interval over 3 seeds"). Claims whose rule must see the spread take an Interval as `ours`.
    """

    estimate: float
    low: float
    high: float
    confidence: float = 0.95
    method: str = ""

    def __post_init__(self) -> None:
        for name in ("estimate", "low", "high", "confidence"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if not self.low <= self.high:
            raise ValueError(f"Interval: low {self.low} is above high {self.high}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"Interval: confidence must be in (0, 1), got {self.confidence}")

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        return f"{format_value(self.estimate)} [{format_value(self.low)}, {format_value(self.high)}] ({pct})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": _jsonable(self.estimate),
            "low": _jsonable(self.low),
            "high": _jsonable(self.high),
            "confidence": self.confidence,
            "method": self.method,
        }


Value = float | int | bool | str | Interval

_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def _check_id(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _ID_PATTERN.match(value):
        raise ValueError(
            f"{kind} {value!r} is not a valid id: use lower-case letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return value


def format_value(value: Any, digits: int = 4) -> str:
    """A number with `digits` significant figures (integers in full); anything else as text."""
    if value is None:
        return "-"
    if isinstance(value, Interval):
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value != 0 and (abs(value) >= 10**digits or abs(value) < 10 ** -(digits - 1)):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}"
    return str(value)


# ---------------------------------------------------------------------------------------------- tolerance rules


@dataclass(frozen=True)
class Rule:
    """Decides whether our figure agrees with the paper's. `check(ours, paper) -> bool`."""

    description: str
    check: Callable[[Any, Any], bool] = field(compare=False)

    def __call__(self, ours: Any, paper: Any) -> bool:
        return bool(self.check(ours, paper))


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def within_rel(rel: float) -> Rule:
    """|ours - paper| <= rel * |paper|."""
    if not rel >= 0:
        raise ValueError(f"within_rel: rel must be >= 0, got {rel}")
    return Rule(
        f"|ours - paper| <= {rel:g} x |paper|",
        lambda ours, paper: _finite(ours) and abs(ours - paper) <= rel * abs(paper),
    )


def within_abs(tol: float) -> Rule:
    """|ours - paper| <= tol."""
    if not tol >= 0:
        raise ValueError(f"within_abs: tol must be >= 0, got {tol}")
    return Rule(
        f"|ours - paper| <= {format_value(float(tol))}",
        lambda ours, paper: _finite(ours) and abs(ours - paper) <= tol,
    )


def at_most(bound: float) -> Rule:
    """ours <= bound (the paper's figure is context, not the target)."""
    return Rule(f"ours <= {format_value(float(bound))}", lambda ours, paper: _finite(ours) and ours <= bound)


def at_least(bound: float) -> Rule:
    """ours >= bound."""
    return Rule(f"ours >= {format_value(float(bound))}", lambda ours, paper: _finite(ours) and ours >= bound)


def _interval(x: Any) -> bool:
    return isinstance(x, Interval) and all(math.isfinite(v) for v in (x.estimate, x.low, x.high))


def interval_above(bound: float) -> Rule:
    """The whole interval lies above `bound` (e.g. a gain whose 95% interval excludes zero)."""
    return Rule(
        f"interval low > {format_value(float(bound))}", lambda ours, paper: _interval(ours) and ours.low > bound
    )


def interval_below(bound: float) -> Rule:
    """The whole interval lies below `bound`."""
    return Rule(
        f"interval high < {format_value(float(bound))}", lambda ours, paper: _interval(ours) and ours.high < bound
    )


def is_true(description: str) -> Rule:
    """For qualitative claims whose measured outcome is a boolean (e.g. 'A is worse than B')."""
    return Rule(description, lambda ours, paper: ours is True)


# ---------------------------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its figure, the rule fixed before the run, and (once measured) ours."""

    id: str
    statement: str
    paper: Value | None
    rule: Rule
    ours: Value | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        _check_id("claim id", self.id)
        if not isinstance(self.rule, Rule):
            raise TypeError(f"claim {self.id!r}: rule must be a core.report.Rule, got {type(self.rule).__name__}")

    def measured(self, ours: Value, detail: str = "") -> Claim:
        """This claim with our figure filled in (and how it was measured, if worth saying)."""
        if hasattr(ours, "item") and callable(ours.item):  # numpy / jax scalars
            ours = ours.item()
        return dataclasses.replace(self, ours=ours, detail=detail or self.detail)

    @property
    def holds(self) -> bool | None:
        """None while not measured; otherwise the rule's verdict (a NaN or error never holds)."""
        if self.ours is None:
            return None
        try:
            return self.rule(self.ours, self.paper)
        except (TypeError, ValueError, ArithmeticError):
            return False

    def declaration(self) -> dict[str, Any]:
        """What is fixed before the run: id, statement, the paper's figure and the rule."""
        return {
            "id": self.id,
            "statement": self.statement,
            "paper": _jsonable(self.paper),
            "tolerance": self.rule.description,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.declaration(), "ours": _jsonable(self.ours), "holds": self.holds, "detail": self.detail}


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict(holds: bool | None) -> str:
    return {True: "holds", False: "does not hold", None: "not measured"}[holds]


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
            "rows": [[_jsonable(v) for v in row] for row in self.rows],
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
    """What `papers.<name>.reproduce(cfg)` returns. The runner adds config, versions and wall time."""

    paper: str
    title: str
    claims: list[Claim] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_id("paper", self.paper)

    def validate(self) -> None:
        """Raise if two claims, tables or figures share an id (their files and rows would collide)."""
        for kind, ids in (
            ("claim", [c.id for c in self.claims]),
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
        return sum(c.holds is True for c in self.claims)

    def claims_markdown(self) -> str:
        table = Table(
            "claims",
            "Claims",
            ["id", "claim", "paper", "ours", "tolerance", "verdict"],
            [
                [
                    c.id,
                    c.statement,
                    format_value(c.paper),
                    format_value(c.ours),
                    c.rule.description,
                    verdict(c.holds),
                ]
                for c in self.claims
            ],
        )
        return table.to_markdown()

    def to_markdown(self, *, header: dict[str, Any], config_yaml: str, versions: dict[str, str]) -> str:
        """The report.md text: header, claims table first, then notes, tables, figures, metrics, provenance."""
        out = [f"# {self.title}", ""]
        out += [" · ".join(f"**{k}**: {format_value(v)}" for k, v in header.items()), ""]
        out += ["## Claims", ""]
        if self.claims:
            out += [
                self.claims_markdown(),
                "",
                f"{self.claims_holding} of {len(self.claims)} claims hold at this scale.",
                "",
            ]
            details = [f"- `{c.id}`: {c.detail}" for c in self.claims if c.detail]
            if details:
                out += [*details, ""]
        else:
            out += ["This run checks no claims.", ""]
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
        if self.metrics:
            out += ["## Metrics", "", "| metric | value |", "|---|---|"]
            out += [f"| {k} | {format_value(v)} |" for k, v in sorted(self.metrics.items())]
            out += [""]
        out += ["## Config", "", "```yaml", config_yaml.rstrip(), "```", ""]
        out += ["## Environment", "", "| package | version |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in versions.items()]
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper,
            "title": self.title,
            "claims": [c.to_dict() for c in self.claims],
            "metrics": {k: _jsonable(v) for k, v in self.metrics.items()},
            "tables": [t.to_dict() for t in self.tables],
            "figures": [{"name": f.name, "file": f.filename, "caption": f.caption} for f in self.figures],
            "notes": list(self.notes),
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, Interval):
        return v.to_dict()
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # JSON has no NaN/Inf
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return str(v)

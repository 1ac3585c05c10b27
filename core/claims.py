"""Claims as declarations: the paper's statement and figure, the statistic we measure, and a rule fixed before the
run that gives one of three verdicts.

    Claim("fp16-matches-fp32", "Unit-scaled FP16 matches FP32 (test BPC)",
          paper=printed(1.54), rule=within_rel(0.02),
          source="US-BPC", statistic="relative test-BPC gap, mean over seeds",
          unit="3 seeds", resolution="t interval half-width ~1% (pilot)")

A verdict is derived from the rule and our figure, never typed in:
- holds: our figure (its whole interval, where it is a statistic) satisfies the rule;
- fails: it (its whole interval) does not;
- undecided: the interval straddles the rule's margin: the design cannot tell, and it counts neither way;
- unverified: the paper's figure could not be checked in a primary source (`Claim.unverified` says why, or its
  `figure_source` is secondary or none): the rule's own outcome is shown beside (`rule_verdict`), and it counts
  neither way.

Every claim says where its figure comes from (`figure_source`) and its margin (`margin_source`, "ours" where the
project chose it), how far the verdict sits from the margin (`margin_distance`, in half-widths of our interval), and,
when undecided, what sample would decide it (`sample_to_decide`) or why none can (`undecidable`).

A point value (a deterministic measurement: simulated cycles, an exact comparison) is decided as it is. A paper
figure printed to a few digits is an interval (`printed(0.7)` is [0.65, 0.75]); equivalence rules widen their
margin by it. Facts that hold by construction or restate our own arithmetic are not claims: they are `Fact` rows
labelled analytic, calibration or construction.

This module is the one import path of the claims API (Claim, Fact, Interval, Rule, the rules, Decided, the verdicts
and `format_value`); core.report holds the Report that shows them and imports them from here like every paper.

One module over 400 lines: Interval, the rules, Claim, Fact and Decided are one vocabulary (a rule reads an
Interval, a claim applies a rule, Decided counts claims and facts); split, each part would import the others.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (or a mean with a seed spread), e.g. from `core.stats`.

    `low` and `high` bound the estimate at `confidence`; `method` says how they were computed ("paired bootstrap over
    412 test queries", "t interval over 3 seeds", "printed to 2 digits"). Claims whose rule must see the spread
    take an Interval as `ours`.
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
        if not 0 < self.confidence <= 1:
            raise ValueError(f"Interval: confidence must be in (0, 1], got {self.confidence}")

    def __str__(self) -> str:
        if self.method.startswith("printed as "):
            return self.method.removeprefix("printed as ")  # as the paper prints it, trailing zeros included
        pct = f"{100 * self.confidence:g}%"
        return f"{format_value(self.estimate)} [{format_value(self.low)}, {format_value(self.high)}] ({pct})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": jsonable(self.estimate),
            "low": jsonable(self.low),
            "high": jsonable(self.high),
            "confidence": self.confidence,
            "method": self.method,
        }


def printed(value: float | str) -> Interval:
    """A figure as the paper prints it: every value that rounds to it. `printed("0.70")` is [0.695, 0.705];
    pass a string to keep trailing zeros (a float's repr decides the digits otherwise: `printed(1.5)` is
    [1.45, 1.55])."""
    d = Decimal(str(value))
    if not d.is_finite():
        raise ValueError(f"printed: {value!r} is not a finite number")
    half = Decimal(1).scaleb(d.as_tuple().exponent) / 2
    return Interval(float(d), float(d - half), float(d + half), 1.0, f"printed as {value}")


Value = float | int | bool | str | Interval


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


_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def check_id(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _ID_PATTERN.match(value):
        raise ValueError(
            f"{kind} {value!r} is not a valid id: use lower-case letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return value


# ---------------------------------------------------------------------------------------------- verdicts


class Verdict(enum.StrEnum):
    HOLDS = "holds"
    FAILS = "fails"
    UNDECIDED = "undecided"
    NOT_MEASURED = "not measured"
    UNVERIFIED = "unverified"


def _as_verdict(x: Any) -> Verdict:
    if isinstance(x, Verdict):
        return x
    if x is None:
        return Verdict.UNDECIDED
    return Verdict.HOLDS if bool(x) else Verdict.FAILS


# ---------------------------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """Decides our figure against the paper's: `check(ours, paper)` returns a Verdict (or a bool: holds / fails).

    `kind` is the decision as a reviewer names it: equivalence (a two-sided margin, for "matches"),
    non-inferiority or superiority (one-sided, with the direction in the description), bound (a threshold
    of the paper's own statement), qualitative (a yes/no outcome).

    `region(paper)`, where the rule has one, is the closed range [low, high] our figure must lie in (either end may be
    infinite): `margin_distance` reads it to say how far a verdict sits from the rule's margin. A qualitative rule
    has none."""

    description: str
    check: Callable[[Any, Any], Any] = field(compare=False)
    kind: str = "bound"
    region: Callable[[Any], tuple[float, float] | None] | None = field(default=None, compare=False)

    def verdict(self, ours: Any, paper: Any) -> Verdict:
        return _as_verdict(self.check(ours, paper))

    def __call__(self, ours: Any, paper: Any) -> bool:
        """True where the rule holds (undecided is not holding)."""
        return self.verdict(ours, paper) is Verdict.HOLDS


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def undefined_interval(x: Any) -> str:
    """Why `x` is an interval that says nothing (a NaN anywhere in it, or a bound at infinity around a finite
    estimate: a bootstrap undefined on some resamples), else "". Such an interval neither holds nor fails a rule: the
    claim is undecided. An interval that is one infinite value (estimate and both bounds +inf, or -inf: how a paper
    records a run that diverged) is not undefined: like any value that is not a finite number it fails a rule, and a
    claim where diverging should hold says so (`or_diverged`)."""
    if not isinstance(x, Interval):
        return ""
    vals = (x.estimate, x.low, x.high)
    if any(math.isnan(v) for v in vals):
        return f"its interval {x} is undefined (NaN)" + (f": {x.method}" if x.method else "")
    if any(math.isinf(v) for v in vals) and not (x.estimate == x.low == x.high):
        return f"its interval {x} has an infinite bound" + (f": {x.method}" if x.method else "")
    return ""


def _bounds(x: Any) -> tuple[float, float] | None:
    """(low, high) of a finite point or interval; None for anything else (text, NaN, infinity, a bool)."""
    if isinstance(x, Interval):
        vals = (x.estimate, x.low, x.high)
        return (x.low, x.high) if all(math.isfinite(v) for v in vals) else None
    if _finite(x):
        return float(x), float(x)
    return None


def inside(ours: Any, low: float, high: float) -> Verdict:
    """Holds when ours (all of its interval) lies in [low, high], fails when none of it does, undecided between."""
    b = _bounds(ours)
    if b is None:
        return Verdict.FAILS
    lo, hi = b
    if low <= lo and hi <= high:
        return Verdict.HOLDS
    if hi < low or lo > high:
        return Verdict.FAILS
    return Verdict.UNDECIDED


def at_most(bound: float, *, kind: str = "non-inferiority") -> Rule:
    """ours <= bound (an interval: all of it holds, none of it fails, straddling is undecided)."""
    return Rule(
        f"ours <= {format_value(float(bound))}",
        lambda ours, paper: inside(ours, -math.inf, bound),
        kind,
        lambda paper: (-math.inf, float(bound)),
    )


def at_least(bound: float, *, kind: str = "superiority") -> Rule:
    """ours >= bound (an interval: all of it holds, none of it fails, straddling is undecided)."""
    return Rule(
        f"ours >= {format_value(float(bound))}",
        lambda ours, paper: inside(ours, bound, math.inf),
        kind,
        lambda paper: (float(bound), math.inf),
    )


def interval_above(bound: float, *, kind: str = "superiority") -> Rule:
    """The whole interval lies above `bound` (e.g. a gain whose interval excludes zero); all of it at or below
    fails; straddling is undecided. A point value is not enough: it fails."""

    def check(ours: Any, paper: Any) -> Verdict:
        if not isinstance(ours, Interval) or _bounds(ours) is None:
            return Verdict.FAILS
        return Verdict.HOLDS if ours.low > bound else Verdict.FAILS if ours.high <= bound else Verdict.UNDECIDED

    return Rule(f"interval low > {format_value(float(bound))}", check, kind, lambda paper: (float(bound), math.inf))


def interval_below(bound: float, *, kind: str = "superiority") -> Rule:
    """The whole interval lies below `bound`; all of it at or above fails; straddling is undecided."""

    def check(ours: Any, paper: Any) -> Verdict:
        if not isinstance(ours, Interval) or _bounds(ours) is None:
            return Verdict.FAILS
        return Verdict.HOLDS if ours.high < bound else Verdict.FAILS if ours.low >= bound else Verdict.UNDECIDED

    return Rule(f"interval high < {format_value(float(bound))}", check, kind, lambda paper: (-math.inf, float(bound)))


def equivalent(low: float, high: float) -> Rule:
    """ours in [low, high]: a two-sided margin fixed in absolute terms."""
    return Rule(
        f"{format_value(float(low))} <= ours <= {format_value(float(high))}",
        lambda ours, paper: inside(ours, low, high),
        "equivalence",
        lambda paper: (float(low), float(high)),
    )


def within_rel(rel: float) -> Rule:
    """|ours - paper| <= rel * |paper|; a printed paper figure widens the margin by its rounding."""
    if not rel >= 0:
        raise ValueError(f"within_rel: rel must be >= 0, got {rel}")

    def region(paper: Any) -> tuple[float, float] | None:
        p = _bounds(paper)
        return None if p is None else (p[0] - rel * abs(p[0]), p[1] + rel * abs(p[1]))

    def check(ours: Any, paper: Any) -> Verdict:
        r = region(paper)
        return Verdict.FAILS if r is None else inside(ours, *r)

    return Rule(f"|ours - paper| <= {rel:g} x |paper|", check, "equivalence", region)


def within_abs(tol: float) -> Rule:
    """|ours - paper| <= tol; a printed paper figure widens the margin by its rounding."""
    if not tol >= 0:
        raise ValueError(f"within_abs: tol must be >= 0, got {tol}")

    def region(paper: Any) -> tuple[float, float] | None:
        p = _bounds(paper)
        return None if p is None else (p[0] - tol, p[1] + tol)

    def check(ours: Any, paper: Any) -> Verdict:
        r = region(paper)
        return Verdict.FAILS if r is None else inside(ours, *r)

    return Rule(f"|ours - paper| <= {format_value(float(tol))}", check, "equivalence", region)


def is_true(description: str) -> Rule:
    """For qualitative claims whose measured outcome is a boolean (e.g. 'A is worse than B')."""
    return Rule(description, lambda ours, paper: ours is True, "qualitative")


def or_diverged(rule: Rule, description: str) -> Rule:
    """`rule`, or holds outright where ours is the text "diverged": for claims that an arm trains worse than its
    reference, where an arm that did not train at all (a non-finite loss) shows it most plainly. `description` says
    both halves ("gap >= 1% (worse than FP32), or diverged")."""
    return Rule(
        description,
        lambda ours, paper: Verdict.HOLDS if ours == "diverged" else rule.verdict(ours, paper),
        rule.kind,
        rule.region,
    )


# ---------------------------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, declared before the run; `ours` is filled in by measuring.

    id, statement: what the paper says (quoted or paraphrased) and, in `source`, its REFERENCES.md entry.
    paper: the paper's figure (`printed(...)` where it is printed to a few digits) or its statement in words.
    rule: the decision, fixed before the run. statistic: what `ours` is. confidence: of the interval decided on.
    unit: the unit of replication ("3 seeds", "201 test triples, paired bootstrap", "deterministic").
    resolution: the smallest effect the default design resolves (the expected interval half-width, from a pilot
    or a power computation), so a reader can see whether an undecided verdict was to be expected.
    measure: the function that measures it (its source is fingerprinted into the paper's claims lock).
    unverified: why the paper's figure could not be checked in a primary source (a figure from a secondary
    compilation, a citation that does not hold the number); empty where it was checked. A measured claim with it set
    has the verdict unverified, whatever its rule says.
    figure_source: where the paper's figure comes from, "<kind>: <where>", kind one of SOURCE_KINDS: paper (read
    in the paper: table, figure, section or page), authors (their code, notebook or repository), secondary (a blog,
    review or compilation), none (the paper gives no figure for it). Secondary and none make the claim unverified.
    margin_source: where the rule's margin or threshold comes from, "<kind>: <why>", kind one of MARGIN_KINDS (ours:
    the project's own choice); empty for a rule without one (qualitative).
    n, n_of: the sample behind `ours`' interval (n seeds, test queries, cells; 0 for a deterministic figure), so an
    undecided verdict can say what sample would decide it (`to_decide`).
    undecidable: why no sample this design allows can decide the claim, where that is so (said before the run).
    """

    id: str
    statement: str
    paper: Value | None
    rule: Rule
    ours: Value | None = None
    detail: str = ""
    source: str = ""
    statistic: str = ""
    confidence: float = 0.95
    unit: str = ""
    resolution: str = ""
    measure: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    unverified: str = ""
    figure_source: str = ""
    margin_source: str = ""
    n: int = 0
    n_of: str = ""
    undecidable: str = ""

    def __post_init__(self) -> None:
        check_id("claim id", self.id)
        if not isinstance(self.rule, Rule):
            raise TypeError(f"claim {self.id!r}: rule must be a core.claims.Rule, got {type(self.rule).__name__}")
        for name, kinds in (("figure_source", SOURCE_KINDS), ("margin_source", MARGIN_KINDS)):
            text = getattr(self, name)
            if text and label_kind(text) not in kinds:
                raise ValueError(
                    f"claim {self.id!r}: {name} {text!r} must start with one of {', '.join(kinds)} and a colon "
                    '("paper: Table 2, p. 6")'
                )
        if not (isinstance(self.n, int) and self.n >= 0):
            raise ValueError(f"claim {self.id!r}: n must be a whole number >= 0 (the sample size), got {self.n!r}")

    @property
    def unverified_reason(self) -> str:
        """Why the paper's figure is unverified: `unverified`, else its secondary or missing source; "" if verified."""
        if self.unverified:
            return self.unverified
        kind = label_kind(self.figure_source)
        if kind in UNVERIFIED_SOURCES:
            where = self.figure_source.split(":", 1)[1].strip()
            return f"the figure's source is {kind}" + (f": {where}" if where else "")
        return ""

    def measured(self, ours: Value, detail: str = "") -> Claim:
        """This claim with our figure filled in (and how it was measured, if worth saying)."""
        if hasattr(ours, "item") and callable(ours.item):  # numpy / jax scalars
            ours = ours.item()
        detail = detail or self.detail
        why = undefined_interval(ours)
        if why:
            detail = f"undecided: {why}; it cannot show the claim either way" + (f". {detail}" if detail else "")
        return dataclasses.replace(self, ours=ours, detail=detail)

    @property
    def verdict(self) -> Verdict:
        """Not measured while `ours` is None; unverified where the paper's figure is (`unverified`); otherwise the
        rule's verdict."""
        if self.ours is not None and self.unverified_reason:
            return Verdict.UNVERIFIED
        return self.rule_verdict

    @property
    def rule_verdict(self) -> Verdict:
        """The rule's verdict on our figure, whether or not the paper's figure was verified: not measured while
        `ours` is None; undecided where `ours` is an undefined interval (`undefined_interval`: it says nothing either
        way; `measured` puts the reason in the detail); a NaN point or an error fails."""
        if self.ours is None:
            return Verdict.NOT_MEASURED
        if undefined_interval(self.ours):
            return Verdict.UNDECIDED
        try:
            return self.rule.verdict(self.ours, self.paper)
        except (TypeError, ValueError, ArithmeticError):
            return Verdict.FAILS

    @property
    def holds(self) -> bool | None:
        """True when it holds, False when it fails, None when undecided or not measured."""
        return {Verdict.HOLDS: True, Verdict.FAILS: False}.get(self.verdict)

    def declaration(self) -> dict[str, Any]:
        """What is fixed before the run: id, statement, the paper's figure, the rule and the design (and, only where
        set, why the paper's figure is unverified)."""
        out = {
            "id": self.id,
            "statement": self.statement,
            "paper": jsonable(self.paper),
            "tolerance": self.rule.description,
            "decision": self.rule.kind,
            "source": self.source,
            "statistic": self.statistic,
            "confidence": self.confidence,
            "unit": self.unit,
            "resolution": self.resolution,
        }
        if self.unverified:
            out["unverified"] = self.unverified
        for name in ("figure_source", "margin_source", "n", "n_of", "undecidable"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out

    @property
    def distance(self) -> Distance | None:
        """How far our figure sits from the rule's margin (`margin_distance`); None where it cannot be said."""
        return margin_distance(self.rule, self.ours, self.paper)

    @property
    def to_decide(self) -> str:
        """For an undecided claim, what would decide it; "" otherwise (`sample_to_decide`)."""
        if self.rule_verdict is not Verdict.UNDECIDED:
            return ""
        return sample_to_decide(self)

    def to_dict(self) -> dict[str, Any]:
        out = {
            **self.declaration(),
            "ours": jsonable(self.ours),
            "verdict": self.verdict.value,
            "holds": self.holds,
            "detail": self.detail,
        }
        if self.unverified_reason:
            out["rule_verdict"] = self.rule_verdict.value
            out["unverified_reason"] = self.unverified_reason
        d = self.distance
        if d is not None:
            out["distance"] = d.to_dict()
        if self.to_decide:
            out["to_decide"] = self.to_decide
        return out


# ---------------------------------------------------------------------------------------------- labels and margins

SOURCE_KINDS = ("paper", "authors", "secondary", "none")
UNVERIFIED_SOURCES = ("secondary", "none")
MARGIN_KINDS = ("paper", "authors", "ours")


def label_kind(text: str) -> str:
    """The kind of a "<kind>: <where>" label ("" where there is no colon)."""
    return text.split(":", 1)[0].strip() if ":" in text else ""


@dataclass(frozen=True)
class Distance:
    """Where our figure sits against the rule's margin: `boundary` the nearer end of the rule's region, `value` the
    distance of our estimate from it, positive on the holding side, `halfwidths` that distance in units of our
    interval's half-width on the side facing the boundary (+-inf for a point value: deterministic). A claim holds at
    halfwidths >= 1 and fails at <= -1 (an interval must clear the margin whole); between, it is undecided."""

    boundary: float
    value: float
    halfwidths: float

    def __str__(self) -> str:
        at = f"margin {format_value(self.boundary)}"
        if math.isinf(self.halfwidths):
            side = "inside" if self.value >= 0 else "outside"
            return f"{at}: {format_value(abs(self.value))} {side} it (a point: deterministic)"
        return f"{at}: {self.halfwidths:+.1f} half-widths"

    def to_dict(self) -> dict[str, Any]:
        return {
            "boundary": jsonable(self.boundary),
            "value": jsonable(self.value),
            "halfwidths": jsonable(self.halfwidths),
        }


def margin_distance(rule: Rule, ours: Any, paper: Any) -> Distance | None:
    """The distance of `ours` (a point or an Interval) from the nearer finite end of `rule`'s region; None where the
    rule has no region (qualitative), ours is not a finite number or interval, or the region has no finite end."""
    if rule.region is None:
        return None
    b = _bounds(ours)
    try:
        region = rule.region(paper)
    except (TypeError, ValueError, ArithmeticError):
        return None
    if b is None or region is None:
        return None
    est = ours.estimate if isinstance(ours, Interval) else float(ours)
    lo, hi = b
    best: Distance | None = None
    for end, sign in ((region[0], 1.0), (region[1], -1.0)):
        if not math.isfinite(end):
            continue
        value = sign * (est - end)  # positive: on the holding side of this end
        # the half-width facing this end: towards a lower end the interval's low side, towards an upper end its high
        facing = (est - lo) if (end < est or (end == est and sign > 0)) else (hi - est)
        halfwidths = value / facing if facing > 0 else math.copysign(math.inf, value if value else 1.0)
        d = Distance(float(end), float(value), float(halfwidths))
        if (
            best is None
            or d.halfwidths < best.halfwidths
            or (math.isinf(d.halfwidths) and math.isinf(best.halfwidths) and d.value < best.value)
        ):
            best = d
    return best


def sample_to_decide(claim: Claim) -> str:
    """What sample would decide an undecided claim at the spread observed: the smallest n' whose interval, with the
    spread per unit the interval shows now, clears the margin if the estimate stays where it is. The half-width
    scales as t(confidence, n - 1) / sqrt(n) (a t interval; for a bootstrap over many units t is the normal
    quantile already), so n' is the smallest n' with t(n' - 1) / sqrt(n') <= t(n - 1) / sqrt(n) x |distance| /
    half-width, t at the confidence of the interval shown (`ours`); or why no sample can."""
    if claim.undecidable:
        return f"not decidable by any sample of this design: {claim.undecidable}"
    if undefined_interval(claim.ours):
        return "the interval is undefined (see the detail): no sample size can be read from it"
    d = claim.distance
    if d is None:
        return "the rule has no margin to measure a distance from"
    if not claim.n:
        return f"no sample size declared; the estimate sits {d}"
    if d.value == 0:
        return f"the estimate sits on the margin ({format_value(d.boundary)}): no sample decides it at this estimate"
    from scipy import stats

    # the confidence of the interval shown: a claim decided at two confidences (a fails branch at a Bonferroni
    # confidence beside a 95% holds branch) shows the interval of the branch its estimate points to
    confidence = claim.ours.confidence if isinstance(claim.ours, Interval) else claim.confidence

    def width(n: int) -> float:  # the half-width per unit spread at n units
        return stats.t.ppf(0.5 + confidence / 2, max(n - 1, 1)) / math.sqrt(n)

    target = width(claim.n) * abs(d.halfwidths)
    need = claim.n
    while width(need) > target:  # steps of 1, then of 5%: "about" n' (at most 5% over)
        if need > 10**9:
            return f"more than 10^9 {claim.n_of or 'units'}: the estimate sits {d}"
        need += max(1, need // 20)
    noun = claim.n_of or "units"
    return (
        f"about {need} {noun} at the observed spread (now {claim.n}; the estimate sits {abs(d.halfwidths):.2f} "
        f"half-widths from the margin {format_value(d.boundary)}; t interval scaling)"
    )


FACT_KINDS = ("analytic", "calibration", "construction")


@dataclass(frozen=True)
class Fact:
    """A row that is not a claim: a quantity that is arithmetic on shapes or config (analytic), a setting chosen so
    a paper figure is reached (calibration), or a statement true by construction (construction). Reported, never
    counted as holding."""

    id: str
    statement: str
    value: Value | None
    kind: str
    detail: str = ""
    paper: Value | None = None

    def __post_init__(self) -> None:
        check_id("fact id", self.id)
        if self.kind not in FACT_KINDS:
            raise ValueError(f"fact {self.id!r}: kind {self.kind!r} is not one of {', '.join(FACT_KINDS)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "statement": self.statement,
            "kind": self.kind,
            "value": jsonable(self.value),
            "paper": jsonable(self.paper),
            "detail": self.detail,
        }


@dataclass
class Decided:
    """What `decide(cfg, results)` returns: the declared claims with our figures, the facts, and the estimates (key
    figures of the tables, by name) that `render` shows and `make compare` compares."""

    claims: list[Claim]
    facts: list[Fact] = field(default_factory=list)
    estimates: dict[str, Value] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.estimates:
            check_id("estimate name", name.replace("/", "."))


def shown_verdict(claim: Claim) -> str:
    """The verdict as a report shows it: 'unverified (rule: holds)' where the paper's figure is unverified."""
    if claim.verdict is Verdict.UNVERIFIED:
        return f"unverified (rule: {claim.rule_verdict.value})"
    return claim.verdict.value


def count_verdicts(claims: list[Claim]) -> dict[str, int]:
    """{'holds': n, 'fails': n, 'undecided': n, 'not measured': n, 'unverified': n}."""
    out = {v.value: 0 for v in Verdict}
    for c in claims:
        out[c.verdict.value] += 1
    return out


def jsonable(v: Any) -> Any:
    """`v` as a JSON value for claims.json and report tables: Intervals as their dicts, numpy scalars as numbers,
    non-finite floats as their text, containers element by element, anything else as its str."""
    if isinstance(v, Interval):
        return v.to_dict()
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # JSON has no NaN/Inf
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    return str(v)

"""Shared numerics and experiment plumbing, independent of any paper.

Importing `core` is cheap: subpackages (and JAX) load when they are used.
"""

from core.report import (
    Claim,
    Fact,
    Figure,
    Interval,
    Report,
    Rule,
    Table,
    Verdict,
    at_least,
    at_most,
    equivalent,
    interval_above,
    interval_below,
    is_true,
    printed,
    within_abs,
    within_rel,
)

__all__ = [
    "Claim",
    "Fact",
    "Figure",
    "Interval",
    "Report",
    "Rule",
    "Table",
    "Verdict",
    "at_least",
    "at_most",
    "equivalent",
    "interval_above",
    "interval_below",
    "is_true",
    "printed",
    "within_abs",
    "within_rel",
]

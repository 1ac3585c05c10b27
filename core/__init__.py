"""Shared numerics and experiment plumbing, independent of any paper.

Importing `core` is cheap: subpackages (and JAX) load when they are used.
"""

from core.report import (
    Claim,
    Figure,
    Interval,
    Report,
    Rule,
    Table,
    at_least,
    at_most,
    interval_above,
    interval_below,
    is_true,
    within_abs,
    within_rel,
)

__all__ = [
    "Claim",
    "Figure",
    "Interval",
    "Report",
    "Rule",
    "Table",
    "at_least",
    "at_most",
    "interval_above",
    "interval_below",
    "is_true",
    "within_abs",
    "within_rel",
]

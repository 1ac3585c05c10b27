"""Parametrizations: how a model's parameters are initialised, multiplied and trained, one module each.

| module     | class        | what it is                                                                   |
|------------|--------------|------------------------------------------------------------------------------|
| standard   | `Standard`   | GPT-2's initialisation (std 0.02), plain ops: the regular model               |
| unit       | `UnitScaled` | unit scaling (Blake et al. 2023): unit init, every op scaled to unit variance |
| mup        | `MuP`        | muP relative to a base width; `MuP(1.0)` is the u-muP paper's SP baseline     |
| umup       | `UMuP`       | u-muP (Blake et al. 2024): muP in unit-scaled form, hyperparameters `mults`   |

Each states its abc table (A multiplier, B init std, C Adam learning-rate scale per parameter kind) in its docstring
and its `abc` method; the ops it changes are its methods (core.nn.parametrization.base lists them). Number formats
are a separate concern (core.nn.formats). `by_name` maps the names configs use to instances; `lr_scales` gives
every parameter its C, reading the kinds the model tagged where it created them (core.nn.transformer.param_kinds).
"""

from __future__ import annotations

from typing import Any

import jax

from core.nn.parametrization.base import ABC, KINDS, Parametrization, masked_softmax
from core.nn.parametrization.mup import MuP
from core.nn.parametrization.standard import Standard
from core.nn.parametrization.umup import UMuP
from core.nn.parametrization.unit import UnitScaled
from core.unit_scaling.umup import Mults

NAMES = ("regular", "unit", "sp", "mup", "umup")
DEFAULT_MULTS = Mults()


def by_name(
    name: str, *, constraint: str | None = "gmean", width_ratio: float = 1.0, mults: Mults = DEFAULT_MULTS
) -> Parametrization:
    """The parametrization a config names: "regular" (Standard), "unit" (UnitScaled with `constraint`), "sp"
    (MuP at its base width, whatever `width_ratio` says), "mup" (MuP at `width_ratio`) or "umup" (UMuP with
    `mults`)."""
    if name == "regular":
        return Standard()
    if name == "unit":
        return UnitScaled(constraint)
    if name == "sp":
        return MuP(1.0)
    if name == "mup":
        return MuP(width_ratio)
    if name == "umup":
        return UMuP(mults)
    raise ValueError(f"unknown parametrization {name!r}: choose one of {', '.join(NAMES)}")


def lr_scales(params: Any, kinds: Any, parametrization: Parametrization) -> Any:
    """The tree of C (Adam learning-rate scales) for a parameter tree; `kinds` has its structure, each leaf a pair
    (kind, depth of the residual stack holding it or None), as core.nn.transformer.param_kinds returns it."""
    return jax.tree_util.tree_map(
        lambda p, k: parametrization.lr_scale(k[0], tuple(p.shape), depth=k[1]),
        params,
        kinds,
        is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str),
    )


__all__ = [
    "ABC",
    "KINDS",
    "NAMES",
    "MuP",
    "Parametrization",
    "Standard",
    "UMuP",
    "UnitScaled",
    "by_name",
    "lr_scales",
    "masked_softmax",
]

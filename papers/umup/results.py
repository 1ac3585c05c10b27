"""What a u-muP run computes (the Results `run` returns and `decide` and `render` read): every training group's
per-run validation loss, one run per (learning rate, seed), for each learning-rate sweep (parametrization, width),
each FP8 group and each one-at-a-time hyperparameter group. The optima, their intervals and every other statistic
are decided from these in papers/umup/decide.py. No JAX.

`mean_curve` and `best_grid_lr` read a group's seed-mean loss against the learning rate: the run uses the best grid
point to choose where the FP8 and hyperparameter groups train, the decision and the report read the same curves."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass
class GroupResult:
    """One training group (papers/umup/train.Group): its runs' learning rates, seeds and losses, in run order."""

    group: str
    parametrization: str
    width: int
    fp8: bool
    mults: dict[str, float]
    lr: list[float]  # per run
    seed: list[int]  # per run
    valid_loss: list[float]  # per run, nats per character (NaN: diverged)
    train_loss: list[float]  # per run, the mean over the last logged interval
    seconds: float
    params: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def at_lr(self, lr: float | None = None) -> dict[int, float]:
        """seed -> valid loss of the runs at learning rate `lr` (default: the group's only one)."""
        if lr is None:
            if len(set(self.lr)) != 1:
                raise ValueError(f"{self.group}: {len(set(self.lr))} learning rates; name the one to read")
            lr = self.lr[0]
        return {s: v for s, v, r in zip(self.seed, self.valid_loss, self.lr, strict=True) if r == lr}


@dataclass
class Results:
    """Every group the run trained, keyed as the decision reads them."""

    sweeps: dict[tuple[str, int], GroupResult]  # (parametrization, width): the FP32 learning-rate sweep
    fp8: dict[str, GroupResult]  # parametrization: plain FP8 casts at the widest width, the sweep's best grid rate
    mult_sweeps: dict[tuple[str, float], GroupResult]  # (hyperparameter, value): u-muP at the narrowest width


def mean_curve(result: GroupResult, seeds: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(log2 lr, mean valid loss over `seeds`, repeats counted (a resample); default: every seed once) sorted by
    lr; a diverged run makes its lr's mean +inf."""
    by_lr: dict[float, dict[int, float]] = {}
    for lr, seed, loss in zip(result.lr, result.seed, result.valid_loss, strict=True):
        by_lr.setdefault(lr, {})[seed] = loss if math.isfinite(loss) else math.inf
    lrs = sorted(by_lr)
    return np.log2(lrs), np.asarray([np.mean([by_lr[lr][s] for s in seeds or by_lr[lr]]) for lr in lrs])


def best_grid_lr(result: GroupResult, seeds: list[int] | None = None) -> float:
    """The grid learning rate with the lowest seed-mean validation loss, as trained (so runs at it pair up exactly
    with `GroupResult.at_lr`)."""
    return sorted(set(result.lr))[int(np.argmin(mean_curve(result, seeds)[1]))]

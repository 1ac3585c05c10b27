"""The u-muP run: every parametrization's learning-rate sweep at every width, then the FP8 groups at the widest width
and u-muP's one-at-a-time hyperparameter groups at the narrowest, each at the best grid learning rate of its FP32
sweep. Everything the claims, tables and figures read is in the Results it returns (papers/umup/results.py): each
run's validation loss by (learning rate, seed). Each finished group is kept in the run's memo store, so a resumed
run reuses it (papers/umup/train.kept_group, core.memo)."""

from __future__ import annotations

from core.context import RunContext
from core.data.shakespeare import load_shakespeare
from core.unit_scaling.umup import Mults
from papers.umup.config import grid
from papers.umup.results import GroupResult, Results, best_grid_lr
from papers.umup.train import Group, kept_group


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.umup
    corpus = load_shakespeare()
    seeds = tuple(int(s) for s in c.seeds)
    widths = sorted(int(w) for w in c.widths)

    def train(group: Group) -> GroupResult:
        return kept_group(c, corpus, group, ctx)

    sweeps = {(p, w): train(Group(p, w, grid(c, p, w), seeds)) for p in c.parametrizations for w in widths}

    def best_lr(p: str, w: int) -> float:
        return best_grid_lr(sweeps[(p, w)])

    fp8 = {
        p: train(Group(p, widths[-1], (best_lr(p, widths[-1]),), seeds, fp8=True, fp8_head=c.fp8_head))
        for p in c.fp8_parametrizations
    }
    proxy = widths[0]
    mult_sweeps = {
        (name, float(v)): train(Group("umup", proxy, (best_lr("umup", proxy),), seeds, Mults(**{name: float(v)})))
        for name in c.mults
        for v in c.mult_values
    }
    return Results(sweeps=sweeps, fp8=fp8, mult_sweeps=mult_sweeps)

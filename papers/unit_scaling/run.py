"""The unit-scaling run: the per-tensor scales and the FP8 gradient error at initialisation, then every arm of the
config trained (all seeds at once, each arm resumable from its checkpoints). Everything the claims, tables and
figures read is in the Results it returns (papers/unit_scaling/results.py)."""

from __future__ import annotations

from core.context import RunContext
from core.data.shakespeare import load_shakespeare
from papers.unit_scaling.arms import ARMS
from papers.unit_scaling.results import Corpus, FormatRange, Results, Sweep, SweepRow
from papers.unit_scaling.sweep import load as load_sweep
from papers.unit_scaling.train import gradient_errors, init_scales, train_arm

TRACKED_FORMATS = ("e4m3", "e5m2")  # the FP8 formats the scale tracks are held against


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.unit_scaling
    corpus = load_shakespeare()
    scales = init_scales(c, corpus)
    errors = gradient_errors(c, corpus)
    arms = {}
    for name in c.arms:
        arms[name] = train_arm(
            c, corpus, ARMS[name], float(c.lr[name]), ctx.checkpoint_path(name), ctx.resume, name in c.track_arms
        )
    return Results(
        init_scales=scales,
        gradient_errors=errors,
        arms=arms,
        corpus=Corpus(
            vocab_size=int(corpus.vocab_size),
            train=len(corpus.train),
            valid=len(corpus.valid),
            test=len(corpus.test),
            test_plays=list(corpus.plays["test"]),
        ),
        formats={name: FormatRange.of(name) for name in TRACKED_FORMATS},
        sweep=shipped_sweep(),
    )


def shipped_sweep() -> Sweep | None:
    """The learning-rate sweep shipped beside the code (lr_sweep.json), or None where there is none."""
    data = load_sweep()
    if not data:
        return None
    return Sweep(
        rows=[SweepRow(**row) for row in data["rows"]],
        best={arm: float(lr) for arm, lr in data["best"].items()},
    )

"""The packing run: pack the published histograms, then (when it trains) train padded and packed, check
cross-contamination and time the interleaved rounds. Everything the claims, tables and figures read is in the
Results it returns (papers/packing/results.py)."""

from __future__ import annotations

from core.context import RunContext
from core.progress import progress
from papers.packing.results import Results, Training
from papers.packing.tables import packing_table


def run(cfg, ctx: RunContext) -> Results:
    c = cfg.packing
    t = c.table
    cells = packing_table(
        list(t.histograms), list(t.methods), list(t.max_sequences_per_pack), t.nnlshp_max_depth, progress=progress
    )
    if not c.train.enabled:
        return Results(cells)
    from papers.packing import train

    corpus = train.load_corpus(c.train.max_len, c.train.valid_sequences, c.train.max_sequences_per_pack)
    runs = {}
    for mode in ("padded", "packed"):
        params, runs[mode] = train.train(c.train, corpus, mode, int(cfg.seed), ctx.checkpoint_path(mode), ctx.resume)
        if mode == "padded":
            check = train.contamination_check(c.train, corpus, params, int(cfg.seed), c.train.contamination_sequences)
    rounds = train.throughput_rounds(c.train, corpus, int(cfg.seed))
    training = Training(
        runs=runs,
        contamination=check,
        rounds=rounds,
        train_lengths=[int(s.size) for s in corpus.train],
        truncated=float(corpus.truncated),
        speedup=float(corpus.packing.speedup),
    )
    return Results(cells, training)

"""Efficient Sequence Packing without Cross-contamination (Krell et al. 2021, arXiv 2107.02027).

Three parts: (1) the paper's table, SPFHP / LPFHP / NNLSHP on the published Wikipedia and SQuAD length histograms,
beside the paper's efficiency, speed-up and run times (core.packing); (2) the cross-contamination check: a packed
BERT-style encoder (core.nn.encoder) gives every sequence the same outputs and loss as when it runs alone;
(3) padded vs packed masked-LM training on Shakespeare's speeches: validation loss per sequence seen, and the
throughput in real tokens/s timed in interleaved rounds of padded and packed steps (with a padded control at the
packed run's rows, which splits the gain into how full the rows are and what a row costs).

The paper contract (core.paper): `run` (papers/packing/run.py) packs the histograms, trains and times, and returns
the Results (results.py); `decide` (claims.py) decides the claims declared there from the Results alone; `render`
(report.py) makes the tables and figures. `Config` (config.py) is the `packing` config section; `PUBLISHED`
(tables.py) the paper's table; the packing algorithms themselves are core.packing.
"""

from core.paper import Paper

PAPER = Paper(
    name="packing",
    title="Efficient sequence packing without cross-contamination",
    config="papers.packing.config:Config",
    claims="papers.packing.claims:claims",
    results="papers.packing.results:Results",
    run="papers.packing.run:run",
    ipu_steps="papers.packing.train:ipu_steps",
    decide="papers.packing.claims:decide",
    render="papers.packing.report:render",
    ledger="papers.packing.ledger",
)
__getattr__ = PAPER.exports  # papers.packing.Config and .Results, loaded on first use

"""BESS: Balanced Entity Sampling and Sharing for large-scale knowledge-graph completion (Cattaneo et al. 2022,
arXiv 2211.12281).

papers.bess.kg loads knowledge graphs (Nations, Kinships, UMLS vendored from the pykeen wheel; users' TSV triples),
papers.bess.scoring holds the scoring functions, papers.bess.ranking the filtered ranks, their metrics and the
random-ranker floors (numpy only), papers.bess.losses the losses, papers.bess.bess the sharded embedding-moving step
(shard_map + all_to_all), papers.bess.train training and evaluation, papers.bess.scaling the device-scaling
measurement.

The paper contract (core.paper): `run` (papers/bess/run.py) trains every (graph, model) from each training seed,
ranks the test triples, builds the ensembles, checks BESS against the single-device computation and measures
scaling from the compiled programs, and returns the Results (results.py: per-query test ranks, metrics per model
and seed, the equivalence errors, byte counts and timings); `decide` (claims.py) decides the claims declared there
from the Results alone (seed t intervals, paired bootstraps over test triples); `render` (report.py) makes the
tables and figures. `Config` (config.py) is the `bess` config section; the literature's figures are literature.py.

Library entry points: `papers.bess.kg.load_builtin` / `load_triples` (a knowledge graph), `papers.bess.train.train_kge`
and `evaluate` (one model, filtered ranking metrics), `papers.bess.bess.bess_loss_fn` (BESS's sharded step).
"""

from core.paper import Paper

PAPER = Paper(
    name="bess",
    title="BESS: balanced entity sampling and sharing for knowledge-graph completion",
    config="papers.bess.config:Config",
    claims="papers.bess.claims:claims",
    results="papers.bess.results:Results",
    run="papers.bess.run:run",
    ipu_steps="papers.bess.run:ipu_steps",
    decide="papers.bess.claims:decide",
    render="papers.bess.report:render",
    ledger="papers.bess.ledger",
)
__getattr__ = PAPER.exports  # papers.bess.Config and .Results, loaded on first use

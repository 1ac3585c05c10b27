"""GPS++: Reviving the Art of Message Passing for Molecular Property Prediction (Masters et al. 2022,
arXiv 2212.02229), with QM9 (qm9pack) standing in for PCQM4Mv2.

papers.gps.features featurises molecules (RDKit) and papers.gps.cache keeps featurised QM9 in the run's memo store
(core.memo: keyed by the code that featurises, not the code that trains), papers.gps.model is the GPS++ network in
flax, papers.gps.batching packs graphs into static-shape batches, papers.gps.train trains an arm's seeds together,
data-parallel.

The paper contract (core.paper): `run` (papers/gps/run.py) featurises a random split of QM9 and trains full GPS++
and its ablations (MPNN only, full trained unmasked, no 3D) from the same paired training seeds, and returns the
Results (results.py): per arm and seed the validation and training MAE, the validation curves, the packing of the
training batches and the timings, and the presets' parameter counts. `decide` (claims.py) decides the claims
declared there from the Results alone (t intervals over the per-seed paired gaps) with the 44M calibration fact and
the estimates; `render` (report.py) makes the tables, the figure and the notes. `Config` (config.py) is the `gps`
config section, with the arms of the ablation (ARMS); the paper's printed figures are in published.py.
"""

from core.paper import Paper

PAPER = Paper(
    name="gps",
    title="GPS++ on QM9: hybrid MPNN/transformer and its ablations",
    config="papers.gps.config:Config",
    claims="papers.gps.claims:claims",
    results="papers.gps.results:Results",
    run="papers.gps.run:run",
    ipu_steps="papers.gps.run:ipu_steps",
    decide="papers.gps.claims:decide",
    render="papers.gps.report:render",
    ledger="papers.gps.ledger",
)
__getattr__ = PAPER.exports  # papers.gps.Config and .Results, loaded on first use

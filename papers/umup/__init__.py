"""u-muP: The Unit-Scaled Maximal Update Parametrization (Blake, Eichenberg, Dean et al. 2024, arXiv 2407.17465).

The paper's central experiments at CPU scale on the character LM (Shakespeare's plays): learning-rate sweeps at
several widths for the standard parametrization (SP), muP and u-muP (does the optimal learning rate move with
width?); one-dimensional sweeps of u-muP's other hyperparameters at the proxy width (are their defaults near the
optimum?); and u-muP and SP trained with plain FP8 casts (E4M3 forward, E5M2 gradients, no scaling) beside their
FP32 runs. The parametrizations are core.unit_scaling.umup, the model core.nn.TransformerLM.

The paper contract (core.paper): `run` (papers/umup/run.py) trains every group (papers/umup/train.py: one
parametrization, width and number format at several learning rates and seeds, vmapped, each finished group kept for
a resumed run) and returns the Results (results.py): every run's validation loss by (learning rate, seed). `decide`
(decide.py) decides the claims declared in claims.py, by the statistics there (the optimum's quadratic fit, the
percentile intervals over seed resamples, the paired gaps), and makes the estimates the tables show; `render`
(report.py) makes the tables and figures from the Results and those estimates. `Config` (config.py) is the `umup`
config section; design.py holds the labels and the transfer margin that the claims and the report share.
"""

from core.paper import Paper

PAPER = Paper(
    name="umup",
    title="u-muP: The Unit-Scaled Maximal Update Parametrization",
    config="papers.umup.config:Config",
    claims="papers.umup.claims:claims",
    results="papers.umup.results:Results",
    run="papers.umup.run:run",
    ipu_steps="papers.umup.train:ipu_steps",
    decide="papers.umup.decide:decide",
    render="papers.umup.report:render",
    ledger="papers.umup.ledger",
)
__getattr__ = PAPER.exports  # papers.umup.Config and .Results, loaded on first use

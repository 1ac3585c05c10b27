"""Unit Scaling: Out-of-the-Box Low-Precision Training (Blake, Orr & Luschi, ICML 2023), experiment 1.

A character-level transformer LM trained in every arm of the paper's table (FP32, FP16 with and without loss
scaling, FP8 E4M3/E5M2 with plain casts; regular and unit-scaled) on Shakespeare's plays (the offline stand-in
for WikiText-103), plus the per-tensor scale analysis at initialisation.

The paper contract (core.paper): `run` (papers/unit_scaling/run.py) measures the per-tensor scales and the FP8
gradient error at initialisation and trains every arm of the config over its seeds (papers/unit_scaling/train.py,
through core.charlm), and returns the Results (results.py), with the learning-rate sweep shipped beside the code
(lr_sweep.json, collected by sweep.py); `decide` (claims.py) decides the claims declared there from the Results
alone; `render` (report.py, with core.scales' figures of the tensor scales) makes the tables and figures. `Config`
(config.py) is the `unit_scaling` config section (its `fp8` section is core.fp8casts.FP8Casts); the arms, their
labels and the paper's figures for them are arms.py (`ARMS`).
"""

from core.paper import Paper

PAPER = Paper(
    name="unit_scaling",
    title="Unit Scaling: out-of-the-box low-precision training (character LM)",
    config="papers.unit_scaling.config:Config",
    claims="papers.unit_scaling.claims:claims",
    results="papers.unit_scaling.results:Results",
    run="papers.unit_scaling.run:run",
    ipu_steps="papers.unit_scaling.train:ipu_steps",
    decide="papers.unit_scaling.claims:decide",
    render="papers.unit_scaling.report:render",
    ledger="papers.unit_scaling.ledger",
)
__getattr__ = PAPER.exports  # papers.unit_scaling.Config and .Results, loaded on first use

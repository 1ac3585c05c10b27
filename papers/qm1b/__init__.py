"""Generating QM1B with PySCFIPU (Mathiasen et al., NeurIPS 2023 Datasets & Benchmarks, arXiv 2311.01135).

Three parts: (1) papers.qm1b.dft, restricted Kohn-Sham B3LYP in JAX (PySCF on the host for integrals and grids,
the SCF under jit, batched over conformers), checked against PySCF; (2) papers.qm1b.generate, the sharded,
resumable dataset generator writing QM1B's columns to Parquet; (3) papers.qm1b.schnet, SchNet trained on growing
subsets of the generated gaps, the paper's scaling figure at CPU scale.

The paper contract (core.paper): `run` (papers/qm1b/run.py) labels the dataset (every shard, resumable, kept under
output_root/qm1b/data keyed by the labelling code) and the drop sample in QM1B's regime, validates random rows
against converged PySCF and trains SchNet over the sizes and seeds, and returns the Results (results.py): the
datasets' counts, the validated rows' errors and the per-seed MAEs at every size. `decide` (claims.py) decides the
claims declared there from the Results alone; `render` (report.py) makes the tables and figures. `Config`
(config.py) is the `qm1b` config section; papers.qm1b.checks holds what is checked before any labelling, without
JAX. A `qm1b.stage=generate` job labels one shard and declares no claims.

The DFT labeller is a library: `papers.qm1b.dft.run_dft` (one conformer) and `run_dft_batch` (many, one compiled
SCF), `papers.qm1b.dft.pipeline.Labeller` (host work overlapped with the SCF), `papers.qm1b.label` (your own
molecules to Parquet: `python -m papers.qm1b.label`, `make label`).
"""

from core.paper import Paper

PAPER = Paper(
    name="qm1b",
    title="QM1B: a JAX DFT dataset generator and SchNet scaling",
    config="papers.qm1b.config:Config",
    claims="papers.qm1b.claims:claims",
    results="papers.qm1b.results:Results",
    run="papers.qm1b.run:run",
    ipu_steps="papers.qm1b.dft:ipu_steps",
    decide="papers.qm1b.claims:decide",
    render="papers.qm1b.report:render",
    ledger="papers.qm1b.ledger",
)
__getattr__ = PAPER.exports  # papers.qm1b.Config and .Results, loaded on first use

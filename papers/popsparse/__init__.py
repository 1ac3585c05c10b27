"""PopSparse: Accelerated block sparse matrix multiplication on IPU (Li et al. 2023, arXiv 2303.16999).

Two parts: (1) the paper's benchmark on the simulated IPU (ipu_model): static and dynamic block-sparse matmuls as IPU
programs (papers.popsparse.ipu_static, ipu_dynamic) against the simulated dense matmul, best over the batch n, beside
the paper's table and figures; (2) the CPU: core.sparsity's static and dynamic matmuls against dense `jnp.matmul`,
scipy's `bsr_array` and JAX's experimental BCSR, over block sizes and densities (papers.popsparse.cpu).

The paper contract (core.paper): `run` (run.py) simulates the IPU grid and the FP16 static crossover sweep over the
pattern seeds (papers.popsparse.ipu; each simulated cell is kept in the run's memo store, core.memo, so a killed run
resumes) and times the CPU sweep in interleaved rounds, and returns the Results (results.py: per row the speed-up
over dense of every pattern seed with the simulated cells behind it, per CPU cell every method's timing rounds);
`decide` (claims.py) decides the claims declared there, the facts and the estimates the tables show, from the Results
alone and without JAX; `render` (report.py, figures.py) makes the tables and figures. `Config` (config.py) is the
`popsparse` config section. The paper's numbers (its printed table, its figures as read by digitise.py) are in
paper.py, which only the decision and the report read; sweep.py holds what both need (selecting rows, the
crossover's interpolation, the estimates' names). The block-sparse matmuls themselves are core.sparsity.
"""

from core.paper import Paper

PAPER = Paper(
    name="popsparse",
    title="PopSparse: Accelerated block sparse matrix multiplication on IPU",
    config="papers.popsparse.config:Config",
    claims="papers.popsparse.claims:claims",
    results="papers.popsparse.results:Results",
    run="papers.popsparse.run:run",
    decide="papers.popsparse.claims:decide",
    render="papers.popsparse.report:render",
    ledger="papers.popsparse.ledger",
    decision_data=("data",),  # the paper's figures and our readings of them: only the claims and report read them
)
__getattr__ = PAPER.exports  # papers.popsparse.Config and .Results, loaded on first use

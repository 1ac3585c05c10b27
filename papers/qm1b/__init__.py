"""Generating QM1B with PySCFIPU (Mathiasen et al., NeurIPS 2023 Datasets & Benchmarks, arXiv 2311.01135).

Three parts: (1) papers.qm1b.dft, restricted Kohn-Sham B3LYP in JAX (PySCF on the host for integrals and grids,
the SCF under jit, batched over conformers), checked against PySCF; (2) papers.qm1b.generate, the sharded,
resumable dataset generator writing QM1B's columns to Parquet; (3) papers.qm1b.schnet, SchNet trained on growing
subsets of the generated gaps, the paper's scaling figure at CPU scale. `reproduce` (papers.qm1b.experiment) runs
all three; `claims` (papers.qm1b.claims) declares what it checks.

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `qm1b` config section). The DFT
labeller is a library: `papers.qm1b.dft.run_dft` (one conformer) and `run_dft_batch` (many, one compiled SCF),
`papers.qm1b.dft.pipeline.Labeller` (host work overlapped with the SCF), `papers.qm1b.label` (your own molecules to
Parquet: `python -m papers.qm1b.label`, `make label`).
"""

from papers.qm1b.claims import claims
from papers.qm1b.experiment import Config, reproduce

__all__ = ["Config", "claims", "reproduce"]

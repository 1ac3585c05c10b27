"""GPS++: Reviving the Art of Message Passing for Molecular Property Prediction (Masters et al. 2022,
arXiv 2212.02229), with QM9 (qm9pack) standing in for PCQM4Mv2.

papers.gps.features featurises molecules (RDKit), papers.gps.model is the GPS++ network in flax,
papers.gps.batching packs graphs into static-shape batches, papers.gps.train trains it data-parallel.

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `gps` config section);
`papers.gps.features.featurise` (a SMILES to a graph), `papers.gps.model.GPSPlusPlus`, `papers.gps.train.train_gps`.
"""

from papers.gps.claims import claims
from papers.gps.experiment import Config, reproduce

__all__ = ["Config", "claims", "reproduce"]

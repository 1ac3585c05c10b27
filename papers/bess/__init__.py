"""BESS: Balanced Entity Sampling and Sharing for large-scale knowledge-graph completion (Cattaneo et al. 2022,
arXiv 2211.12281).

papers.bess.kg loads knowledge graphs (Nations, Kinships, UMLS vendored from the pykeen wheel; users' TSV triples),
papers.bess.scoring holds the scoring functions and filtered ranking metrics, papers.bess.losses the losses,
papers.bess.bess the sharded embedding-moving step (shard_map + all_to_all), papers.bess.train training and
evaluation, papers.bess.scaling the device-scaling measurement.

Entry points: `reproduce(cfg, run)` and `claims(cfg)` (the runner's), `Config` (the `bess` config section);
`papers.bess.kg.load_builtin` / `load_triples` (a knowledge graph), `papers.bess.train.train_kge` and `evaluate` (one
model, filtered ranking metrics), `papers.bess.bess.bess_loss_fn` (BESS's sharded step).
"""

from papers.bess.claims import claims
from papers.bess.experiment import Config, reproduce

__all__ = ["Config", "claims", "reproduce"]

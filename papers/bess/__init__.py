"""BESS: Balanced Entity Sampling and Sharing for large-scale knowledge-graph completion (Cattaneo et al. 2022,
arXiv 2211.12281).

So far: papers.bess.kg (Nations, Kinships, UMLS vendored from the pykeen wheel; a loader for users' TSV triples)
and papers.bess.scoring (TransE, DistMult, ComplEx, RotatE; filtered ranks with ties averaged, MRR, hits@k).
"""

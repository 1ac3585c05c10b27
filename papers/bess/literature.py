"""The figures the BESS claims are held against and the report shows beside ours: the literature's filtered test MRR
(papers/bess/REFERENCES.md, L1-L8), which of them could not be checked in a primary table, the test splits' sizes
and the scorers' names. Plain constants, no JAX: the declarations (claims.py) and the report (report.py) both read
them, so that neither imports the other."""

from __future__ import annotations

# Literature filtered test MRR: the strongest value found for each (graph, model); sources, tables and pages in
# papers/bess/REFERENCES.md (entries L1-L8)
LITERATURE_PRINTED = {  # as the sources print them: a printed 0.640 is every value in [0.6395, 0.6405)
    ("nations", "transe"): "0.4813",  # L1
    ("nations", "distmult"): "0.7131",  # L2
    ("nations", "complex"): "0.6677",  # L3
    ("nations", "rotate"): "0.7155",  # L4
    ("kinships", "distmult"): "0.640",  # L5
    ("kinships", "complex"): "0.823",  # L6
    ("umls", "distmult"): "0.878",  # L7
    ("umls", "complex"): "0.838",  # L8
}
LITERATURE_MRR = {key: float(text) for key, text in LITERATURE_PRINTED.items()}
LITERATURE_LABEL = {key: f"L{i}" for i, key in enumerate(LITERATURE_MRR, 1)}
# Why a literature figure could not be checked in a primary table (REFERENCES.md L5-L8); a claim against one has
# the verdict "unverified", its rule's own verdict shown beside
UNVERIFIED = {
    ("kinships", "distmult"): "no source located: the value of the project's earlier notes (refs/PAPERS.md); the "
    "only published figure found, 0.516, is a secondary compilation's row (L6)",
    ("kinships", "complex"): "a secondary compilation's ComplEx-N3 row (L6), attributed there to Lacroix et al. "
    "2018; no primary table holding it was found in the stored texts",
    ("umls", "distmult"): "a secondary compilation's row (L6) attributed to Yang et al. 2015, which does not "
    "evaluate UMLS; the row's hits@1 (0.916) exceeds its MRR (0.878), impossible for one evaluation",
    ("umls", "complex"): "a secondary compilation's ComplEx-N3 row (L6), attributed there to Lacroix et al. 2018; "
    "no primary table holding it was found in the stored texts",
}
# Where each figure comes from, as core.claims.Claim.figure_source labels it (issue 62): L1-L4 were read in Pu et
# al.'s own table (a primary table, not the BESS paper's), L6-L8 are a compilation's rows, L5 has no source
_PU = (
    "paper: Pu, Zhang, Feng & Yang 2022 (REFERENCES.md {label}; a literature figure, not the BESS paper's), its table "
    "'Experimental results for Nations', read in issue 23 (table number and page not recorded; not re-readable "
    "since: the stored copies hold its opening only)"
)
_COMPILATION = (
    "secondary: a compilation, github.com/irokin/Link-Prediction-Experiment-Results (README, 'Filter Mean Reciprocal "
    "Rank' table), row {row} (REFERENCES.md {label})"
)
LITERATURE_SOURCE = {
    ("nations", "transe"): _PU.format(label="L1"),
    ("nations", "distmult"): _PU.format(label="L2"),
    ("nations", "complex"): _PU.format(label="L3"),
    ("nations", "rotate"): _PU.format(label="L4"),
    ("kinships", "distmult"): "none: no source located, the value of the project's earlier notes (REFERENCES.md L5); "
    "the one published figure found, 0.516, is a compilation's row",
    ("kinships", "complex"): _COMPILATION.format(row="ComplEx-N3, attributed to Lacroix et al. 2018", label="L6"),
    ("umls", "distmult"): _COMPILATION.format(
        row="DistMult, attributed to Yang et al. 2015, which does not evaluate UMLS", label="L7"
    ),
    ("umls", "complex"): _COMPILATION.format(row="ComplEx-N3, attributed to Lacroix et al. 2018", label="L8"),
}
TEST_TRIPLES = {"nations": 201, "kinships": 1074, "umls": 661}  # REFERENCES.md D1-D3
NAMES = {"transe": "TransE", "distmult": "DistMult", "complex": "ComplEx", "rotate": "RotatE"}

"""The paper's printed figures and the literature's that both the claims (papers/gps/claims.py) and the report
(papers/gps/report.py) read, and the arms' names as the report prints them. Every figure is an entry of
papers/gps/REFERENCES.md, cited by its [name]. No JAX."""

from __future__ import annotations

PAPER_PARAMETERS = {  # [parameters]: GPS++ 44M parameters per part, Table 1 of arXiv 2212.02229
    "node": 22.1e6,
    "edge": 6.84e6,
    "global": 2.11e6,
    "attention": 4.22e6,
    "ffn": 8.42e6,
    "encoder": 0.63e6,
    "total": 44.3e6,
}
PAPER_PCQM4MV2 = {  # PCQM4Mv2 validation MAE (meV): [pcqm4mv2]; the 22M and 11M values [sizes] are approximate
    "GPS++ 44M": 77.8,
    "GPS++ 22M": 82,
    "GPS++ 11M": 90,
    "Transformer-M": 77.2,
    "GPS": 85.8,
    "Graphormer": 86.4,
}
PAPER_PACKING_EFFICIENCY = 0.87  # [packing]: node slots filled by the paper's streaming packer
QM9_GAP_LITERATURE = {"SchNet": 63, "PaiNN": 45.7, "DimeNet++": 32.6}  # [qm9-literature]: QM9 gap MAE (meV)

ARM_NAMES = {
    "full": "GPS++ (MPNN + attention + 3D)",
    "mpnn_only": "MPNN only (no attention)",
    "full_unmasked": "GPS++ trained unmasked",
    "no_3d": "no 3D features (unmasked)",
}

__all__ = ["ARM_NAMES", "PAPER_PACKING_EFFICIENCY", "PAPER_PARAMETERS", "PAPER_PCQM4MV2", "QM9_GAP_LITERATURE"]

"""What the claims (papers/umup/claims.py) and the report (papers/umup/report.py) both name: the parametrizations'
labels, the FP8 head policies' wording and u-muP's transfer margin. No JAX, no statistics."""

from __future__ import annotations

NAMES = {"sp": "SP", "mup": "muP", "umup": "u-muP"}
HEADS = {"low": "the readout included", "fp32": "the readout kept in FP32"}
# u-muP's optimum "stays put" when its move over the swept widths lies within +-0.5 octave: half our grid step, so
# finer than the grid. The paper gives no number (REFERENCES.md, UMUP-FIG1B: "the best LR for width 256 is ~optimal
# for 4096", over 16x); the margin is ours.
TRANSFER_MARGIN = 0.5

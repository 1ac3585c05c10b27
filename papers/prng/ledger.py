"""Every change to the PRNG claims (core/ledger.py), oldest first. No claim was re-specified before the ledger
began (git log of papers/prng/report.py: the four rules are those of the first reproduction, 2026-11-22)."""

from core.ledger import Change

_LAST_RUN = "README row of commit 7484b79 (default run of 2026-11-24, 36 s: 4 of 4 claims hold)"

LEDGER: list[Change] = [
    Change(
        "2026-11-25",
        "plus-low-bits-fail",
        "removed",
        old="is_true: bit 0 fails both tests for every seed",
        new="-",
        reason="Issue 41: holds by construction. Bit 0 of xoroshiro128+ is bit 0 of s0 + s1, a linear function of "
        "the 128-bit state (an LFSR), so its linear complexity is at most 128 and a 256 x 256 rank matrix of it is "
        "deficient: a theorem, not an empirical finding. Its measured value is kept as a fact.",
        old_verdict="holds",
        commit="7484b79",
        run=_LAST_RUN,
        moved_to="fact plus-low-bits-fail (analytic)",
    ),
    Change(
        "2026-11-25",
        "aox-cheaper-than-adder",
        "removed",
        old="ours <= 1 (gate ratio, AOX over a 64-bit Kogge-Stone adder)",
        new="-",
        reason="Issue 41: restates our own arithmetic: our gate counts of our own netlists against our threshold "
        "1.0, not the paper's synthesised ratio 684 / 1237 = 0.553. Its measured ratio is kept as a fact; a claim "
        "against 0.553 belongs to a later issue.",
        old_verdict="holds",
        commit="7484b79",
        run=_LAST_RUN,
        moved_to="fact aox-cheaper-than-adder (analytic)",
    ),
    Change(
        "2026-11-25",
        "aox-every-bit-passes",
        "code",
        old="ours <= 0",
        new="ours <= 0 (unchanged)",
        reason="Issue 41: measure() no longer computes the two claims that became facts (claims.facts does); "
        "this claim's statistic and rule are unchanged. No result seen differently.",
        fingerprint="99f5d77d82f0",
    ),
    Change(
        "2026-11-25",
        "aox-hamming-weight",
        "code",
        old="ours >= 1e-4",
        new="ours >= 1e-4 (unchanged)",
        reason="Issue 41: measure() no longer computes the two claims that became facts (claims.facts does); "
        "this claim's statistic and rule are unchanged. No result seen differently.",
        fingerprint="c447a9688d3c",
    ),
]

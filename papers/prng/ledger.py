"""Every change to the PRNG claims (core/ledger.py), oldest first. No claim was re-specified before the ledger
began (git log of papers/prng/report.py: the four rules are those of the first reproduction, 2026-11-22)."""

from core.claims import at_least
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

_LAST_RUN = "README row of commit 7484b79 (default run of 2026-11-24, 36 s: 4 of 4 claims hold)"
_ISSUE45_RUN = "README row of commit cc441f2 (default run of 2026-11-25, 37 s: 2 of 2 claims hold)"

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
        fingerprint="7e9bc445869e",
    ),
    Change(
        "2026-11-25",
        "aox-hamming-weight",
        "code",
        old="ours >= 1e-4",
        new="ours >= 1e-4 (unchanged)",
        reason="Issue 41: measure() no longer computes the two claims that became facts (claims.facts does); "
        "this claim's statistic and rule are unchanged. No result seen differently.",
        fingerprint="4941405b3386",
    ),
    Change(
        "2026-11-26",
        "aox-hamming-weight",
        "respecified",
        old="ours >= 1e-4: no Hamming-weight dependency visible in 3 seeds x 2^20 outputs (smallest p over seeds)",
        new="ours < 1e-4 (the dependency seen), decided only at >= 1.41e12 outputs per seed, the smallest sample at "
        "which our test could see the paper's effect; undecided below (the default's 2^20)",
        reason="issue 45: the old rule held only because the sample is a million times too small to see the "
        "weakness the paper reports (gjrand z9 fails at 10 TB = 1.25e12 outputs per seed, PRNG-AOX-Z9). The claim "
        "now states the paper's finding (a dependency) and a power computation for our statistic: with z9's "
        "detection rate there (>= 0.95) and our 8-df table as sensitive per output, power 0.8 at level 1e-4 needs "
        "1.41e12 outputs per seed. Results had been seen (p = 0.199 in the last default run); the threshold comes "
        "from the paper's sample size, not from our p-values. The statistic is unchanged, so the old rule is shown "
        "on each run.",
        old_rule=at_least(1e-4),
        old_verdict="holds (0.199)",
        commit="cc441f2",
        run=_ISSUE45_RUN,
        fingerprint="845dac9ec91f",
    ),
    Change(
        "2026-11-26",
        "aox-generator-cells",
        "added",
        old="",
        new="ours <= 0.553 (684 / 1237), ours = AOX over xoroshiro128+ cells of the whole generators (state update "
        "and output), the whole range over 8 technology mappings of our netlists",
        reason="issue 45: the hardware-cost claim against the paper's ratio instead of our 1.0 (aox-cheaper-than-"
        "adder, removed on 2026-11-25, stays a fact of the output functions alone). The paper's 684 and 1237 count "
        "whole generators (state update 331 cells in both, outputs 353 and 906; PRNG-CELLS), so ours counts the "
        "same parts; how a synthesiser maps gates onto cells is not reported, so the claim is decided on the range "
        "over the mappings. The netlist counts are arithmetic and were computed while the design was chosen "
        "(0.38 to 0.44 with a Kogge-Stone adder, 0.76 to 0.92 with a ripple-carry one); the bound is the paper's "
        "figure, as the issue asks.",
        fingerprint="a05e171db9e8",
    ),
    Change(
        "2026-11-26",
        "aox-every-bit-passes",
        "code",
        old="ours <= 0, measured by claims.measure",
        new="ours <= 0 (unchanged), measured by its own function (claims._every_bit)",
        reason="issue 45: each claim measures with its own function, as the new claims do; the statistic and the "
        "rule are unchanged. No result seen differently.",
        fingerprint="d388fda7a130",
    ),
    Change(
        "2026-11-26",
        "plus-low-bits-fail",
        "removed",
        old="fact plus-low-bits-fail (analytic): bit 0 fails both tests for every seed",
        new="-",
        reason="issue 45: a theorem (bit 0 of s0 + s1 is s0 ^ s1 at bit 0, linear in the 128-bit state) belongs in "
        "the tests, not beside the claims: the test checks linear complexity exactly 128 and a rank deficit in "
        "every seed, and that the battery's two tests fail it.",
        old_verdict="yes (the fact's value)",
        commit="cc441f2",
        run=_ISSUE45_RUN,
        moved_to="tests/papers/prng/test_battery.py::test_xoroshiro_plus_lowest_bit_is_linear_in_the_state",
    ),
    *code_changes(
        "2026-11-28",
        "issue 57: decided from the stored Results (run -> Results -> decide -> render): each claim measures from the "
        "Results (the battery's p-values per bit, the netlists' cell counts the run stored) instead of the battery's "
        "dicts and the netlists counted at decision time, so a change to how a claim is decided or shown is "
        "re-decided without re-running; the statistic, rule and figure are unchanged, and the smoke run's values "
        "are identical",
        {
            "aox-every-bit-passes": "2108376bec5d",
            "aox-hamming-weight": "68491baac4e1",
            "aox-generator-cells": "6c09652cdeb9",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "aox-every-bit-passes": "40f8c97abdbb",
        "aox-hamming-weight": "d6bad61eea71",
        "aox-generator-cells": "c1d24a2c2f0f",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "aox-every-bit-passes": "18f82875d068",
        "aox-hamming-weight": "614992e27b2a",
        "aox-generator-cells": "b23f8ea2f1b9",
    },
)

# automatic entry (2026-11-28): decision code changed, re-decided results/prng identically
LEDGER += code_changes(
    "2026-11-28",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/prng with it gave identical claims, facts, estimates and verdicts; written by "
    '`make claims ARGS="lock prng"`',
    {
        "aox-every-bit-passes": "b48b127c7a88",
        "aox-hamming-weight": "8c26ac0d0e6a",
        "aox-generator-cells": "1e7033c18e2f",
    },
    run="results/prng",
)

# automatic entry (2026-11-29): decision code changed, re-decided results/prng identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/prng with it gave identical claims, facts, estimates and verdicts; written by "
    '`make claims ARGS="lock prng"`',
    {
        "aox-every-bit-passes": "c01ff4e98787",
        "aox-generator-cells": "e076fd862ab2",
    },
    run="results/prng",
)

# ------------------------------------------------------------------ 2026-11-29, issue 62
_REFERENCE = "results/prng (reference run of 2026-11-29, default scale, 3 seeds x 2^20 outputs)"

LEDGER += [
    Change(
        "2026-11-29",
        "aox-every-bit-passes",
        "removed",
        old="ours <= 0: tests failing at p < 1e-4, counted over 3 seeds x 64 bits x (binary rank, linear complexity)",
        new="-",
        reason="issue 62: it could fail only by chance. Bit i of the AOX output is x_i ^ (a_{i-1} | a_{i-2}), a "
        "polynomial of degree 4 in the state bits, never linear, so nothing forces it into a recurrence of order "
        "128 as xoroshiro128+'s bit 0 is (the bound for degree 4 is about 1.1e7), and measured, every bit's linear "
        "complexity is a random sequence's; the rank (256 x 256) and linear-complexity (1000 bits) tests see only "
        "recurrences shorter than their size, so a perfect generator fails one of the 384 tests at p < 1e-4 with "
        "probability 3.8%, and this one only as often, or through a wrong generator. "
        "The mirror of plus-low-bits-fail, which went to the tests on 2026-11-26. The new test checks the "
        "nonlinearity of every bit (a formula by hand against core.random, and a second-difference check that "
        "xoroshiro128+'s bit 0 passes as linear) and that every bit's linear complexity at 600 outputs is a random "
        "sequence's (300 +- 12) in each default seed. The battery's failure counts stay in the report's table. The "
        "verdict leaves the count: holds -> test",
        old_verdict="holds (0 of 384 tests failing; smallest p 1.04e-03)",
        commit="ef777f7",
        run=_REFERENCE,
        moved_to="tests/papers/prng/test_battery.py::test_every_aox_bit_is_nonlinear_in_the_state (the battery's "
        "failure counts stay in the report's failures table)",
    ),
    Change(
        "2026-11-29",
        "aox-generator-cells",
        "removed",
        old="ours <= 0.553 (684 / 1237): AOX over xoroshiro128+ cells of the whole generators (Kogge-Stone adder), "
        "the whole range over 8 technology mappings of our netlists",
        new="-",
        reason="issue 62: our own netlists' arithmetic against the paper's synthesised ratio, and the adder decides "
        "the verdict: with Kogge-Stone (output depth 13, the paper's 13 for xoroshiro128+) 0.377 to 0.440 holds, "
        "with ripple-carry (depth 126) 0.76 to 0.92 would fail, and both had been computed when the claim was "
        "declared on 2026-11-26. It is reported as an analytic fact with the same median and range, the "
        "ripple-carry range in its detail. The verdict leaves the count: holds -> fact",
        old_verdict="holds (median 0.406, range [0.377, 0.440] over 8 mappings)",
        commit="ef777f7",
        run=_REFERENCE,
        moved_to="fact aox-generator-cells (analytic), its value the same median and range over the mappings",
    ),
]

LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels only; rule, figure and statistic unchanged. figure_source authors (the first author's summary "
    "of the paper and the authors' test code: REFERENCES.md, PRNG-AOX-Z9; the paper's own text was not read), "
    "margin_source ours (the level 1e-4 and the power 0.8), and undecidable: the rule decides only at 1.41e12 "
    "outputs per seed, and prng.outputs is capped at 2^28 (5,241 times fewer; the default's 2^20 is 1.3e6 times "
    "fewer), so no sample this design allows decides it. The verdict stays undecided, now saying it is not "
    "decidable by any sample of this design",
    {"aox-hamming-weight": "e74a11af2dd1"},
)

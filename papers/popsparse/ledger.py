"""Every change to the PopSparse claims (core/ledger.py), oldest first: the re-specification found in the history
(git log -p papers/popsparse/report.py, README.md) and issue 41's changes."""

from core.claims import Interval, Rule
from core.ledger import Change

_OLD_TARGETS = "every factor <= 1.5 and the median <= 1.2, the paper's figures taken as exact points"


def _old_targets(ours, paper) -> bool:
    """The table and figure claims' rule before issue 41 on today's statistic: its estimate is
    max(worst / 1.5, median / 1.2) at the paper's figures as printed, so the old rule holds where it is <= 1."""
    return ours.estimate <= 1.0 if isinstance(ours, Interval) else ours is True


OLD_TARGETS_RULE = Rule(f"is_true: {_OLD_TARGETS}", _old_targets, "qualitative")

_RUN_0425 = "README row of commit 414d49b (default run of 2026-11-25 04:28, 8.2 min: 7 of 10 claims hold)"
_ISSUE_41_CODE = (
    "Issue 41: measure() changed for other claims (the table and figure claims decide on the paper's printed "
    "rounding; ipu-dense-rate became a calibration fact); the code moved from report.py to claims.py. This claim's "
    "statistic and rule are unchanged."
)

LEDGER: list[Change] = [
    Change(
        "2026-11-25",
        "ipu-headline-crossover",
        "respecified",
        old="|ours - 0.9| <= 0.05, ours = the FP16 static crossover sparsity at b = 16 (no value when the "
        "crossover lies outside the density grid)",
        new="|ours - 0.9| <= 0.05, ours = of the FP16 static crossover sparsities of b = 1, 4, 8, the one nearest "
        "90% (a crossover beyond the grid counts as the grid's edge)",
        reason="Commit c85010a: 'the headline crossover is tested on small blocks ... the abstract names no block "
        "size; the table puts b=16 far below' 90%. Changed after a failing result had been seen: the 2026-11-24 "
        "default run found the simulated b=16 beating dense at every density tried (1.67x at 1/2), so no crossover "
        "near 90%. The statistic changed (other blocks, a new sweep), so the old rule cannot be evaluated on new runs.",
        old_verdict="fails",
        commit="2c1f5b0",
        run="README row of commit 2c1f5b0 (default run of 2026-11-24, 13.7 min: 'the sim beats dense at every "
        "density tried at b=16 (1.67x at 1/2), so no ~90% crossover')",
    ),
    Change(
        "2026-11-25",
        "ipu-dense-rate",
        "removed",
        old="is_true: every max(sim/paper, paper/sim) <= 1.5 (simulated dense FLOP/s against the paper's dense figure)",
        new="-",
        reason="Issue 41: a calibration, not a finding: the dense baseline's partials type (FP16) was chosen so the "
        "paper's dense rate is reachable (commit de354fd; float partials cap FP16 at 174 TFLOP/s, below the paper's "
        "232). The measured ratio stays in the report as a calibration fact.",
        old_verdict="holds",
        commit="414d49b",
        run=_RUN_0425 + ": dense 0.99-1.05x the paper's dense figure",
        moved_to="fact ipu-dense-rate (calibration)",
    ),
    Change(
        "2026-11-25",
        "ipu-paper-table",
        "respecified",
        old=f"is_true: {_OLD_TARGETS}",
        new="every cell's factor <= 1.5 and the median's <= 1.2 over the table's printed rounding (0.7 is [0.65, "
        "0.75]): holds when all of it is within, fails when some cell's (or the median's) whole interval is beyond, "
        "undecided otherwise",
        reason="Issue 41: the paper prints its table to one decimal, and the old rule compared with those figures as "
        "exact points. Changed after the result had been seen and named by the issue: the last default run failed "
        "at worst 1.51 vs 1.5 and median 1.22 vs 1.2; on its cells the new statistic is 1.02 [0.98, 1.07], "
        "undecided. The old rule's verdict is shown on every run (old_rule).",
        old_rule=OLD_TARGETS_RULE,
        old_verdict="fails",
        commit="414d49b",
        run=_RUN_0425 + ": 7 of 8 cells within 1.5x, median 1.22, worst b=16 FP16 dynamic 1.51",
        fingerprint="77370d86ee08",
    ),
    Change(
        "2026-11-25",
        "ipu-paper-figures",
        "respecified",
        old=f"is_true: {_OLD_TARGETS}",
        new="every cell's factor <= 1.5 and the median's <= 1.2 over the figures' two-decimal rounding (0.21 is "
        "[0.205, 0.215]): holds when all of it is within, fails when some cell's (or the median's) whole interval "
        "is beyond, undecided otherwise",
        reason="Issue 41: the digitised figures are recorded to two decimals and the old rule compared with them "
        "as exact points. Changed after the result had been seen: the last default run failed at median 1.24 vs "
        "1.2 (8 of 8 cells within 1.5x). The digitising error (2-5%, REFERENCES.md) is wider than the rounding and "
        "is not included: that belongs to a later issue. The old rule's verdict is shown on every run (old_rule).",
        old_rule=OLD_TARGETS_RULE,
        old_verdict="fails",
        commit="414d49b",
        run=_RUN_0425 + ": 8 of 8 cells within 1.5x, median 1.24",
        fingerprint="a74f6da74121",
    ),
    *(
        Change("2026-11-25", claim, "code", old=rule, new=f"{rule} (unchanged)", reason=_ISSUE_41_CODE, fingerprint=fp)
        for claim, rule, fp in (
            ("ipu-static-beats-dynamic", "is_true: static faster in every cell", "c8fe940aac66"),
            ("ipu-grows-with-block-float16", "is_true: non-decreasing over the block sizes", "1a18167da868"),
            ("ipu-grows-with-block-float32", "is_true: non-decreasing over the block sizes", "c7e4d2a1a76b"),
            ("ipu-headline-crossover", "|ours - 0.9| <= 0.05", "ab9eb6b02ee4"),
            ("ipu-crossover-falls-with-block", "is_true: non-increasing over the crossover blocks", "aa8020b67285"),
            ("cpu-static-beats-dynamic", "is_true: interval above 1 in every cell", "6d9d65639427"),
            ("cpu-grows-with-block", "interval low > 0", "9bf7bd5138e5"),
        )
    ),
]

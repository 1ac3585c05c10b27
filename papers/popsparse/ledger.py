"""Every change to the PopSparse claims (core/ledger.py), oldest first: the re-specification found in the history
(git log -p papers/popsparse/report.py, README.md), issue 41's changes, issue 45's and issue 57's (the code moved to
run -> Results -> decide; no claim changed).

Issue 45's entries (2026-11-26) were written after the default run of 2026-11-26 00:02 (README row of commit ad177f0,
code 04448ef: 6 hold, 2 fail, 1 undecided) had been seen, and before any run of the new design; the old verdicts
are that run's.

One module over 400 lines: a ledger is data, one entry per change, appended and never edited or generated."""

from core.claims import Interval, Rule
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

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

_RUN_1126 = (
    "README row of commit ad177f0 (default run of 2026-11-26 00:02, code 04448ef, 8.5 min: 6 hold, 2 fail, 1 undecided)"
)
_SEEDS_GRID = (
    "every simulated sparse cell now runs 3 random block patterns (popsparse.ipu.pattern_seeds) and the claim holds "
    "only where every seed meets the rule; the grid pruned after runs is restored: every kind at n = 256, 1024, 4096 "
    "(static had been cut to n = 4096, and n = 256 dropped, though a dropped n can only lower a kind's best, which "
    "moves a cell whose sim/paper is above 1 towards the paper)"
)
_ISSUE_45: list[Change] = [
    Change(
        "2026-11-26",
        "ipu-paper-table",
        "respecified",
        old="every cell's factor <= 1.5 and the median's <= 1.2 over the table's printed rounding; one pattern, n = "
        "1024, 4096 (static 4096 only)",
        new="the same rule over the printed rounding and 3 pattern seeds (interval: lowest and highest over both), "
        "n = 256, 1024, 4096 for every kind",
        reason="issue 45: " + _SEEDS_GRID + ". The targets 1.5x and 1.2x (issue 26's) are unchanged. Results of the "
        "old design had been seen (undecided: 1.018 [0.978, 1.076]); none of the new.",
        old_verdict="undecided",
        commit="ad177f0",
        run=_RUN_1126 + ": 1.018 [0.9781, 1.076]",
        fingerprint="23e6eb5d99f7",
    ),
    Change(
        "2026-11-26",
        "ipu-paper-figures",
        "respecified",
        old="the same targets against figure values digitised by hand (no committed method) to two decimals, their "
        "rounding as the interval (the 2-5% digitising error left out); one pattern",
        new="the same targets against the figures as papers.popsparse.digitise reads them off the authors' notebook "
        "images (committed script and images; each value an interval at the figure's pixel precision), over 3 "
        "pattern seeds; static b = 16 at 1/8 and 1/32 join (the crossover sweep now has b = 16)",
        reason="issue 45: the digitised targets had been committed after the simulated values for those cells were "
        "known, by a method with no committed script; they now come from a re-runnable script whose readings of the "
        "table's cells are tested against the printed table (tests/papers/popsparse/test_digitise.py). "
        + _SEEDS_GRID
        + ". Results of the old design had been seen (fails: 1.032 [1.016, 1.048]); none of the new.",
        old_verdict="fails",
        commit="ad177f0",
        run=_RUN_1126 + ": 1.032 [1.016, 1.048], 8 of 8 cells within 1.5x, median 1.24",
        fingerprint="92a0626147c9",
    ),
    Change(
        "2026-11-26",
        "ipu-static-beats-dynamic",
        "respecified",
        old="is_true: static faster in every cell (one pattern)",
        new="static faster in every cell for every one of 3 pattern seeds (ours: the share of cells, lowest and "
        "highest over the seeds): holds at 1 in every seed, fails where every seed has a cell it loses, undecided "
        "between",
        reason="issue 45: an 'A beats B' claim needs >= 3 replicates; the pattern is the only thing that varies. "
        + _SEEDS_GRID
        + ". Density 1/2 stays out of the default grid (it decides only this claim; README, 'Grid points'). "
        "Results of the old design had been seen (holds, 12 of 12 cells).",
        old_verdict="holds",
        commit="ad177f0",
        run=_RUN_1126 + ": static faster in 12 of 12 cells",
        fingerprint="c365c23bbca0",
    ),
    Change(
        "2026-11-26",
        "ipu-grows-with-block-float16",
        "removed",
        old=("is_true: the static speed-up at 1/16 non-decreasing over the block sizes"),
        new="-",
        reason=(
            "issue 45: true of the cost model by construction: poplibs' static codelet estimate costs "
            "fewer cycles per non-zero element at b = 16 than at b = 1 at every column count (the "
            "per-block overhead is shared by b^2 elements), so no run could fail it; the test that "
            "shows it is "
            "tests/papers/popsparse/test_ipu.py::test_static_cycles_per_element_fall_with_block_size. "
            "It stays in the report as a construction fact with the measured ratio beside the paper's."
        ),
        old_verdict="holds",
        commit="ad177f0",
        run=_RUN_1126 + ": b=1 0.87x, b=16 4.65x",
        moved_to="fact ipu-grows-with-block-float16 (construction)",
    ),
    Change(
        "2026-11-26",
        "ipu-grows-with-block-float32",
        "removed",
        old=("is_true: the static speed-up at 1/16 non-decreasing over the block sizes"),
        new="-",
        reason=(
            "issue 45: true of the cost model by construction: poplibs' static codelet estimate costs "
            "fewer cycles per non-zero element at b = 16 than at b = 1 at every column count (the "
            "per-block overhead is shared by b^2 elements), so no run could fail it; the test that "
            "shows it is "
            "tests/papers/popsparse/test_ipu.py::test_static_cycles_per_element_fall_with_block_size. "
            "It stays in the report as a construction fact with the measured ratio beside the paper's."
        ),
        old_verdict="holds",
        commit="ad177f0",
        run=_RUN_1126 + ": b=1 1.69x, b=16 5.93x",
        moved_to="fact ipu-grows-with-block-float32 (construction)",
    ),
    Change(
        "2026-11-26",
        "ipu-headline-crossover",
        "respecified",
        old="|ours - 0.9| <= 0.05, ours = the crossover sparsity of b = 1, 4, 8 nearest 90%, one pattern",
        new="the same rule on an interval over 3 pattern seeds (the block whose crossover at the seed-mean speed-ups "
        "is nearest 90%; lowest and highest over the seeds)",
        reason="issue 45: a trend claim on one pattern seed; now decided over 3, holding only where every seed is "
        "within 0.05 of 90%. The crossover sweep gains b = 16 (not among the headline blocks). Results of the old "
        "design had been seen (holds, 0.9466).",
        old_verdict="holds",
        commit="ad177f0",
        run=_RUN_1126 + ": 0.9466 (b=1)",
        fingerprint="baecafaa415f",
    ),
    Change(
        "2026-11-26",
        "ipu-crossover-falls-with-block",
        "respecified",
        old="is_true: the FP16 static crossover sparsity non-increasing over the crossover blocks (one pattern)",
        new="at every (block, density) where the paper's static FP16 figure reading lies wholly above or below 1 "
        "(b = 1 below at 1/4 .. 1/16, above at 1/32; b = 4, 8 above at 1/16; b = 16 above at 1/4 .. 1/32), ours "
        "on the same side, for every one of 3 pattern seeds (ours: the share of such cells, lowest and highest "
        "over the seeds)",
        reason="issue 45: 'the crossover falls as blocks grow' follows from a per-block overhead in any sensible "
        "cost model (see ipu-grows-with-block, removed), so it could not fail. Restated against the paper's figures: "
        "each block's crossover must lie where the paper's figures put it, to their density step, which places "
        "b = 1's between 1/16 and 1/32 and the others' above 1/16. The original rule is still evaluated on every "
        "run and its outcome over the seeds is in the claim's detail. Results of the old design had been seen "
        "(holds: b=1 94.7%, b=4 83.7%, b=8 below 75%).",
        old_verdict="holds",
        commit="ad177f0",
        run=_RUN_1126 + ": b=1 94.7%, b=4 83.7%, b=8 below 75.0%",
        fingerprint="ebb9a76d8365",
    ),
    Change(
        "2026-11-26",
        "cpu-static-beats-dynamic",
        "code",
        old="is_true: interval above 1 in every cell",
        new="is_true: interval above 1 in every cell (unchanged)",
        reason=(
            "issue 45: measure() changed for the IPU claims (pattern seeds, the digitised figures as "
            "intervals); this claim's statistic, data and rule are unchanged."
        ),
        fingerprint="e680b1297782",
    ),
    Change(
        "2026-11-26",
        "cpu-grows-with-block",
        "code",
        old="interval low > 0",
        new="interval low > 0 (unchanged)",
        reason=(
            "issue 45: measure() changed for the IPU claims (pattern seeds, the digitised figures as "
            "intervals); this claim's statistic, data and rule are unchanged."
        ),
        fingerprint="7fb76df11127",
    ),
]

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
    Change(
        "2026-11-25",
        "ipu-static-beats-dynamic",
        "code",
        old="is_true: static faster in every cell",
        new="is_true: static faster in every cell (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="c8fe940aac66",
    ),
    Change(
        "2026-11-25",
        "ipu-grows-with-block-float16",
        "code",
        old="is_true: non-decreasing over the block sizes",
        new="is_true: non-decreasing over the block sizes (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="1a18167da868",
    ),
    Change(
        "2026-11-25",
        "ipu-grows-with-block-float32",
        "code",
        old="is_true: non-decreasing over the block sizes",
        new="is_true: non-decreasing over the block sizes (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="c7e4d2a1a76b",
    ),
    Change(
        "2026-11-25",
        "ipu-headline-crossover",
        "code",
        old="|ours - 0.9| <= 0.05",
        new="|ours - 0.9| <= 0.05 (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="1e1ce980f6ed",
    ),
    Change(
        "2026-11-25",
        "ipu-crossover-falls-with-block",
        "code",
        old="is_true: non-increasing over the crossover blocks",
        new="is_true: non-increasing over the crossover blocks (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="aa8020b67285",
    ),
    Change(
        "2026-11-25",
        "cpu-static-beats-dynamic",
        "code",
        old="is_true: interval above 1 in every cell",
        new="is_true: interval above 1 in every cell (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="6d9d65639427",
    ),
    Change(
        "2026-11-25",
        "cpu-grows-with-block",
        "code",
        old="interval low > 0",
        new="interval low > 0 (unchanged)",
        reason=_ISSUE_41_CODE,
        fingerprint="073f633c39f1",
    ),
    *_ISSUE_45,
    *code_changes(
        "2026-11-28",
        "issue 57: decided from the stored Results (run -> Results -> decide -> render), so a change to how a claim "
        "is decided or shown is re-decided without re-running; the statistic, rule, figure and pattern seeds are "
        "unchanged, and the smoke run's IPU values are identical (the CPU claims' differ only as timings do); so are "
        "every claim's value and detail, the facts and the tables decided from the same figure-scale rows by the old "
        "and the new code",
        {
            "ipu-paper-table": "68236923ec1a",
            "ipu-paper-figures": "9b66bf8e27fb",
            "ipu-static-beats-dynamic": "ea1847ed5574",
            "ipu-headline-crossover": "4b833f04a37e",
            "ipu-crossover-falls-with-block": "4b33200896fa",
            "cpu-static-beats-dynamic": "445f055f2f90",
            "cpu-grows-with-block": "c33e01358cf7",
        },
    ),
    *code_changes(
        "2026-11-28",
        "issue 57's demonstration: a decision helper written in several papers moved into core.stats, decided "
        "again from the stored Results without training. The CPU speedup interval (the median of the "
        "per-round time ratios, rounds paired as timed, with its bootstrap interval over the rounds on log "
        "times), written here and in sparq, is now core.stats.paired_speedup; speedup_interval calls it with "
        "the same rounds and resampling seed, and the decision of the smoke fixture's Results is identical to "
        "the old code's in every value",
        {
            "ipu-paper-table": "ef3b3f31eb86",
            "ipu-paper-figures": "459c246dbfd9",
            "ipu-static-beats-dynamic": "407c97faf107",
            "ipu-headline-crossover": "00f466e8afae",
            "ipu-crossover-falls-with-block": "1d237fb37f0a",
            "cpu-static-beats-dynamic": "b97892dce00e",
            "cpu-grows-with-block": "55f4b7943b4d",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "ipu-paper-table": "28ada7fd7b74",
        "ipu-paper-figures": "fb9d1e604a7a",
        "ipu-static-beats-dynamic": "bbe20e8a66b2",
        "ipu-headline-crossover": "7ae595f98930",
        "ipu-crossover-falls-with-block": "993afd3e6ac4",
        "cpu-static-beats-dynamic": "9db092af903e",
        "cpu-grows-with-block": "465cc577d04d",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "ipu-paper-table": "2f7b45114064",
        "ipu-paper-figures": "8eb358b9b9bd",
        "ipu-static-beats-dynamic": "bb5b68f7ea08",
        "ipu-headline-crossover": "7f4588f419b7",
        "ipu-crossover-falls-with-block": "9c3f4e5633d6",
        "cpu-static-beats-dynamic": "6ecc5d77f9c5",
        "cpu-grows-with-block": "cabb7cb722b9",
    },
)

# automatic entry (2026-11-28): decision code changed, re-decided results/popsparse identically
LEDGER += code_changes(
    "2026-11-28",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/popsparse with it gave identical claims, facts, estimates and verdicts; written "
    'by `make claims ARGS="lock popsparse"`',
    {
        "ipu-paper-table": "270a308fec37",
        "ipu-paper-figures": "c40e6e8aa69f",
        "ipu-static-beats-dynamic": "2495bcdf7e7d",
        "ipu-headline-crossover": "2b51c91812e5",
        "ipu-crossover-falls-with-block": "813f64e38f53",
        "cpu-static-beats-dynamic": "1e9edf91d216",
        "cpu-grows-with-block": "622e1093e41a",
    },
    run="results/popsparse",
)

# automatic entry (2026-11-29): decision code changed, re-decided results/popsparse identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/popsparse with it gave identical claims, facts, estimates and verdicts; written "
    'by `make claims ARGS="lock popsparse"`',
    {
        "ipu-paper-table": "fb47307375e8",
        "ipu-paper-figures": "a621389e398a",
        "ipu-static-beats-dynamic": "86aea54ca2fd",
        "ipu-headline-crossover": "89a8538b7c46",
        "ipu-crossover-falls-with-block": "8f6da7aae084",
        "cpu-static-beats-dynamic": "61aa12762caf",
        "cpu-grows-with-block": "00f14eefefcd",
    },
    run="results/popsparse",
)

# Issue 62: every claim says where its figure and margin come from and the sample behind its interval; a claim that
# cannot fail at its design, or that tests nothing the paper measured, leaves the claims; a rule no sample can decide is
# restated. Results had been seen: the reference run of 2026-11-29 (results/popsparse, commit fa22fd3: 3 hold, 2 fail,
# 2 undecided) and every earlier run listed in papers/popsparse/README.md.
_REFERENCE = "results/popsparse (reference run of 2026-11-29)"
LEDGER += [
    Change(
        "2026-11-29",
        "ipu-static-beats-dynamic",
        "respecified",
        old="static faster in every cell for every one of 3 pattern seeds (ours: the share of cells, lowest and "
        "highest over the seeds): holds at 1 in every seed, fails where every seed has a cell it loses, undecided "
        "between",
        new="in every (dtype, block, density) cell, the 95% t interval over the pattern seeds of the mean ln(static / "
        "dynamic speed-up) above 0 (ours: the lowest cell's interval): holds where every cell's is, fails where one "
        "lies wholly at or below 0, undecided otherwise; n = the pattern seeds",
        reason="issue 62: the old rule could not be decided by any number of seeds, and this was seen on results: its "
        "interval was the lowest and highest of the per-seed shares, and seed 0 has static ahead in 12 of 12 cells "
        "(so the highest stays 1 and it can never fail) while seeds 1 and 2 lose FP32 b=16 at 1/4 by 0.84% and 0.81% "
        "(so the lowest stays below 1 and it can never hold). Restated so that the pattern seeds are a sample: per "
        "cell a t interval of the mean log speed ratio, so more seeds narrow it. The new statistic differs, so the "
        "old rule is not evaluated on it; its last verdict is recorded. On the reference run the verdict stays "
        "undecided -> undecided: 11 cells above 0, FP32 b=16 at 1/4 at -0.25% [-2.73, +2.22] (per seed +0.90%, "
        "-0.84%, -0.81%), which about 63 seeds would decide at this spread. Each cell is tested at 95% with no "
        "correction for the 12 cells",
        old_verdict="undecided (share of cells 0.944 [0.917, 1]: static faster in 12, 11, 11 of 12 cells)",
        commit="fa22fd3",
        run=_REFERENCE,
        fingerprint="852d7bf4ec08",
    ),
    Change(
        "2026-11-29",
        "cpu-static-beats-dynamic",
        "removed",
        old="is_true: the 95% bootstrap interval of dynamic / static time above 1 in every (block, density) CPU cell",
        new="-",
        reason="issue 62: it measures the project's own two JAX kernels (core.sparsity's static and dynamic "
        "matmuls) on a CPU, not anything the paper measured (an IPU, and a GPU for the dense comparison), so it "
        "tests no claim of the paper. Its boolean rule also called 'fails' a sweep with 16 cells significantly "
        "faster, 0 slower and 4 undecided. The per-cell intervals stay in the report's CPU table as a benchmark, "
        "counted as no claim. Verdict: fails -> removed: a fail leaves the count",
        old_verdict="fails (static significantly faster in 16, significantly slower in 0, undecided in 4 of 20 cells)",
        commit="fa22fd3",
        run=_REFERENCE,
        moved_to="the report's CPU table (column 'static over dynamic', estimates cpu/static_over_dynamic/*): a "
        "benchmark of our kernels, not counted",
    ),
    Change(
        "2026-11-29",
        "cpu-grows-with-block",
        "removed",
        old="interval low > 0: the OLS slope of log2(static speed-up over dense) on log2(block) at density 1/16 over "
        "every CPU timing round, 95% t interval",
        new="-",
        reason="issue 62: it measures the project's own static JAX kernel on a CPU, not anything the paper measured; "
        "the kernel shares each group's overhead over b^2 elements, the reason the IPU version became a construction "
        "fact (2026-11-26). The slope stays in the report's CPU table caption as a benchmark, counted as no claim. "
        "Verdict: holds -> removed",
        old_verdict="holds (slope 0.586 [0.463, 0.708]; the paper's table gives 0.70 on its IPU)",
        commit="fa22fd3",
        run=_REFERENCE,
        moved_to="the report's CPU table (its caption, estimate cpu/static_speedup_slope): a benchmark of our "
        "kernels, not counted",
    ),
]
LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels: figure_source (the table and the figures: the authors' notebook, since the paper's own table "
    "and figure numbers were not checked; the headline: the paper's abstract, read), margin_source (the 1.5x / 1.2x "
    "targets, the headline's +-0.05 window and block choice: ours; the crossover's sides of 1: the authors' "
    "figures) and the sample (n = 3 pattern seeds); ipu-paper-table also says why no sample decides it (its "
    "interval is the table's one-decimal rounding). The code that decides them changed with measure(), which every "
    "claim shares: it no longer measures the two CPU claims and measures ipu-static-beats-dynamic per cell; these "
    "claims' statistic, rule and figure are unchanged, and re-deciding results/popsparse gives them identical "
    "values and verdicts: ipu-paper-table undecided, ipu-paper-figures fails, ipu-headline-crossover holds, "
    "ipu-crossover-falls-with-block holds. The table and figure claims' rule now states its region (ours <= 1), so "
    "the report gives their distance from the margin; its check is unchanged. These fingerprints also follow "
    "core.claims' sample_to_decide (1afe337: an undecided claim's sample scaled as a t interval), which moves no "
    "value or verdict",
    {
        "ipu-paper-table": "f12a9f806f17",
        "ipu-paper-figures": "d65337691f28",
        "ipu-headline-crossover": "96f2ca43ce8a",
        "ipu-crossover-falls-with-block": "07eec79bb1ff",
    },
)

# ipu-static-beats-dynamic's fails branch corrected for the number of cells (2026-11-29, after the reference run of
# 2026-11-29 had been seen: results/popsparse, re-made at c19e416 with the same IPU values as fa22fd3's). measure()
# decides every claim, so the other four claims' code fingerprints move with it: code entries below.
LEDGER += [
    Change(
        "2026-11-29",
        "ipu-static-beats-dynamic",
        "respecified",
        old="in every (dtype, block, density) cell, the 95% t interval over the pattern seeds of the mean ln(static / "
        "dynamic speed-up) above 0 (ours: the lowest cell's interval): holds where every cell's is, fails where one "
        "lies wholly at or below 0, undecided otherwise; n = the pattern seeds",
        new="holds where every cell's 95% t interval of the mean ln(static / dynamic speed-up) lies above 0 (an "
        "intersection-union test: no correction); fails where some cell's Bonferroni t interval, at confidence "
        "1 - 0.05 / cells (99.58% over the default's 12), lies wholly at or below 0; undecided otherwise (ours: the "
        "deciding cell's interval at the confidence of the branch it decides, so what would decide it is scaled at "
        "that confidence); the statistic per cell is unchanged",
        reason="the old rule had no correction for the 12 cells in its fails branch, a defect noted at the previous "
        "stop. Its holds branch needs every cell above 0: an intersection-union test, whose chance of a false hold is "
        "at most one cell's (2.5% one-sided) at 95% each, so it needs no correction and is unchanged. Its fails "
        "branch needs only some cell below 0: a union over the cells, whose chance of a false fail (static truly not "
        "behind in any cell) could reach 12 x 2.5% = 30% at 95% each; tested at 1 - 0.05 / 12 per cell it is at most "
        "2.5%, as the holds branch's. This makes 'fails' harder to reach (a cell must lie below 0 at 99.58%, not "
        "95%): unfavourable to finding a fail, favourable to the paper; 'holds' is as hard as before. Changed after "
        "the result had been seen: on the reference the verdict stays undecided -> undecided, decided by the same "
        "cell: FP32 b=16 at 1/4, per seed +0.90%, -0.84%, -0.81%, mean -0.25%, 95% [-2.73%, +2.22%], Bonferroni "
        "[-9.12%, +8.62%] (11 cells above 0 at 95%, none below 0 at either confidence). No run decided under the "
        "per-cell rule (the references of 2026-11-28 and 2026-11-29, with the same IPU values) had a cell whose 95% "
        "interval lay below 0, so no recorded verdict moves. What would decide it grows: its mean is below 0, so "
        "more seeds at this mean and spread would fail it once its Bonferroni interval clears 0, at 131 pattern "
        "seeds (the report's 5% steps: about 133); the old rule's fail needed the 95% interval to clear 0, at 62 "
        "(reported as about 63)",
        old_verdict="undecided (FP32 b=16 at 1/4: -0.25% [-2.73%, +2.22%] at 95%; 11 of 12 cells above 0)",
        commit="c19e416",
        run=_REFERENCE,
        fingerprint="f1f3fc2fc9d8",
    ),
]
LEDGER += code_changes(
    "2026-11-29",
    "measure(), which decides every claim, now decides ipu-static-beats-dynamic on 95% and Bonferroni intervals "
    "(its entry above); these claims' statistic, rule, figure and the code that computes their values are "
    "unchanged, and re-deciding results/popsparse gives them identical values, details and verdicts "
    "(ipu-paper-table undecided, ipu-paper-figures fails, ipu-headline-crossover holds, "
    "ipu-crossover-falls-with-block holds), and identical facts and estimates",
    {
        "ipu-paper-table": "fbc9c83ec0fa",
        "ipu-paper-figures": "c5f88830ff55",
        "ipu-headline-crossover": "d00568c19625",
        "ipu-crossover-falls-with-block": "86a077ddfda0",
    },
    run=_REFERENCE,
)

# core.claims.sample_to_decide at the confidence of the interval shown (2026-11-29): results/popsparse re-decided
# identically
LEDGER += code_changes(
    "2026-11-29",
    "core.claims.sample_to_decide scales an undecided claim's sample at the confidence of the interval shown "
    "(ours), not the claim's declared one (PopSparse's ipu-static-beats-dynamic shows a Bonferroni interval when it "
    "leans to fail; its private Claim subclass that did this is gone). "
    "Only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/popsparse with it gave identical claims, facts, estimates and verdicts",
    {
        "ipu-paper-table": "1f034e69bb1a",
        "ipu-paper-figures": "ed3b4e292329",
        "ipu-static-beats-dynamic": "b288f104b551",
        "ipu-headline-crossover": "68b46d0349fd",
        "ipu-crossover-falls-with-block": "2e365cad9c6d",
    },
    run="results/popsparse",
)

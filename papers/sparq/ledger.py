"""Every change to the SparQ claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims lock
and carry no fingerprint: they were found in `git log -p -- papers/sparq/` and the README's history, with the verdict
last recorded under the old rule (old_rule where it can be evaluated on the present statistic, so the report shows
its verdict on every run)."""

from core.ledger import Change
from papers.sparq.claims import BPC_INCREASE, NEEDLE_KEPT, REPETITION_KEPT, _estimate_at_least, _estimate_at_most

_ISSUE_23 = "Issue 23 (claims that can fail)"
_CHARLM = "README row of commit 7484b79 (character LM, default run 2026-11-24)"

LEDGER: list[Change] = [
    # ------------------------------------------------------------------ 2026-11-24, commit 03a9f74 (issue 23)
    Change(
        "2026-11-24",
        "sparq-repetition",
        "respecified",
        old="ours >= 0.9 (SparQ / dense repetition score at 1/8, a point ratio)",
        new="estimate >= 0.8986 (the paper's own 186/207), paired-bootstrap interval reported",
        reason=f"{_ISSUE_23} named it: the paper's own SparQ (186/207 = 0.899) would fail 0.9; derive the threshold "
        "from the paper's numbers. A failing result had been seen (0.82 of dense); it still failed after.",
        old_rule=_estimate_at_least(0.9, "the old threshold"),
        old_verdict="fails (0.82 of dense)",
        commit="03a9f74",
        run="README row of commit 77020bf (character LM, default run 2026-11-22)",
    ),
    Change(
        "2026-11-24",
        "sparq-bpc",
        "respecified",
        old="ours <= 0.02 (SparQ / dense - 1 of BPC at 1/8, a point value)",
        new="estimate <= 0.0156 (the paper's own 0.782/0.770 - 1), paired-bootstrap interval reported",
        reason=f"{_ISSUE_23}: thresholds from the paper's own figures. The result under the old rule had been seen "
        "(it held, +0.73%); it held under the new one too.",
        old_rule=_estimate_at_most(0.02, "the old threshold"),
        old_verdict="holds (+0.73%)",
        commit="03a9f74",
        run="README row of commit 77020bf (character LM, default run 2026-11-22)",
    ),
    *[
        Change(
            "2026-11-24",
            f"sparq-beats-{name}",
            "respecified",
            old="is_true: higher mean repetition score and lower mean BPC than the baseline (point means)",
            new="is_true: the score gain's 95% paired-bootstrap interval above 0 and the BPC difference's below 0",
            reason=f"{_ISSUE_23}: decide on the paired examples' spread, not on two means. The result had been "
            "seen (it failed on BPC: the small character LM was itself worse than its local window).",
            old_verdict="fails (SparQ wins the repetition task by far but loses on BPC)",
            commit="03a9f74",
            run="README row of commit 77020bf (character LM, default run 2026-11-22)",
        )
        for name in ("h2o", "local")
    ],
    Change(
        "2026-11-24",
        "transfer-formula",
        "respecified",
        old="is_true: the instrumented transfer equals the paper's formulas at every cache length checked",
        new="|ours - paper| <= 0: the timed kernel's transfer counted from its traced program equals the formula",
        reason=f"{_ISSUE_23} named it: arithmetic on shapes checked against the same arithmetic; count it from the "
        "compiled program or move it out of the claims. It held before and after.",
        old_verdict="holds",
        commit="03a9f74",
        run="README row of commit 77020bf (default run 2026-11-22)",
    ),
    Change(
        "2026-11-24",
        "decode-speed",
        "respecified",
        old="ours >= 3.0: dense / SparQ decode-step time at S=16384, r=16, k=128 (1/14 of the dense transfer), one "
        "timing",
        new="interval_above(3.0): median of interleaved, warmed timing rounds with a bootstrap interval, at the "
        "quality claims' 1/8 operating point (S=16384: r=16, k=1024)",
        reason=f"{_ISSUE_23} named it: the speed claim ran at 1/14 of the transfer while every quality claim is at "
        "1/8; time at the operating point the claim names. The result under the old rule had been seen (it held, "
        "4.7x).",
        old_verdict="holds (4.7x)",
        commit="03a9f74",
        run="README row of commit 77020bf (default run 2026-11-22)",
    ),
    # ------------------------------------------------------------------ 2026-11-24, commit 59a7171 (SmolLM2)
    Change(
        "2026-11-24",
        "decode-speed",
        "respecified",
        old="interval_above(3.0) at S=16384, r=16, k=1024 (the quality claims' 1/8 rule)",
        new="interval_above(3.0) at S=16384, r=32, k=128 (0.133 of the dense transfer: the paper's IPU operating "
        "point, theory 7.5x)",
        reason="Commit 59a7171: 'Decode step timed at the paper's S=16384, r=32, k=128 point' (r and k as the "
        "project's issue tracker states them; REFERENCES.md, timing operating point). Changed after a failing "
        "result had been seen at r=16, k=1024 (1.19x [1.09, 1.42], theory 8.0x: XLA's CPU top-1024 alone took 11.6 "
        "of SparQ's 27.8 ms). At the new point: 3.10x [2.71, 3.58], undecided under three verdicts.",
        old_verdict="fails (1.19x [1.09, 1.42])",
        commit="7484b79",
        run="README row of commit 7484b79 (default run 2026-11-24)",
    ),
    *[
        Change(
            "2026-11-24",
            cid,
            "respecified",
            old=f"{rule} on the character LM trained here (sparq.lm=charlm, 2 layers)",
            new=f"{rule} on the pretrained SmolLM2-135M (sparq.lm=smollm2, 512-token contexts)",
            reason="Commit 59a7171 moved the default LM to SmolLM2-135M (the character LM stays for the smoke "
            "tests): its copying was fragile and its BPC worse than its own local window's (README). The rule did "
            f"not change; the model it is decided on did, after the character LM's results had been seen ({seen}).",
            old_verdict=verdict,
            commit="59a7171",
            run=_CHARLM,
        )
        for cid, rule, verdict, seen in (
            ("sparq-repetition", "estimate >= 0.8986", "fails (0.82 [0.65, 0.95])", "failing"),
            ("sparq-bpc", "estimate <= 0.0156", "holds (+0.73% [-0.07, +1.54])", "holding"),
            ("sparq-beats-h2o", "score gain > 0 and BPC drop < 0 (intervals)", "fails (loses on BPC)", "failing"),
            ("sparq-beats-local", "score gain > 0 and BPC drop < 0 (intervals)", "fails (loses on BPC)", "failing"),
        )
    ],
    # ------------------------------------------------------------------ 2026-11-25, issue 41
    Change(
        "2026-11-25",
        "transfer-formula",
        "removed",
        old="|ours - paper| <= 0: the timed kernel's counted transfer equals the paper's formula",
        new="-",
        reason="Issue 41: our kernel checked against our own formula holds by construction of the kernel; a test, "
        "with the counted transfer shown as an analytic fact.",
        old_verdict="holds (557,696 elements, 0.133 of dense)",
        commit="59a7171",
        run="README row of commit 59a7171 (default run 2026-11-24)",
        moved_to="tests/papers/sparq/test_transfer.py::test_timed_kernels_move_the_papers_transfer and fact "
        "transfer-counted (analytic)",
    ),
    Change(
        "2026-11-25",
        "sparq-repetition",
        "respecified",
        old=f"estimate >= {REPETITION_KEPT:.4f}: our point estimate must reach the paper's point value",
        new=f"ours >= {REPETITION_KEPT:.4f} on the whole 95% interval: holds when all of it is at or above the "
        "paper's share, fails when all of it is below, undecided otherwise",
        reason="Issue 41: decided against the paper's point value, a faithful replication fails about half the "
        "time. Results had been seen (0.21 [0.17, 0.24]: fails under both rules).",
        old_rule=_estimate_at_least(REPETITION_KEPT, "the paper's 186/207"),
        fingerprint="a45289e4113e",
    ),
    Change(
        "2026-11-25",
        "sparq-bpc",
        "respecified",
        old=f"estimate <= {BPC_INCREASE:.4f}: our point estimate must stay within the paper's point value",
        new=f"ours <= {BPC_INCREASE:.4f} on the whole 95% interval: holds when all of it is at or below the paper's "
        "increase, fails when all of it is above, undecided otherwise",
        reason="Issue 41: decided against the paper's point value, a faithful replication fails about half the "
        "time. Results had been seen (+27% [+22, +33]: fails under both rules).",
        old_rule=_estimate_at_most(BPC_INCREASE, "the paper's 0.782/0.770 - 1"),
        fingerprint="21c703450ac8",
    ),
    Change(
        "2026-11-25",
        "sparq-needle",
        "respecified",
        old=f"estimate >= {NEEDLE_KEPT:.4f}: our point estimate must reach the paper's SQuAD share",
        new=f"ours >= {NEEDLE_KEPT:.4f} on the whole 95% interval: holds when all of it is at or above the paper's "
        "share, fails when all of it is below, undecided otherwise (the SQuAD stand-in stays: a later issue)",
        reason="Issue 41: decided against the paper's point value, a faithful replication fails about half the "
        "time. Results had been seen (0.89 [0.82, 0.98]: failed on the estimate, undecided on the interval).",
        old_rule=_estimate_at_least(NEEDLE_KEPT, "the paper's SQuAD 0.727/0.769"),
        fingerprint="1d5a96952f62",
    ),
]

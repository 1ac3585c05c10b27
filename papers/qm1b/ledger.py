"""Every change to the QM1B claims (core/ledger.py), oldest first.

History (git log -p papers/qm1b/report.py README.md): the SchNet scaling claims were decided on one seed until
2026-11-24 (fae6d2c, issue 23), when "falls monotonically" became a slope with its interval over 3 seeds, relative
to the mean predictor, and "the gap is smaller at the largest size" became a slope too (`beats-mean-predictor` was
added then). Issue 41 (2026-11-25): `gap-accuracy` cannot fail (a 43 meV threshold where ~0.1 meV is measured) and
becomes a fact; the accuracy is held by a slow test.
"""

from core.ledger import Change

_ONE_SEED_RUN = "README row of commit 757875f (default run of 2026-11-23, 12.7 min, one seed: 4 of 4 claims hold)"
_LAST_RUN = "README row of commit f1dfc0f (default run of 2026-11-25, 13.3 min: 5 of 5 claims hold)"
_ISSUE23 = (
    "Issue 23 (asked for): a trend decided on one seed; QM1B's SchNet scaling to run >= 3 seeds, report error bars "
    "and state the claim relative to the mean predictor. Re-specified after a result had been seen: the one-seed "
    "rule held in the README row of 757875f."
)

LEDGER: list[Change] = [
    Change(
        "2026-11-24",
        "valid-mae-falls",
        "respecified",
        old="is_true('every step down'): SchNet validation MAE falls monotonically with the number of training "
        "conformers (one seed, each size below the one before)",
        new="interval high < 0: least-squares slope of validation MAE / mean predictor's MAE against "
        "ln(conformers), every (size, seed), 95% t interval",
        reason=_ISSUE23 + " The old rule needs one MAE per size, the new statistic is a slope over seeds: the old "
        "rule cannot be evaluated on a new run.",
        old_verdict="holds (1658 -> 937 -> 868 -> 844 meV for 16 -> 500 conformers; mean predictor 1648)",
        commit="757875f",
        run=_ONE_SEED_RUN,
    ),
    Change(
        "2026-11-24",
        "gap-narrows",
        "respecified",
        old="is_true('smaller at the largest size than at the smallest'): validation - training MAE (one seed)",
        new="interval high < 0: least-squares slope of validation - training MAE (meV) against ln(conformers), "
        "every (size, seed), 95% t interval",
        reason=_ISSUE23 + " Changed in the same commit as valid-mae-falls (fae6d2c); the issue 41 list names "
        "only valid-mae-falls, recorded here so that both stay visible.",
        old_verdict="holds (train/valid gap 1658 -> 515 meV)",
        commit="757875f",
        run=_ONE_SEED_RUN,
    ),
    Change(
        "2026-11-25",
        "gap-accuracy",
        "removed",
        old="ours <= 43 (max |gap error| of the validated rows against converged PySCF, meV)",
        new="-",
        reason="Issue 41: cannot fail. Chemical accuracy (43 meV) is ~500 times the measured error (0.090 meV in "
        "the last default run), so the threshold never binds. The measured maximum stays in the report as a fact "
        "(kind construction); the float32 labels' accuracy itself is held by the slow test "
        "tests/papers/qm1b/test_dft.py::test_float32_on_12_held_out_qm9_molecules (gaps within 0.1 meV, energies "
        "within 1 meV of converged PySCF on 12 QM9 molecules of 9 heavy atoms). Decided on the issue's reading of "
        "the threshold, not on a new result.",
        old_verdict="holds (0.090 meV)",
        commit="f1dfc0f",
        run=_LAST_RUN,
        moved_to="fact gap-accuracy (construction); test "
        "tests/papers/qm1b/test_dft.py::test_float32_on_12_held_out_qm9_molecules",
    ),
    *[
        Change(
            date="2026-11-25",
            claim=claim,
            kind="code",
            old="the detail's 'mean +- std' text written by papers/qm1b/claims._mean_std",
            new="the same text from core.report.mean_std(values, '.0f')",
            reason="issue 42: the mean +- std formatter, written in three papers, moved to core.report.mean_std (the "
            "same numpy mean and ddof=1 std, no decimals); the computation unchanged: only the detail text uses it, "
            "and it reads the same.",
            fingerprint=fingerprint,
        )
        for claim, fingerprint in (
            ("valid-mae-falls", "1b3c41857133"),
            ("beats-mean-predictor", "d39e44370f5f"),
            ("gap-narrows", "4f413a810a8e"),
        )
    ],
]

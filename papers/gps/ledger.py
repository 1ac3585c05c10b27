"""Every change to the GPS++ claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims
lock: they carry no fingerprint, and say when and why a rule moved and the verdict last recorded under the old one."""

from core.claims import at_least, at_most, interval_below
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

LEDGER: list[Change] = [
    Change(
        date="2026-11-24",
        claim="mpnn-keeps-accuracy",
        kind="respecified",
        old="ours <= 0.1: relative validation MAE increase of MPNN only over full GPS++, one training seed per arm "
        "(the 10% bound was the issue's wording)",
        new="interval high < 0.1028: 95% Welch interval of the seed-mean relative increase over 3 seeds per arm, "
        "below GPS++'s margin over GPS (85.8 / 77.8 meV - 1, REFERENCES.md [mpnn-threshold])",
        reason="Commit c626c9c (issue 23): decide the ablations on the spread of >= 3 seeds and show the paper's "
        "statement, not our tolerance, in the paper column; the bound became the paper-derived 10.3%. A result had "
        "been seen: the README row of commit 0a3a334 recorded MPNN only +4.0% (holds, one seed) and issue 23 a "
        "clean re-run at +6.5%. The old rule is evaluated here on the present interval (only the bound moved: "
        "10% -> 10.3%, and the point became an interval).",
        old_rule=at_most(0.10),
        old_verdict="holds (+4.0%: 214.8 vs 206.5 meV, one seed)",
        commit="0a3a334",
        run="README row of commit 0a3a334 (default run of 2026-11-23)",
    ),
    Change(
        date="2026-11-24",
        claim="3d-costs-more",
        kind="respecified",
        old="3D cost exceeds attention cost by at least 5% of full GPS++'s MAE: (MAE no 3D - MAE MPNN only) / MAE "
        "full >= 0.05, one training seed per arm, no-3D arm trained with grouped masking",
        new="interval low > 0: 95% Welch interval of (MAE no 3D - MAE MPNN only) / MAE full over 3 seeds per arm, "
        "no-3D arm trained without grouped masking (it removes the 3D features alone)",
        reason="Commit c626c9c (issue 23): the no-3D arm kept grouped masking, so 60% of its training molecules lost "
        "shortest paths too; every ablation arm runs >= 3 seeds and the claim is decided on the mean difference "
        "against the seed spread, the 5% margin ('clearly more') replaced by the interval lying above 0. A result "
        "had been seen: the claim had failed in the README row of commit 0a3a334 (no 3D +1.4%, MPNN only +4.0%). "
        "The old 5% bound is evaluated here on the present interval (its estimate is the old statistic).",
        old_rule=at_least(0.05),
        old_verdict="fails (no 3D +1.4% vs MPNN only +4.0% over full: -2.6%, one seed)",
        commit="0a3a334",
        run="README row of commit 0a3a334 (default run of 2026-11-23)",
    ),
    Change(
        date="2026-11-25",
        claim="parameters-44m",
        kind="removed",
        old="ours <= 0.01: |total parameters of the gps++_44m preset / 44.3M - 1|, every part within 5% of Table 1",
        new="-",
        reason="Issue 41: the gps++_44m preset was built to match Table 1 (its widths and depths chosen so that its "
        "parts reach the table's counts), so the count is a calibration, not a finding; it holds by construction. "
        "Last recorded: holds (44.41M against 44.3M, every part within 1%; README rows since commit 0a3a334).",
        moved_to="fact parameters-44m (calibration): the measured parameter count beside Table 1's 44.3M",
    ),
    Change(
        date="2026-11-25",
        claim="mpnn-keeps-accuracy",
        kind="respecified",
        old="decision labelled superiority",
        new="decision labelled non-inferiority (rule unchanged: interval high < 0.1028)",
        reason="Issue 41 review: MPNN-only 'keeps nearly all' of GPS++'s accuracy is a non-inferiority claim (the "
        "MAE gap stays under a margin); interval_below's default label said superiority. Label only: "
        "statistic, margin and verdicts unchanged.",
        old_rule=interval_below(0.0858 / 0.0778 - 1),  # the same rule: only its label changed
        fingerprint="2dd28b75e901",
    ),
    Change(
        date="2026-11-25",
        claim="mpnn-keeps-accuracy",
        kind="code",
        old="the detail's 'mean +- std' text written by papers/gps/claims.mean_std",
        new="the same text from core.report.mean_std(values, '.1f')",
        reason=(
            "issue 42: the mean +- std formatter, written in three papers, moved to "
            "core.report.mean_std (the same numpy mean and ddof=1 std, one decimal); the computation "
            "unchanged: only the detail text uses it, and it reads the same."
        ),
        fingerprint="22e91c8792f1",
    ),
    Change(
        date="2026-11-25",
        claim="3d-costs-more",
        kind="code",
        old="the detail's 'mean +- std' text written by papers/gps/claims.mean_std",
        new="the same text from core.report.mean_std(values, '.1f')",
        reason=(
            "issue 42: the mean +- std formatter, written in three papers, moved to "
            "core.report.mean_std (the same numpy mean and ddof=1 std, one decimal); the computation "
            "unchanged: only the detail text uses it, and it reads the same."
        ),
        fingerprint="390b911515d2",
    ),
    # Issue 45: the arms share each training seed (initialisation of the modules they share, dropout, packing order,
    # masking groups and noise) and the claims are decided on the per-seed paired differences, 6 seeds x 1500 steps
    # where the README's runs had 3 unpaired seeds per arm x 1000 steps; the no-3D arm is compared with full GPS++
    # trained, like it, without masking. Results had been seen: the README row of commit ad177f0 (default run of
    # 2026-11-26) and a pilot of the new design (8 seeds, papers/gps/README.md), made after the rules below were
    # written; the margins are those of the entries above, from the paper.
    Change(
        date="2026-11-26",
        claim="mpnn-keeps-accuracy",
        kind="respecified",
        old="interval high < 0.1028: 95% Welch interval of (mean MAE MPNN only - mean MAE full) / mean MAE full, 3 "
        "unpaired seeds per arm x 1000 steps",
        new="interval high < 0.1028: 95% t interval of the mean over seeds of MAE MPNN only / MAE full - 1, the two "
        "arms paired by seed (shared initialisation, dropout, batches and masks), 6 seeds x 1500 steps",
        reason="issue 45: at 3 seeds Welch's interval has ~2.2 degrees of freedom, so even a zero difference gave an "
        "upper bound near the margin and reruns of one design flipped the verdict; paired seeds remove the spread "
        "the arms share, and the pilot's paired sd (1.8%) sets the seeds (6). The margin is unchanged. The old "
        "statistic is not computed on the new runs (unpaired means), so its last verdict is recorded.",
        old_verdict="holds (+3.1% [-2.8, +9.0], Welch, 3 seeds per arm x 1000 steps)",
        commit="ad177f0",
        run="README row of commit ad177f0 (default run of 2026-11-26, outputs/gps/2026-11-26_00-41-29)",
        fingerprint="d983f5c433db",
    ),
    Change(
        date="2026-11-26",
        claim="3d-costs-more",
        kind="respecified",
        old="interval low > 0: 95% Welch interval of (mean MAE no 3D - mean MAE MPNN only) / mean MAE full, 3 "
        "unpaired seeds per arm x 1000 steps; no 3D trained unmasked, full and MPNN only masked",
        new="interval low > 0: 95% t interval of the mean over seeds of (MAE no 3D / MAE full unmasked - 1) - (MAE "
        "MPNN only / MAE full - 1), all four arms paired by seed, 6 seeds x 1500 steps; each ablation against a "
        "comparator trained with the same masking (no 3D and full unmasked: none; MPNN only and full: grouped)",
        reason="issue 45: the no-3D arm trained unmasked while its comparator trained masked, so the 3D contrast also "
        "carried the effect of masking; the new arm full_unmasked is its masking-matched comparator. Decided on "
        "paired seeds as mpnn-keeps-accuracy; the pilot's paired sd (2.6%) needs 4 seeds, the design has 6. The "
        "margin (0) is unchanged.",
        old_verdict="fails (-4.5% [-7.4, -1.6], Welch, 3 seeds per arm x 1000 steps)",
        commit="ad177f0",
        run="README row of commit ad177f0 (default run of 2026-11-26, outputs/gps/2026-11-26_00-41-29)",
        fingerprint="0f29b417b166",
    ),
    *code_changes(
        "2026-11-28",
        "issue 57: decided from the stored Results (run -> Results -> decide -> render): each claim's measuring "
        "function reads the typed Results (papers/gps/results.py) instead of the run's dict, so a change to how a "
        "claim is decided or shown is re-decided without re-running; the statistic, rule and figure are unchanged, and "
        "the smoke run's values are identical",
        {
            "mpnn-keeps-accuracy": "47f4a892f491",
            "3d-costs-more": "ba1f7c3de68e",
            "packing-efficiency": "542f0f4cc6ef",
        },
    ),
    *code_changes(
        "2026-11-28",
        "issue 57's demonstration: a decision helper written in several papers moved into core.stats, decided "
        "again from the stored Results without training. The per-seed relative MAE gap arm / comparator - 1 "
        "is now core.stats.relative_gaps; the statistic, rule and intervals are unchanged, and every claim's "
        "value and verdict on the smoke fixture's Results is identical to the old code's. The estimates now also "
        "hold one seed's gap (a number), which the report computed itself before and now shows from the decision",
        {
            "mpnn-keeps-accuracy": "cca0cfedac51",
            "3d-costs-more": "27176631798e",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "mpnn-keeps-accuracy": "f51489c9cb6e",
        "3d-costs-more": "c2ea4996342d",
        "packing-efficiency": "244e791e4ab4",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "mpnn-keeps-accuracy": "22bb4c8bf955",
        "3d-costs-more": "2af2ff19a359",
        "packing-efficiency": "62b2423138ce",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    "the claims API's JSON helper became public (core.claims._jsonable -> jsonable, issue 60: one import "
    "path for the claims API and no private name used across modules); no declaration, statistic or rule "
    "changed. There is no reference record to re-decide (results/pending.yaml says why)",
    {
        "mpnn-keeps-accuracy": "2b143107661e",
        "3d-costs-more": "51e78cae265e",
        "packing-efficiency": "36a35ee4021c",
    },
)

# automatic entry (2026-11-29): decision code changed, re-decided results/gps identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/gps with it gave identical claims, facts, estimates and verdicts; written by "
    '`make claims ARGS="lock gps"`',
    {
        "packing-efficiency": "b998c9620a56",
    },
    run="results/gps",
)

# Issue 62: every claim says where its figure and margin come from and the sample behind its interval; a claim that
# cannot fail at its design leaves the claims. Results had been seen: the reference run of 2026-11-29 (results/gps,
# commit ab352b8: mpnn-keeps-accuracy holds, 3d-costs-more fails, packing-efficiency holds) and every earlier run
# listed in papers/gps/README.md.
LEDGER += [
    Change(
        date="2026-11-29",
        claim="packing-efficiency",
        kind="removed",
        old="ours >= 0.85: share of node slots used by the packed training batches (paper 0.87, [TR] Sec. 4, p. 7)",
        new="-",
        reason="issue 62: it could not fail at this design. The share is deterministic, our packer's arithmetic on "
        "QM9's molecule sizes (nearly all 8-9 heavy atoms) under 60 nodes / 120 edges / 8 molecules per pack: about "
        "six molecules of ~9 atoms fill 60 slots to ~0.87-0.9, and it was 0.8729 in every run. The paper's 87% is "
        "on PCQM4Mv2 (1-51 atoms), so the agreement is one of the limits, not a reproduction. It stays in the "
        "report as an analytic fact with its value beside the paper's. Verdict: holds -> fact (not counted).",
        old_verdict="holds (0.8729 of node slots, edges 93.5%, 5.95 molecules per pack)",
        commit="ab352b8",
        run="results/gps (reference run of 2026-11-29)",
        moved_to="fact packing-efficiency (analytic), papers/gps/claims.py packing_fact",
    ),
]
LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels only (rule, figure, statistic and seeds unchanged): figure_source, margin_source and the "
    "sample (n = 6 paired training seeds). mpnn-keeps-accuracy: figure paper ([P] abstract, read), margin ours (the "
    "10.28% is the project's reading of 'nearly all' from [TR] Table 3's GPS and GPS++ MAEs); verdict unchanged "
    "(holds). 3d-costs-more: figure secondary (the project's notes' summary '3D information is the larger gain'; "
    "[P]'s ablation table was not read and its abstract does not say it), margin ours (0), so its verdict moves "
    "fails -> unverified (rule: fails): a fail no longer counted, which favours the paper's side of the count; the "
    "README shows it and every run of it",
    {
        "mpnn-keeps-accuracy": "e6945ac25094",
        "3d-costs-more": "1e1da2c9920e",
    },
)

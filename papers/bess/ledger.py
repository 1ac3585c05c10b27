"""Every change to the BESS claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims lock:
they carry no fingerprint, and say when and why a rule moved and the verdict last recorded under the old one.

One module over 400 lines: a ledger is data, one entry per change, appended and never edited or generated."""

from core.claims import at_least, at_most, printed
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

# Literal values, not read from claims.py: the history must not move when the claims do
SLACK = 0.05  # "within 0.05 of the literature MRR, or better" (issue 12)

# The README row of commit fdd5b22 (default run of 2026-11-23), under the literature values used before issue 23
OLD_README = "README row of commit fdd5b22 (default run of 2026-11-23)"

HISTORY = [
    Change(
        date="2026-11-24",
        claim="mrr-nations-rotate",
        kind="respecified",
        old="ours >= 0.666 (literature 0.716 - 0.05); RotatE trained with the sampled-softmax loss shared by every "
        "scorer (its margin gamma inert under the shift-invariant softmax), hyperparameters shared across graphs, the "
        "last step's parameters kept",
        new="ours >= 0.6655 (literature 0.7155 - 0.05, L4); RotatE trained with its own paper's log-sigmoid loss "
        "with self-adversarial negatives (R1), gamma chosen per graph on validation, the best-validation checkpoint "
        "kept",
        reason="Commit 8200c75 (issue 23): the recipe changed after RotatE on Nations had failed at 0.615 (a result "
        "had been seen): issue 23 found gamma inert under the sampled softmax, hyperparameters shared across graphs "
        "and validation MRR still rising at the last step, and asked for RotatE's own recipe, best-validation "
        "checkpoints and cited literature values (0.716 -> 0.7155, L1's table). The statistic is another model's "
        "MRR, so the old rule's verdict is the one last recorded.",
        old_verdict="fails (0.615)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-nations-transe",
        kind="respecified",
        old=f"ours >= {round(0.481 - SLACK, 6):g} (literature 0.481 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.4813 - SLACK, 6):g} (literature 0.4813 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (TransE 0.479). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.481 - SLACK, 6)),
        old_verdict="holds (TransE 0.479)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-nations-distmult",
        kind="respecified",
        old=f"ours >= {round(0.713 - SLACK, 6):g} (literature 0.713 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.7131 - SLACK, 6):g} (literature 0.7131 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (DistMult 0.786). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.713 - SLACK, 6)),
        old_verdict="holds (DistMult 0.786)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-nations-complex",
        kind="respecified",
        old=f"ours >= {round(0.668 - SLACK, 6):g} (literature 0.668 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.6677 - SLACK, 6):g} (literature 0.6677 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (ComplEx 0.741). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.668 - SLACK, 6)),
        old_verdict="holds (ComplEx 0.741)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-kinships-complex",
        kind="respecified",
        old=f"ours >= {round(0.762 - SLACK, 6):g} (literature 0.762 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.823 - SLACK, 6):g} (literature 0.823 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (ComplEx 0.828). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.762 - SLACK, 6)),
        old_verdict="holds (ComplEx 0.828)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-umls-distmult",
        kind="respecified",
        old=f"ours >= {round(0.739 - SLACK, 6):g} (literature 0.739 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.878 - SLACK, 6):g} (literature 0.878 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (DistMult 0.892). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.739 - SLACK, 6)),
        old_verdict="holds (DistMult 0.892)",
        commit="fdd5b22",
        run=OLD_README,
    ),
    Change(
        date="2026-11-24",
        claim="mrr-umls-complex",
        kind="respecified",
        old=f"ours >= {round(0.749 - SLACK, 6):g} (literature 0.749 - {SLACK:g}, the project's earlier notes)",
        new=f"ours >= {round(0.838 - SLACK, 6):g} (literature 0.838 - {SLACK:g}, REFERENCES.md)",
        reason=(
            "Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the "
            "strongest published value; the target moved with the source (Nations: L1's table's fourth "
            "digit; Kinships ComplEx and UMLS: the earlier values could not be traced). A result had "
            "been seen: the claim held under the old value (ComplEx 0.864). Only the threshold moved: "
            "the old rule is evaluated on each run."
        ),
        old_rule=at_least(round(0.749 - SLACK, 6)),
        old_verdict="holds (ComplEx 0.864)",
        commit="fdd5b22",
        run=OLD_README,
    ),
]


NOW = [
    Change(
        date="2026-11-25",
        claim="table-memory-1-over-n",
        kind="removed",
        old="ours <= 0.01: max over meshes of |n x per-device entity-table bytes (arguments + outputs of the "
        "compiled step) / one device's - 1|",
        new="-",
        reason="Issue 41: it restates our own arithmetic: the entity table is sharded into n equal shards, so the "
        "compiled step's argument and output bytes per device are the table's shape / n by construction; XLA's "
        "memory analysis can only confirm it. Last recorded: holds (146.5 -> 18.3 MiB per device from 1 to 8 "
        "devices, README row of commit 7484b79).",
        moved_to="fact table-memory-1-over-n (analytic)",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-nations-transe",
        kind="respecified",
        old=f"ours >= {round(float('0.4813') - SLACK, 6):g} (the literature value 0.4813 as an exact point)",
        new=(
            f"ours >= {round(printed('0.4813').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.4813: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.4813") - SLACK, 6)),
        fingerprint="5bd3652b6cd9",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-nations-distmult",
        kind="respecified",
        old=f"ours >= {round(float('0.7131') - SLACK, 6):g} (the literature value 0.7131 as an exact point)",
        new=(
            f"ours >= {round(printed('0.7131').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.7131: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.7131") - SLACK, 6)),
        fingerprint="1cbbd03988ce",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-nations-complex",
        kind="respecified",
        old=f"ours >= {round(float('0.6677') - SLACK, 6):g} (the literature value 0.6677 as an exact point)",
        new=(
            f"ours >= {round(printed('0.6677').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.6677: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.6677") - SLACK, 6)),
        fingerprint="f45a95800dd5",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-nations-rotate",
        kind="respecified",
        old=f"ours >= {round(float('0.7155') - SLACK, 6):g} (the literature value 0.7155 as an exact point)",
        new=(
            f"ours >= {round(printed('0.7155').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.7155: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.7155") - SLACK, 6)),
        fingerprint="92ed07f284ec",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-kinships-distmult",
        kind="respecified",
        old=f"ours >= {round(float('0.640') - SLACK, 6):g} (the literature value 0.640 as an exact point)",
        new=(
            f"ours >= {round(printed('0.640').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.640: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.640") - SLACK, 6)),
        fingerprint="3310937f2489",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-kinships-complex",
        kind="respecified",
        old=f"ours >= {round(float('0.823') - SLACK, 6):g} (the literature value 0.823 as an exact point)",
        new=(
            f"ours >= {round(printed('0.823').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.823: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.823") - SLACK, 6)),
        fingerprint="183dded8b776",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-umls-distmult",
        kind="respecified",
        old=f"ours >= {round(float('0.878') - SLACK, 6):g} (the literature value 0.878 as an exact point)",
        new=(
            f"ours >= {round(printed('0.878').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.878: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.878") - SLACK, 6)),
        fingerprint="c5ef1a163691",
    ),
    Change(
        date="2026-11-25",
        claim="mrr-umls-complex",
        kind="respecified",
        old=f"ours >= {round(float('0.838') - SLACK, 6):g} (the literature value 0.838 as an exact point)",
        new=(
            f"ours >= {round(printed('0.838').low - SLACK, 6):g} (the literature value as "
            f"printed, 0.838: its lowest reading - {SLACK:g}); decision named non-inferiority "
            "(it was labelled superiority)"
        ),
        reason=(
            "Issue 41: a figure printed to a few digits is every value that rounds to it; the target "
            "is compared as printed(...), which lowers the bound by half a unit of its last digit; "
            "'within 0.05, or better' is a non-inferiority margin, and the rule now names it so. Made "
            "without a new run; every MRR of the README's recorded run (2026-11-24) holds under both "
            "bounds, so no recorded verdict moves. The old rule is evaluated on each run."
        ),
        old_rule=at_least(round(float("0.838") - SLACK, 6)),
        fingerprint="069ddd7304a0",
    ),
]

REVIEW = [
    Change(
        date="2026-11-25",
        claim="bess-equals-single-device",
        kind="respecified",
        old="decision labelled non-inferiority",
        new="decision labelled equivalence (rule unchanged: max |BESS - single device| <= tol)",
        reason="Issue 41 review: BESS 'equals' single-device training, an equivalence claim decided on the largest "
        "absolute difference; at_most's default label said non-inferiority. Label only: statistic, tolerance "
        "and verdicts unchanged.",
        old_rule=at_most(1e-5),  # the same rule: only its label changed
        fingerprint="23fe971fb55f",
    ),
]

# Issue 45 (2026-11-26): every MRR claim decided on a t interval over 5 training seeds (it was one seed's point
# value), the literature figures without a primary table labelled unverified, and the 2x floor claim restated
# against the literature's own margin. The verdicts last recorded under the old rules are the README row of commit
# cc441f2 (the default run of 2026-11-26, commit 04448ef, 1 seed), which had been seen.
ISSUE_45_RUN = "README row of commit cc441f2 (default run of 2026-11-26, 1 seed)"
# (graph, model): (bound of the issue-41 rule, our MRR in that run, the new fingerprint)
ISSUE_45 = {
    ("nations", "transe"): (0.43125, 0.4964, "9ac4b370b758"),
    ("nations", "distmult"): (0.66305, 0.7999, "6bb3f0de8bee"),
    ("nations", "complex"): (0.61765, 0.7564, "98d48ec6d306"),
    ("nations", "rotate"): (0.66545, 0.6684, "7edc21ca807c"),
    ("kinships", "distmult"): (0.5895, 0.6636, "6ebb7774610d"),
    ("kinships", "complex"): (0.7725, 0.8335, "33915164e43f"),
    ("umls", "distmult"): (0.8275, 0.8983, "4d0dd7829563"),
    ("umls", "complex"): (0.7875, 0.8732, "9aa2f96adffd"),
}
UNVERIFIED_45 = {("kinships", "distmult"), ("kinships", "complex"), ("umls", "distmult"), ("umls", "complex")}

ISSUE_45_CHANGES = [
    Change(
        date="2026-11-26",
        claim="mrr-nations-transe",
        kind="respecified",
        old="ours >= 0.43125, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.43125: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("nations", "transe") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("nations", "transe") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.4964).",
        old_verdict="holds (0.4964)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="9ac4b370b758",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-distmult",
        kind="respecified",
        old="ours >= 0.66305, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.66305: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("nations", "distmult") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("nations", "distmult") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.7999).",
        old_verdict="holds (0.7999)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="6bb3f0de8bee",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-complex",
        kind="respecified",
        old="ours >= 0.61765, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.61765: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("nations", "complex") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("nations", "complex") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.7564).",
        old_verdict="holds (0.7564)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="98d48ec6d306",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-rotate",
        kind="respecified",
        old="ours >= 0.66545, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.66545: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("nations", "rotate") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("nations", "rotate") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.6684).",
        old_verdict="holds (0.6684)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="7edc21ca807c",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-kinships-distmult",
        kind="respecified",
        old="ours >= 0.5895, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.5895: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("kinships", "distmult") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("kinships", "distmult") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.6636).",
        old_verdict="holds (0.6636)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="6ebb7774610d",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-kinships-complex",
        kind="respecified",
        old="ours >= 0.7725, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.7725: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("kinships", "complex") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("kinships", "complex") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.8335).",
        old_verdict="holds (0.8335)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="33915164e43f",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-umls-distmult",
        kind="respecified",
        old="ours >= 0.8275, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.8275: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("umls", "distmult") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("umls", "distmult") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.8983).",
        old_verdict="holds (0.8983)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="4d0dd7829563",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-umls-complex",
        kind="respecified",
        old="ours >= 0.7875, ours = the test MRR of one training seed (a point value)",
        new=(
            "the 95% t interval over 5 training seeds (each a full replicate of the recipe) of the "
            "test MRR >= 0.7875: holds above, fails below, undecided straddling"
        )
        + (
            "; the literature figure has no primary table: verdict 'unverified', the rule's beside"
            if ("umls", "complex") in UNVERIFIED_45
            else ""
        ),
        reason=(
            "issue 45: one seed decided claims whose distance from the bound is inside the noise "
            "(RotatE on Nations 0.668 against 0.6655, where Nations' 201 test triples alone give a "
            "standard error of ~0.02, and only after its recipe changed following a failure: the "
            "2026-11-24 entry); the bound is unchanged, the statistic is now the mean over 5 seeds "
            "with its t interval (the test split is the literature's own, so its sampling error is "
            "reported beside, not in the interval)"
        )
        + (
            (
                "; the literature figure could not be found in a primary table (REFERENCES.md L5-L8), so "
                "the claim is labelled unverified and counts neither way"
            )
            if ("umls", "complex") in UNVERIFIED_45
            else ""
        )
        + ". The one-seed result had been seen (0.8732).",
        old_verdict="holds (0.8732)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        fingerprint="9aa2f96adffd",
    ),
    Change(
        date="2026-11-26",
        claim="beats-random-floor",
        kind="removed",
        old="ours >= 2, ours = the smallest ratio over (graph, model) of one seed's test MRR to the exact expected "
        "filtered MRR of a random ranking",
        new="claim beats-random-floor-as-literature",
        reason="issue 45: unreachable by construction: the factor 2 was issue 12's wording, not a figure of any "
        "paper, and the literature's own TransE on Nations (L1, 0.4813) is 1.25x the filtered floor (0.384), so a "
        "reproduction matching the literature fails it. Results had been seen (1.29x, TransE on Nations).",
        old_verdict="fails (1.291)",
        commit="cc441f2",
        run=ISSUE_45_RUN,
        moved_to="claim beats-random-floor-as-literature",
    ),
    Change(
        date="2026-11-26",
        claim="beats-random-floor-as-literature",
        kind="added",
        old="",
        new="the smallest ratio over every trained (graph, model) of our test MRR (5 seeds, 95% t intervals) to the "
        "exact filtered random-ranker MRR >= the literature's smallest ratio among its verified figures (TransE on "
        "Nations, L1: 0.4813 / 0.3844 = 1.252) with its MRR less the 0.05 slack of the MRR claims: (0.48125 - "
        "0.05) / 0.3844 = 1.122",
        reason="issue 45: replaces beats-random-floor (removed above) with a margin derived from the literature's "
        "numbers, fixed before the 5-seed run; the one-seed ratio (1.29x, TransE on Nations) had been seen.",
        fingerprint="2d861a1547b5",
    ),
]

# The t half-width and the seeds-needed search moved to core.stats (t_half_width, seeds_for_half_width), shared with
# GPS++; the claims' rules and statistics are unchanged. New fingerprint per claim.
SHARED_POWER = {
    "beats-random-floor-as-literature": "bd2bdf25e389",
    "mrr-nations-transe": "5f25eed8b4a0",
    "mrr-nations-distmult": "350806dac9c9",
    "mrr-nations-complex": "7c845f963ef8",
    "mrr-nations-rotate": "1660dff44ee1",
    "mrr-kinships-distmult": "98dce90af57a",
    "mrr-kinships-complex": "fab16d36bb02",
    "mrr-umls-distmult": "865d8ed23da8",
    "mrr-umls-complex": "963eba6d716f",
}
SHARED_POWER_CHANGES = [
    Change(
        date="2026-11-26",
        claim="beats-random-floor-as-literature",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="bd2bdf25e389",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-transe",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="5f25eed8b4a0",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-distmult",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="350806dac9c9",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-complex",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="7c845f963ef8",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-nations-rotate",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="1660dff44ee1",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-kinships-distmult",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="98dce90af57a",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-kinships-complex",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="fab16d36bb02",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-umls-distmult",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="865d8ed23da8",
    ),
    Change(
        date="2026-11-26",
        claim="mrr-umls-complex",
        kind="code",
        old="the seeds-needed search (seeds_needed) and the design half-width written in papers/bess/claims.py",
        new="core.stats.seeds_for_half_width and core.stats.t_half_width (the same formula and search)",
        reason=(
            "issue 45 review: GPS++ needs the same power computation; one copy in core.stats serves "
            "both. The rule, the statistic and every figure are unchanged (the same t quantile and the "
            "same first n)."
        ),
        fingerprint="963eba6d716f",
    ),
]

# Issue 57 (2026-11-28): the claims are decided from the stored Results (run -> Results -> decide -> render); the
# measuring functions read the typed Results instead of the run's dicts. New fingerprint per claim.
STORED_RESULTS_CHANGES = code_changes(
    "2026-11-28",
    "issue 57: decided from the stored Results (run -> Results -> decide -> render), so a change to how a claim is "
    "decided or shown is re-decided without re-running; the statistic, rule and figure are unchanged, and the smoke "
    "run's values are identical (the ensemble's paired bootstrap too, on a two-member ensemble)",
    {
        "beats-random-floor-as-literature": "b55540bf68c1",
        "mrr-nations-transe": "f465744536ef",
        "mrr-nations-distmult": "739f91fce2a8",
        "mrr-nations-complex": "e9f7b5bc1354",
        "mrr-nations-rotate": "71c1b7f41222",
        "mrr-kinships-distmult": "d5c77c201312",
        "mrr-kinships-complex": "ec8a4d185a4e",
        "mrr-umls-distmult": "c3943c8a2eb4",
        "mrr-umls-complex": "70595b548143",
        "ensemble-nations": "09dd0edbe503",
        "ensemble-kinships": "7509414bba73",
        "ensemble-umls": "98b9ab1645c1",
        "bess-equals-single-device": "ac75eb377617",
        "bess-moves-less": "83114a02f976",
    },
)

LEDGER: list[Change] = [*HISTORY, *NOW, *REVIEW, *ISSUE_45_CHANGES, *SHARED_POWER_CHANGES, *STORED_RESULTS_CHANGES]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "beats-random-floor-as-literature": "381e5a042c82",
        "mrr-nations-transe": "a342f4e691fe",
        "mrr-nations-distmult": "b67f9fbab570",
        "mrr-nations-complex": "4b991b5f749c",
        "mrr-nations-rotate": "6de0eb0313c9",
        "mrr-kinships-distmult": "213d2df15768",
        "mrr-kinships-complex": "6cd52a6b47e5",
        "mrr-umls-distmult": "59391e40875d",
        "mrr-umls-complex": "4860c2019067",
        "ensemble-nations": "38d19450ba95",
        "ensemble-kinships": "ca023d418c3d",
        "ensemble-umls": "e6678b100d5a",
        "bess-equals-single-device": "df4e5b7e570b",
        "bess-moves-less": "61611c40c2aa",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "beats-random-floor-as-literature": "db6b74c1ec81",
        "mrr-nations-transe": "928ea822cb6d",
        "mrr-nations-distmult": "9fef6cd01418",
        "mrr-nations-complex": "8ed0f23c72e0",
        "mrr-nations-rotate": "041483af3370",
        "mrr-kinships-distmult": "411d015cd09f",
        "mrr-kinships-complex": "e1ce96074312",
        "mrr-umls-distmult": "955627f41515",
        "mrr-umls-complex": "8296b5a93e02",
        "ensemble-nations": "4927a414bd65",
        "ensemble-kinships": "e2bfe62ade1a",
        "ensemble-umls": "e9a4c70fd307",
        "bess-equals-single-device": "0365f4d9f656",
        "bess-moves-less": "8eb38d7f4409",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    "the claims API's JSON helper became public (core.claims._jsonable -> jsonable, issue 60: one import "
    "path for the claims API and no private name used across modules); no declaration, statistic or rule "
    "changed. There is no reference record to re-decide (results/pending.yaml says why)",
    {
        "beats-random-floor-as-literature": "fd2d7d4eedb7",
        "mrr-nations-transe": "44cd13961428",
        "mrr-nations-distmult": "cb06b598cd0f",
        "mrr-nations-complex": "afae9415a8b7",
        "mrr-nations-rotate": "5f92bf71216e",
        "mrr-kinships-distmult": "267aa1d79185",
        "mrr-kinships-complex": "8bd675f25305",
        "mrr-umls-distmult": "9cb9a99f6000",
        "mrr-umls-complex": "9139b35348a8",
        "ensemble-nations": "9d4a4de45779",
        "ensemble-kinships": "cf9b6264bcb1",
        "ensemble-umls": "87ef53bf44ca",
        "bess-equals-single-device": "745cbe089499",
    },
)

# automatic entry (2026-11-29): decision code changed, re-decided results/bess identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/bess with it gave identical claims, facts, estimates and verdicts; written by "
    '`make claims ARGS="lock bess"`',
    {
        "beats-random-floor-as-literature": "38cc18f2cf34",
        "mrr-nations-transe": "607e21b18b48",
        "mrr-nations-distmult": "b1ae2376f09b",
        "mrr-nations-complex": "89f013a500cb",
        "mrr-nations-rotate": "9ee3da6d71e7",
        "mrr-kinships-distmult": "a5bd30911b6c",
        "mrr-kinships-complex": "757f71b2aa9d",
        "mrr-umls-distmult": "3f1d00918119",
        "mrr-umls-complex": "ecf52b2473f6",
        "bess-equals-single-device": "72444d6596b0",
        "bess-moves-less": "5a1919e41ed1",
    },
    run="results/bess",
)

# Issue 62 (2026-11-29): a counted claim must be able to fail at its design; every figure and margin says where it
# comes from. The reference run named is results/bess (default scale, commit 54b68c7, 2026-11-29).
REFERENCE_62 = "results/bess (the reference run, default scale, 2026-11-29)"
LEDGER += [
    Change(
        date="2026-11-29",
        claim="bess-equals-single-device",
        kind="removed",
        old="ours <= 1e-05 (equivalence): the largest relative error of loss, scores and gradients, BESS on 4 devices "
        "against one device, over the scorers (one batch each)",
        new="-",
        reason="issue 62: an implementation check, not a finding: the all_to_all and psum rewrite the single-device "
        "sums across devices, so only a bug can fail it (float32 rounding: 1.7e-7 against 1e-5, 58x). It is held by "
        "tests/papers/bess/test_bess.py::test_bess_and_all_gather_equal_the_single_device_reference_on_1_2_4_devices "
        "(BESS with a distance and a bilinear scorer, and the all-gather scheme, on 1, 2 and 4 devices, every error "
        "< 1e-5, padding rows without gradient); the run's own check (every scorer, 4 devices) stays in the report "
        "as the fact bess-equals-single-device (construction). Verdict: holds -> removed (a test and a fact).",
        old_verdict="holds (1.731e-07: TransE 1.4e-07, DistMult 1.7e-07, ComplEx 1.3e-07, RotatE 9.1e-08)",
        commit="54b68c7",
        run=REFERENCE_62,
        moved_to="test tests/papers/bess/test_bess.py::test_bess_and_all_gather_equal_the_single_device_reference_on_"
        "1_2_4_devices; fact bess-equals-single-device (construction)",
    ),
    Change(
        date="2026-11-29",
        claim="bess-moves-less",
        kind="removed",
        old="is_true: the compiled BESS step's collectives deliver fewer bytes than the compiled all-gather step's, at "
        "every n >= 2",
        new="-",
        reason="issue 62: arithmetic on shapes, as table-memory-1-over-n was (issue 41): the all_to_all moves "
        "2n(n-1)(b + n_neg) d x 4 bytes and all-gathering the table 2n(n-1)(N/n) d x 4 (papers.bess.bess."
        "bytes_per_step), so it holds wherever b + n_neg < N/n: at most 288 rows per block against 12,500 or more "
        "here. The compiled programs' bytes equal that count (tests/papers/bess/test_bess.py::test_bytes_read_from_"
        "the_compiled_steps_equal_the_analytic_count, test_analytic_bess_moves_less_than_all_gathering_the_table). "
        "It becomes the fact bess-moves-less (analytic), its value the largest ratio of the two (0.0077 at n=2). "
        "Verdict: holds -> fact.",
        old_verdict="holds (n=2: 388 KiB vs 48.9 MiB, n=4: 780 KiB vs 146.8 MiB, n=8: 1.34 MiB vs 342.5 MiB)",
        commit="54b68c7",
        run=REFERENCE_62,
        moved_to="fact bess-moves-less (analytic)",
    ),
    Change(
        date="2026-11-29",
        claim="beats-random-floor-as-literature",
        kind="removed",
        old="ours >= 1.122: the smallest ratio over every trained (graph, model) of the test MRR (5 seeds, t "
        "intervals) to the exact filtered random-ranker MRR",
        new="-",
        reason="issue 62: a duplicate of mrr-nations-transe divided by a constant: Nations' filtered floor (0.3844) is "
        "7x the others' (0.054, 0.059), so the smallest ratio is always TransE on Nations, and the bound 1.122 x "
        "0.3844 = 0.4313 is that claim's bound; it cannot be decided otherwise than that claim is. Its figure (L1 "
        "over F1) and the floors stay in the report's link_prediction table (each graph's filtered random-floor "
        "row beside every model's MRR). It replaced the 2x claim after that had failed (2026-11-26). Verdict: holds "
        "-> removed; mrr-nations-transe keeps the same verdict (holds).",
        old_verdict="holds (1.299 [1.270, 1.327]: TransE on Nations, 0.499 against the floor 0.384)",
        commit="54b68c7",
        run=REFERENCE_62,
        moved_to="claim mrr-nations-transe (the same bound over Nations' floor); the report's link_prediction table "
        "(each graph's random-floor rows)",
    ),
]

LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels only, the rule, statistic and figure unchanged: figure_source (Nations: L1-L4, Pu et al.'s "
    "own table, read in issue 23, labelled paper as REFERENCES.md records it, a literature figure, not the BESS "
    "paper's; Kinships and UMLS: L6-L8 a compilation's rows, secondary, and L5 no source, none: both kinds already "
    "unverified by the claims' unverified field; the ensembles: the authors' technical report, REFERENCES.md P3 and "
    "A1, section 6.2 and Figure 3a, ensembles beating their best single model, read 2026-11-29), margin_source "
    "(ours: 0.05 below the printed literature value; zero gain for the ensembles) and the sample behind each interval "
    "(5 training seeds; 201, 1074 and 661 test triples of one seed's models). No verdict moves (results/bess): "
    "Nations' four stay holds (3) and undecided (RotatE), Kinships' and UMLS's four stay unverified (rule: holds), "
    "the ensembles stay holds",
    {
        "mrr-nations-transe": "d3c4f9150d3c",
        "mrr-nations-distmult": "02bf8b549ed5",
        "mrr-nations-complex": "d742c66d9738",
        "mrr-nations-rotate": "d12d3f91612e",
        "mrr-kinships-distmult": "cb38624362a3",
        "mrr-kinships-complex": "f2d4135fe611",
        "mrr-umls-distmult": "ccd3ee0dade4",
        "mrr-umls-complex": "0805e4589bd7",
        "ensemble-nations": "75ed0b0be050",
        "ensemble-kinships": "9911a8d27bc4",
        "ensemble-umls": "4fb858545877",
    },
)

# Issue 62, item 3 (the paper's own findings) and item 7 (the default design follows the power), fixed before the
# run that decides them (its commit follows these entries)
LEDGER += [
    Change(
        date="2026-11-29",
        claim="ensemble-diverse-nations",
        kind="added",
        old="",
        new="interval low > 0: the test MRR of an equal-weight ensemble of one model of every scorer (the first "
        "seed's) less that of the equal-weight ensemble of as many models of one scorer (its first seeds; the one "
        "of the best validation MRR), 95% paired bootstrap over test triples",
        reason="issue 62: the BESS paper's own finding that a diverse set of models ensembles better (P3 section "
        "7 and Figure 3a and 3c, REFERENCES.md) had no claim; the selected ensemble against its best member "
        "(ensemble-<graph>) tests ensembling, not diversity. Declared before any run computed it: the stored "
        "reference (54b68c7) kept each model's test ranks but not its scores, so no diverse or one-scorer "
        "ensemble had been measured; the single models' MRRs had been seen (on Nations DistMult 0.80 leads "
        "ComplEx 0.74, RotatE 0.70 and TransE 0.50, so a one-scorer DistMult ensemble is a strong comparator). "
        "The comparator is chosen on validation, the strongest one-scorer ensemble the run can pick without the "
        "test split; equal weights on both sides, so neither gets a selection the other lacks. Margin ours "
        "(zero); the authors' ensembles (top-K lists combined by rank power, 5-25 models a scorer, WikiKG90Mv2) "
        "are not ours, so the direction is tested, not a figure.",
        fingerprint="f34f7bacb948",
    ),
    Change(
        date="2026-11-29",
        claim="ensemble-diverse-kinships",
        kind="added",
        old="",
        new="interval low > 0: the test MRR of an equal-weight ensemble of one model of every scorer (the first "
        "seed's) less that of the equal-weight ensemble of as many models of one scorer (its first seeds; the one "
        "of the best validation MRR), 95% paired bootstrap over test triples",
        reason="issue 62: the BESS paper's own finding that a diverse set of models ensembles better (P3 section "
        "7 and Figure 3a and 3c, REFERENCES.md) had no claim; the selected ensemble against its best member "
        "(ensemble-<graph>) tests ensembling, not diversity. Declared before any run computed it: the stored "
        "reference (54b68c7) kept each model's test ranks but not its scores, so no diverse or one-scorer "
        "ensemble had been measured; the single models' MRRs had been seen (on Nations DistMult 0.80 leads "
        "ComplEx 0.74, RotatE 0.70 and TransE 0.50, so a one-scorer DistMult ensemble is a strong comparator). "
        "The comparator is chosen on validation, the strongest one-scorer ensemble the run can pick without the "
        "test split; equal weights on both sides, so neither gets a selection the other lacks. Margin ours "
        "(zero); the authors' ensembles (top-K lists combined by rank power, 5-25 models a scorer, WikiKG90Mv2) "
        "are not ours, so the direction is tested, not a figure.",
        fingerprint="6f84f765e706",
    ),
    Change(
        date="2026-11-29",
        claim="ensemble-diverse-umls",
        kind="added",
        old="",
        new="interval low > 0: the test MRR of an equal-weight ensemble of one model of every scorer (the first "
        "seed's) less that of the equal-weight ensemble of as many models of one scorer (its first seeds; the one "
        "of the best validation MRR), 95% paired bootstrap over test triples",
        reason="issue 62: the BESS paper's own finding that a diverse set of models ensembles better (P3 section "
        "7 and Figure 3a and 3c, REFERENCES.md) had no claim; the selected ensemble against its best member "
        "(ensemble-<graph>) tests ensembling, not diversity. Declared before any run computed it: the stored "
        "reference (54b68c7) kept each model's test ranks but not its scores, so no diverse or one-scorer "
        "ensemble had been measured; the single models' MRRs had been seen (on Nations DistMult 0.80 leads "
        "ComplEx 0.74, RotatE 0.70 and TransE 0.50, so a one-scorer DistMult ensemble is a strong comparator). "
        "The comparator is chosen on validation, the strongest one-scorer ensemble the run can pick without the "
        "test split; equal weights on both sides, so neither gets a selection the other lacks. Margin ours "
        "(zero); the authors' ensembles (top-K lists combined by rank power, 5-25 models a scorer, WikiKG90Mv2) "
        "are not ours, so the direction is tested, not a figure.",
        fingerprint="5eae3e4d2713",
    ),
    Change(
        date="2026-11-29",
        claim="mrr-nations-rotate",
        kind="respecified",
        old="the same rule on the t interval over 5 training seeds",
        new="the same rule (ours >= 0.66545) on the t interval over 8 training seeds (bess.seeds_for; the other "
        "models and graphs keep 5)",
        reason="issue 62 item 7, the default design follows the power: the 5-seed reference (54b68c7) put the mean "
        "0.697 at 0.99 half-widths above the bound (sd 0.026), undecided, and the power statement said about 6 seeds "
        "would decide it at that spread. 8 seeds give ~84% power to clear the bound if the 5 seeds' mean and sd are "
        "the truth (93% given the first five, which the run repeats: the seeds are deterministic), against 67% at 6; "
        "the 3 more cost ~6 minutes (RotatE's margin search, 3 trainings a seed), inside the 45-minute default. A "
        "sample size chosen after seeing an interval near its bound is a second look: under a true mean exactly at "
        "the bound, adding seeds after an undecided first look raises the chance of a false 'holds' above 2.5% "
        "(one-sided), and this entry says so. The rule's verdict on 5 seeds stays in the history.",
        old_verdict="undecided (0.697 [0.665, 0.729], 5 seeds)",
        commit="54b68c7",
        run=REFERENCE_62,
        fingerprint="0d7e67508239",
    ),
]

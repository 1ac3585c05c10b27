"""Every change to the BESS claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims lock:
they carry no fingerprint, and say when and why a rule moved and the verdict last recorded under the old one."""

from core.claims import at_least, at_most, printed
from core.ledger import Change

# Literal values, not read from claims.py: the history must not move when the claims do
SLACK = 0.05  # "within 0.05 of the literature MRR, or better" (issue 12)

# The README row of commit fdd5b22 (default run of 2026-11-23), under the literature values used before issue 23
OLD_README = "README row of commit fdd5b22 (default run of 2026-11-23)"
# (graph, model): (literature value before commit 8200c75, after it, our test MRR last recorded under the old one)
ISSUE_23_TARGETS = {
    ("nations", "transe"): (0.481, 0.4813, "TransE 0.479"),
    ("nations", "distmult"): (0.713, 0.7131, "DistMult 0.786"),
    ("nations", "complex"): (0.668, 0.6677, "ComplEx 0.741"),
    ("kinships", "complex"): (0.762, 0.823, "ComplEx 0.828"),
    ("umls", "distmult"): (0.739, 0.878, "DistMult 0.892"),
    ("umls", "complex"): (0.749, 0.838, "ComplEx 0.864"),
}

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
    *[
        Change(
            date="2026-11-24",
            claim=f"mrr-{graph}-{model}",
            kind="respecified",
            old=f"ours >= {round(old - SLACK, 6):g} (literature {old:g} - {SLACK:g}, the project's earlier notes)",
            new=f"ours >= {round(new - SLACK, 6):g} (literature {new:g} - {SLACK:g}, REFERENCES.md)",
            reason="Commit 8200c75 (issue 23): every literature MRR cited with its source, preferring the strongest "
            "published value; the target moved with the source (Nations: L1's table's fourth digit; Kinships "
            "ComplEx and UMLS: the earlier values could not be traced). A result had been seen: the claim held "
            f"under the old value ({ours}). Only the threshold moved: the old rule is evaluated on each run.",
            old_rule=at_least(round(old - SLACK, 6)),
            old_verdict=f"holds ({ours})",
            commit="fdd5b22",
            run=OLD_README,
        )
        for (graph, model), (old, new, ours) in ISSUE_23_TARGETS.items()
    ],
]

# Issue 41 (2026-11-25): the literature values as the sources print them, and the claims' fingerprints after it
PRINTED = {
    ("nations", "transe"): ("0.4813", "0c6fb6180364"),
    ("nations", "distmult"): ("0.7131", "53d68d2d4665"),
    ("nations", "complex"): ("0.6677", "686840d05a5f"),
    ("nations", "rotate"): ("0.7155", "69a024a57533"),
    ("kinships", "distmult"): ("0.640", "df3349525bcb"),
    ("kinships", "complex"): ("0.823", "e81af7cc6b7b"),
    ("umls", "distmult"): ("0.878", "4be99436cbca"),
    ("umls", "complex"): ("0.838", "5083af7c262e"),
}

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
    *[
        Change(
            date="2026-11-25",
            claim=f"mrr-{graph}-{model}",
            kind="respecified",
            old=f"ours >= {round(float(text) - SLACK, 6):g} (the literature value {text} as an exact point)",
            new=f"ours >= {round(printed(text).low - SLACK, 6):g} (the literature value as printed, {text}: its "
            f"lowest reading - {SLACK:g}); decision named non-inferiority (it was labelled superiority)",
            reason="Issue 41: a figure printed to a few digits is every value that rounds to it; the target is "
            "compared as printed(...), which lowers the bound by half a unit of its last digit; 'within 0.05, or "
            "better' is a non-inferiority margin, and the rule now names it so. Made without a new "
            "run; every MRR of the README's recorded run (2026-11-24) holds under both bounds, so no recorded verdict "
            "moves. The old rule is evaluated on each run.",
            old_rule=at_least(round(float(text) - SLACK, 6)),
            fingerprint=fingerprint,
        )
        for (graph, model), (text, fingerprint) in PRINTED.items()
    ],
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
        fingerprint="5e0bf6e9fab8",
    ),
]

LEDGER: list[Change] = [*HISTORY, *NOW, *REVIEW]

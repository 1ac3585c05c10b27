"""Every change to the unit-scaling claims, oldest first (core/ledger.py): the lock
papers/unit_scaling/claims.lock.json holds each claim's fingerprint, and a change to a declaration or to the code
that measures and decides it needs an entry here.

The entries dated 2026-11-24 predate the lock (no fingerprint): all four were made in commit 7c97aa2, after the
default run recorded in the README row of commit 7484b79 had been seen. Their old rules cannot be evaluated on a
present run (the statistic or the arm changed, not a threshold), so each shows the verdict last recorded under it.

One module over 400 lines: a ledger is data, one entry per change, appended and never edited or generated."""

from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

README_7484B79 = "README row of commit 7484b79 (default run of 2026-11-24, 8 arms x 2 seeds)"

LEDGER: list[Change] = [
    Change(
        date="2026-11-24",
        claim="init-unit-scales",
        kind="respecified",
        old="ours <= 1, ours = max |log2 std| over every tensor of the unit-scaled model at initialisation: weights, "
        "activations and their gradients (constant layer-norm scales left out)",
        new="ours <= 1, ours = max |log2 std| over activations and activation gradients only (q, k and v "
        "separately); weight gradients reported beside in the detail, not decided",
        reason="Narrowed in commit 7c97aa2 after the weight gradients had been seen to fail (up to 5.3x off unit "
        "std on text, within 2x on i.i.d. random tokens). The commit's reason: the weight-gradient rule batch^-1/2 "
        "assumes independent tokens, Adam is invariant to their scale and no arm casts them. The paper's Fig. 1 "
        "(US-FIG1) covers weights and weight gradients too, so the claim now tests less than the paper shows.",
        old_verdict="fails (weight gradients 5.3x off unit std on text: max |log2 std| about 2.4)",
        commit="7484b79",
        run=README_7484B79,
    ),
    Change(
        date="2026-11-24",
        claim="fp16-unit-matches-fp32",
        kind="respecified",
        old="gap <= 2% for FP16 unit-scaled without loss scaling with FP32 weights and Adam state",
        new="gap <= 2% for FP16 unit-scaled without loss scaling with weights and both Adam moments stored in FP16 "
        "(unit_scaling.fp16_state=true, the default)",
        reason="Commit 7c97aa2 made the FP16 arms pure FP16 (weights and Adam state stored in FP16, the paper's "
        "setting as the config states it); the claim's statement names the storage. Results had been seen (it "
        "held); not in issue 41's list, recorded because the arm it decides changed with fp16-regular-worse's.",
        old_verdict="holds (gap -3.4%)",
        commit="7484b79",
        run=README_7484B79,
    ),
    Change(
        date="2026-11-24",
        claim="fp16-regular-worse",
        kind="respecified",
        old="gap >= 1% (worse than FP32), or diverged, for FP16 regular without loss scaling with FP32 weights and "
        "Adam state",
        new="gap >= 1% (worse than FP32), or diverged, for FP16 regular without loss scaling with weights and both "
        "Adam moments stored in FP16 (unit_scaling.fp16_state=true, the default)",
        reason="Commit 7c97aa2 switched on FP16 storage of the weights and both Adam moments (pure FP16, the paper's "
        "setting as the config states it), after the FP32-storage arm had been recorded failing (no worse than "
        "FP32); commit 65ac6fc then kept Adam's moments of the loss-scaled gradient. The claim has held only since: "
        "the arm diverges because its Adam second moment flushes to zero in FP16 (README row of commit 4a9bfab). "
        "The rule's threshold did not move; the arm it decides did. unit_scaling.fp16_state=false reruns the old "
        "arm.",
        old_verdict="fails (gap -0.3%: FP16 regular no worse than FP32)",
        commit="7484b79",
        run=README_7484B79,
    ),
    Change(
        date="2026-11-24",
        claim="fp8-unit-matches-fp32",
        kind="respecified",
        old="gap <= 3% for FP8 unit-scaled with plain E4M3/E5M2 casts (round-to-nearest, no saturation, LM head in "
        "FP8)",
        new="gap <= 3% for FP8 unit-scaled with the library's recipe: stochastic rounding, saturating, LM head and "
        "the logits' gradient in FP32 (unit_scaling.fp8, US-LIB-FP8 and FP8-LLM-HEAD in REFERENCES.md)",
        reason="Commit 7c97aa2 moved the FP8 arms to the official library's FP8 simulation with the LM head in FP32, "
        "after the plain-cast arm had been recorded failing (5.1% behind FP32). Not in issue 41's list, recorded "
        "because it is the same kind of change: the claim has held only since (4.1% better than FP32, README row of "
        "commit 4a9bfab). unit_scaling.fp8.rounding=nearest fp8.saturate=false fp8.head=low reruns the old arm.",
        old_verdict="fails (gap +5.1%)",
        commit="7484b79",
        run=README_7484B79,
    ),
    Change(
        date="2026-11-24",
        claim="fp8-regular-fails",
        kind="respecified",
        old="gap >= 3%, or diverged, for FP8 regular with plain E4M3/E5M2 casts (round-to-nearest, no saturation, LM "
        "head in FP8)",
        new="gap >= 3%, or diverged, for FP8 regular with the same casts as fp8-unit-matches-fp32 (stochastic, "
        "saturating, LM head in FP32)",
        reason="The same recipe change as fp8-unit-matches-fp32 (commit 7c97aa2), made after results had been seen "
        "(this claim held under plain casts). Under stochastic rounding it fails (+1.4%, README row of commit "
        "4a9bfab); with round-to-nearest casts it still holds (+58%). Not in issue 41's list; recorded beside its "
        "twin.",
        old_verdict="holds (gap +79%)",
        commit="7484b79",
        run=README_7484B79,
    ),
    Change(
        date="2026-11-25",
        claim="init-unit-scales",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="b0f534a46db0",
    ),
    Change(
        date="2026-11-25",
        claim="init-regular-gradients-small",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="23b35d859c6e",
    ),
    Change(
        date="2026-11-25",
        claim="fp16-unit-matches-fp32",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="cf225f04a67c",
    ),
    Change(
        date="2026-11-25",
        claim="fp16-regular-worse",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="934b1490c369",
    ),
    Change(
        date="2026-11-25",
        claim="fp8-unit-matches-fp32",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="c2accebff962",
    ),
    Change(
        date="2026-11-25",
        claim="fp8-regular-fails",
        kind="code",
        old="_worse_or_diverged built its rule here: 'diverged', or at_least(threshold)'s yes/no",
        new=(
            "_worse_or_diverged is core.claims.or_diverged(at_least(threshold), ...): 'diverged', or at_least's verdict"
        ),
        reason=(
            "issue 42: the 'or diverged' rule combinator, written in unit_scaling and umup, moved to "
            "core.claims.or_diverged; the computation unchanged. Every claim's fingerprint moved "
            "because `measure` reads the declarations (_claims), which build the rule. The decision is "
            "identical: the gap is a point value (a float, or 'diverged'), for which at_least gives "
            "only holds or fails, so its yes/no and its verdict agree."
        ),
        fingerprint="8cb94262d911",
    ),
    # issue 44: every claim re-decided as the paper states it (REFERENCES.md: US-FIG1, US-BPC, US-MARGIN,
    # US-STORAGE), after the default run of 2026-11-26 (README row, commit 04448ef) had been seen; the old rules'
    # verdicts are that run's.
    Change(
        date="2026-11-26",
        claim="init-unit-scales",
        kind="respecified",
        old="ours <= 1, ours = max |log2 std| over the unit-scaled model's activations and activation gradients on "
        "text (weight gradients reported beside, not decided)",
        new="ours <= 1, ours = max |log2 std| over every weight, activation, activation gradient and weight gradient "
        "on text (the i.i.d.-token control is the new claim init-unit-scales-iid)",
        reason="issue 44: the paper's Figure 1 covers every tensor of its FFN layer, weight gradients included "
        "(US-FIG1: the authors' figure notebook plots w, grad w, x and grad x of each op); the narrowing of "
        "2026-11-24 (above) is undone. Results had been seen: weight gradients reach 5.3x off unit std on text.",
        old_verdict="holds (0.91: worst activation gradient, attention's k, std 0.53)",
        commit="04448ef",
        run="README row of commit 04448ef (default run of 2026-11-26, 7 arms x 2 seeds)",
        fingerprint="5d38a1feb03c",
    ),
    Change(
        date="2026-11-26",
        claim="init-unit-scales-iid",
        kind="added",
        old="",
        new="ours <= 1, ours = max |log2 std| over every tensor of the unit-scaled model on i.i.d. uniformly random "
        "tokens",
        reason="issue 44: the i.i.d.-token control beside init-unit-scales. Figure 1's inputs are random normal "
        "(no correlation between tokens), the independence the batch^-1/2 weight-gradient rule assumes; this claim "
        "tests the rules where their assumption holds, init-unit-scales on text. Results had been seen (weight "
        "gradients 1.7x off on i.i.d. tokens in the 2026-11-24 run).",
        fingerprint="f512bbdf9d8a",
    ),
    Change(
        date="2026-11-26",
        claim="init-regular-gradients-small",
        kind="code",
        old="the init analysis's unit text named the batch 'of text'",
        new="the same statistic and rule; the shared INIT_UNIT text no longer names the data (the iid claim shares it)",
        reason="issue 44: a declaration text shared with the new init-unit-scales-iid claim changed; the rule, the "
        "statistic and its computation did not.",
        fingerprint="e361f3fac9dc",
    ),
    Change(
        date="2026-11-26",
        claim="fp16-unit-matches-fp32",
        kind="removed",
        old="gap <= 2%: FP16 unit-scaled (weights and both Adam moments in FP16) against FP32 *regular*, mean of 2 "
        "seeds, a point value",
        new="claim fp16-unit-matches-fp32-unit",
        reason="issue 44: the rule was one-sided and compared with FP32 of the other parametrization, so it held by "
        "being 4.5% better: the parametrization's effect (FP32 unit-scaled is itself 4.2% better than FP32 "
        "regular), not the precision's. The paper compares FP16 unit-scaled with FP32 unit-scaled (US-BPC: 1.567 "
        "vs 1.562). Its storage setting also changed (US-STORAGE).",
        old_verdict="holds (gap -4.47%)",
        commit="04448ef",
        run="README row of commit 04448ef (default run of 2026-11-26, 7 arms x 2 seeds)",
        moved_to="claim fp16-unit-matches-fp32-unit (two-sided, against FP32 unit-scaled, interval over seeds)",
    ),
    Change(
        date="2026-11-26",
        claim="fp16-unit-matches-fp32-unit",
        kind="added",
        old="",
        new="95% t interval of FP16 unit-scaled / FP32 unit-scaled - 1 (paired by seed, 6 seeds) within +-1%, FP16 "
        "storage as the authors' code (weights and Adam's first moment FP16 with stochastic rounding, second moment "
        "FP32)",
        reason="issue 44: replaces fp16-unit-matches-fp32 (removed above): two-sided equivalence against FP32 of the "
        "same parametrization, the margin from the paper's table (US-MARGIN), decided on an interval.",
        fingerprint="b48e3a44e546",
    ),
    Change(
        date="2026-11-26",
        claim="fp16-regular-ls-matches-fp32",
        kind="added",
        old="",
        new="95% t interval of FP16 regular with loss scale 2048 / FP32 regular - 1 (paired by seed) within +-1%",
        reason="issue 44: the paper's table shows loss scaling restoring FP16 regular to FP32 (US-BPC: 1.587 vs "
        "1.582), the control of the underflow mechanism behind fp16-regular-worse; it had been a table column only. "
        "Results had been seen (+0.27% at 2 seeds, 2026-11-26).",
        fingerprint="940e9b0be049",
    ),
    Change(
        date="2026-11-26",
        claim="fp8-unit-matches-fp32",
        kind="removed",
        old="gap <= 3%: FP8 unit-scaled against FP32 *regular*, mean of 2 seeds, a point value",
        new="claim fp8-unit-matches-fp32-unit",
        reason="issue 44: as fp16-unit-matches-fp32: one-sided, and against FP32 of the other parametrization, so it "
        "held by the parametrization's 4.2%; the 3% tolerance was ours, not the paper's.",
        old_verdict="holds (gap -4.17%)",
        commit="04448ef",
        run="README row of commit 04448ef (default run of 2026-11-26, 7 arms x 2 seeds)",
        moved_to="claim fp8-unit-matches-fp32-unit (two-sided, against FP32 unit-scaled, interval over seeds)",
    ),
    Change(
        date="2026-11-26",
        claim="fp8-unit-matches-fp32-unit",
        kind="added",
        old="",
        new="95% t interval of FP8 unit-scaled / FP32 unit-scaled - 1 (paired by seed) within +-1%",
        reason="issue 44: replaces fp8-unit-matches-fp32 (removed above) with the same margin as the FP16 claims "
        "(US-MARGIN). The paper's FP8 statement is BERT-Large's (abstract); its character-LM experiment has no FP8 "
        "arm (US-FP8). Results had been seen (+0.05% at 2 seeds).",
        fingerprint="2e3c8edc6c89",
    ),
    Change(
        date="2026-11-26",
        claim="fp16-regular-worse",
        kind="respecified",
        old="gap >= 1% (point value, mean of 2 seeds), or diverged, with weights and both Adam moments in FP16 "
        "(round-to-nearest)",
        new="95% t interval of FP16 regular / FP32 regular - 1 (paired by seed) above 1%, or diverged, with the "
        "authors' storage (weights and Adam's first moment FP16 with stochastic rounding, second moment FP32)",
        reason="issue 44: the arm diverged only because its Adam second moment flushed to zero in FP16, an "
        "optimiser-storage effect; the authors' code keeps the second moment in FP32 (US-STORAGE), so the arm now "
        "tests the paper's mechanism (gradient underflow). The threshold is the equivalence margin (US-MARGIN), "
        "decided on an interval. unit_scaling.fp16_storage=fp16 reruns the old arm.",
        old_verdict="holds (diverged: 1951 non-finite steps skipped over 2 seeds)",
        commit="04448ef",
        run="README row of commit 04448ef (default run of 2026-11-26, 7 arms x 2 seeds)",
        fingerprint="238f4315b61b",
    ),
    Change(
        date="2026-11-26",
        claim="fp8-regular-fails",
        kind="respecified",
        old="gap >= 3% (point value, mean of 2 seeds), or diverged",
        new="95% t interval of FP8 regular / FP32 regular - 1 (paired by seed) above 1%, or diverged",
        reason="issue 44: decided on an interval over 6 seeds, at the margin of the other precision claims "
        "(US-MARGIN) instead of our 3%. Results had been seen: it failed (+0.24%).",
        old_verdict="fails (gap +0.24%)",
        commit="04448ef",
        run="README row of commit 04448ef (default run of 2026-11-26, 7 arms x 2 seeds)",
        fingerprint="71c5f5d132dd",
    ),
    *code_changes(
        "2026-11-28",
        "issue 57: decided from the stored Results (run -> Results -> decide -> render), so a change to how a claim "
        "is decided or shown is re-decided without re-running; the statistic, rule and figure are unchanged, and the "
        "smoke run's values are identical",
        {
            "init-unit-scales": "5fc236b5f3a2",
            "init-unit-scales-iid": "8d914cf78081",
            "init-regular-gradients-small": "7167a9ca7091",
            "fp16-unit-matches-fp32-unit": "8d8aad186cc3",
            "fp16-regular-ls-matches-fp32": "9d202f4a43f9",
            "fp8-unit-matches-fp32-unit": "a5a45c22bb56",
            "fp16-regular-worse": "910c9c34c22a",
            "fp8-regular-fails": "55ca31b73db6",
        },
    ),
    *code_changes(
        "2026-11-28",
        "issue 57's demonstration: a decision helper written in several papers moved into core.stats, decided "
        "again from the stored Results without training. The paired relative gap (the mean over seeds of arm "
        "/ twin - 1 with its t interval; one seed's gap alone; 'diverged' where the arm did not train), "
        "written here as paired_gap, is now core.stats.paired_relative_gap; the statistic, rule and intervals "
        "are unchanged, and the decision of the smoke fixture's Results is identical to the old code's in "
        "every value",
        {
            "init-unit-scales": "27cff21f7464",
            "init-unit-scales-iid": "88e80f13b584",
            "init-regular-gradients-small": "8965c487fd17",
            "fp16-unit-matches-fp32-unit": "3283ce12ff5a",
            "fp16-regular-ls-matches-fp32": "e7d336b651ff",
            "fp8-unit-matches-fp32-unit": "768ed3ae869f",
            "fp16-regular-worse": "0b26deb3df9e",
            "fp8-regular-fails": "2ba3da75ff2d",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "init-unit-scales": "e3de3d72d01f",
        "init-unit-scales-iid": "ab72898e0007",
        "init-regular-gradients-small": "23e015042a6a",
        "fp16-unit-matches-fp32-unit": "5dabbe695790",
        "fp16-regular-ls-matches-fp32": "26400a32c536",
        "fp8-unit-matches-fp32-unit": "8d39f303948d",
        "fp16-regular-worse": "ec7005816d9d",
        "fp8-regular-fails": "25305d7dd0d2",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "init-unit-scales": "8587eb29bc3b",
        "init-unit-scales-iid": "87889a527392",
        "init-regular-gradients-small": "dcd26ff88eb9",
        "fp16-unit-matches-fp32-unit": "57a910d57287",
        "fp16-regular-ls-matches-fp32": "242ea5a06620",
        "fp8-unit-matches-fp32-unit": "0b2f7940c82c",
        "fp16-regular-worse": "68868147e986",
        "fp8-regular-fails": "33474ddd1cfa",
    },
)

# automatic entry (2026-11-28): decision code changed, re-decided results/unit_scaling identically
LEDGER += code_changes(
    "2026-11-28",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/unit_scaling with it gave identical claims, facts, estimates and verdicts; "
    'written by `make claims ARGS="lock unit_scaling"`',
    {
        "init-unit-scales": "1fe6363667b4",
        "init-unit-scales-iid": "29837e485e04",
        "init-regular-gradients-small": "de38ef1deeb4",
        "fp16-unit-matches-fp32-unit": "beaead92fbb4",
        "fp16-regular-ls-matches-fp32": "fc03e5eea2d7",
        "fp8-unit-matches-fp32-unit": "4712a463b3c4",
        "fp16-regular-worse": "1f8ef6eaf07f",
        "fp8-regular-fails": "9669a27f992d",
    },
    run="results/unit_scaling",
)

# automatic entry (2026-11-29): decision code changed, re-decided results/unit_scaling identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/unit_scaling with it gave identical claims, facts, estimates and verdicts; "
    'written by `make claims ARGS="lock unit_scaling"`',
    {
        "init-unit-scales": "8d7461bf2f61",
        "init-unit-scales-iid": "fbeb5e720d57",
        "init-regular-gradients-small": "84a9ce952747",
        "fp16-unit-matches-fp32-unit": "c3f71130793c",
        "fp16-regular-ls-matches-fp32": "02ceab2e1dc9",
        "fp8-unit-matches-fp32-unit": "481db4433507",
        "fp16-regular-worse": "da356f9b7291",
        "fp8-regular-fails": "e80b075694a3",
    },
    run="results/unit_scaling",
)

# automatic entry (2026-11-29): decision code changed, re-decided results/unit_scaling identically
LEDGER += code_changes(
    "2026-11-29",
    "only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/unit_scaling with it gave identical claims, facts, estimates and verdicts; "
    'written by `make claims ARGS="lock unit_scaling"`',
    {
        "init-unit-scales": "f164e8a204d2",
        "init-unit-scales-iid": "a4961b131cd8",
        "init-regular-gradients-small": "143ababba03e",
        "fp16-unit-matches-fp32-unit": "02f14db64376",
        "fp16-regular-ls-matches-fp32": "3add01db6343",
        "fp8-unit-matches-fp32-unit": "b2bb97b7d79c",
        "fp16-regular-worse": "9b272e65ae5f",
        "fp8-regular-fails": "fb73e1e0bb33",
    },
    run="results/unit_scaling",
)

# issue 62: a claim that could not fail at its design left the claims; every claim says where its figure and margin
# come from and the sample behind its interval
REFERENCE_2026_11_29 = "results/unit_scaling (reference run of 2026-11-29, 7 arms x 6 seeds, 44.9 min)"
LEDGER += [
    Change(
        date="2026-11-29",
        claim="init-regular-gradients-small",
        kind="removed",
        old="ours <= log2(1/100) = -6.644 (bound), ours = median log2 std of the regular FP32 model's activation "
        "gradients at initialisation (one initialisation, one batch of 16 windows x 64 characters)",
        new="fact init-regular-gradient-scale (construction): the same median reported, not decided",
        reason="issue 62: it could not fail at this design. The loss is the mean over the analysis batch's 1024 "
        "tokens (core.nn's cross_entropy), so every activation gradient carries 2^-10 from that convention alone: "
        "10 of the 15.3 octaves measured; with the loss summed over tokens the median would be -5.3, above the "
        "bound, and the claim would fail. The figure it cited does not show it either: the authors' Fig. 1 notebook "
        "(US-FIG1) gives its regular layer a unit-normal output gradient, so that layer's gradients sit near unit "
        "scale. Removed after its results had been seen (it held in every run since 2026-11-24); the verdict moves "
        "holds -> not a claim. REFERENCES.md's 'Thresholds that are ours' says so.",
        old_verdict="holds (-15.27, against <= -6.644)",
        commit="f081577",
        run=REFERENCE_2026_11_29,
        moved_to="fact init-regular-gradient-scale (construction), in claims.facts",
    ),
]
LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels added, nothing else of the declaration changed: figure_source (init claims: authors, the Fig. 1 "
    "notebook; FP16 claims: authors, CharLM-test.ipynb; FP8 unit-scaled: paper, the abstract), margin_source (ours: "
    "|log2 std| <= 1 for the init claims, US-MARGIN's 1% for the precision claims), n and n_of (the seeds behind the "
    "precision claims' t intervals; 0 for the deterministic init claims). The decision code moved with the removal "
    "of init-regular-gradients-small (decide no longer measures it and adds its fact); re-decided from "
    "results/unit_scaling, every value and verdict is unchanged (holds, fails and undecided as recorded)",
    {
        "init-unit-scales": "02dc428cd28f",
        "init-unit-scales-iid": "52cd7e1bf502",
        "fp16-unit-matches-fp32-unit": "6594fa750612",
        "fp16-regular-ls-matches-fp32": "129df6c19aab",
        "fp8-unit-matches-fp32-unit": "f7f6000a0de9",
        "fp16-regular-worse": "3ee8cab89cf0",
    },
)
LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels added, nothing else of the declaration changed: figure_source none (no figure of the paper or "
    "of the authors' runs tests regular FP8 without scaling; US-FP8 reads it from the title's 'out of the box'), "
    "margin_source ours (US-MARGIN's 1%), n = 6 seeds. The source none makes the verdict unverified: undecided -> "
    "unverified (rule: undecided), the rule's outcome shown beside and not counted. The decision code moved with "
    "the removal of init-regular-gradients-small; re-decided from results/unit_scaling, its value is unchanged",
    {"fp8-regular-fails": "03188b5839c2"},
)

# code entry (2026-11-29)
LEDGER += code_changes(
    "2026-11-29",
    "issue 62: core.claims.sample_to_decide (what sample would decide an undecided claim, shown beside the "
    "verdict) now scales the interval as a t interval does; the claims' measure functions reach it through "
    "core.claims.Claim, so their code fingerprint moved. It decides nothing: no statistic, rule or verdict "
    "changed (tests/core/test_claims.py checks the sample against a brute-force search)",
    {
        "init-unit-scales": "9e2d44dc0f9e",
        "init-unit-scales-iid": "b4a3ffad5e5a",
        "fp16-unit-matches-fp32-unit": "4da54b97d889",
        "fp16-regular-ls-matches-fp32": "8888095d643a",
        "fp8-unit-matches-fp32-unit": "56c23c9f5acb",
        "fp16-regular-worse": "4f2715364917",
        "fp8-regular-fails": "e12a5d6cc610",
    },
)

# core.claims.sample_to_decide at the confidence of the interval shown (2026-11-29): results/unit_scaling re-decided
# identically
LEDGER += code_changes(
    "2026-11-29",
    "core.claims.sample_to_decide scales an undecided claim's sample at the confidence of the interval shown "
    "(ours), not the claim's declared one (PopSparse's ipu-static-beats-dynamic shows a Bonferroni interval when it "
    "leans to fail; its private Claim subclass that did this is gone). "
    "Only the code that decides these claims changed (declarations, statistics and rules did not), and "
    "re-deciding results/unit_scaling with it gave identical claims, facts, estimates and verdicts",
    {
        "init-unit-scales": "b5bb120fec55",
        "init-unit-scales-iid": "7841451b3494",
        "fp16-unit-matches-fp32-unit": "09ab2915ff76",
        "fp16-regular-ls-matches-fp32": "f54d1b76440a",
        "fp8-unit-matches-fp32-unit": "59747ad38761",
        "fp16-regular-worse": "2019a95a0fbf",
        "fp8-regular-fails": "88b6b9dff592",
    },
    run="results/unit_scaling",
)

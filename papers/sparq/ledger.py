"""Every change to the SparQ claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims lock
and carry no fingerprint: they were found in `git log -p -- papers/sparq/` and the README's history, with the verdict
last recorded under the old rule (old_rule where it can be evaluated on the present statistic, so the report shows
its verdict on every run).

One module over 400 lines: a ledger is data, one entry per change, appended and never edited or generated."""

import math

from core.claims import Interval, Rule, at_least, at_most
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes
from papers.sparq.claims import (
    V1_BPC_INCREASE,
    V1_NEEDLE_KEPT,
    V1_REPETITION_KEPT,
)

# the claims' fingerprints after issue 43 (claims.lock.json)
_ISSUE_43 = {
    "sparq-repetition": "02f60faf7e4f",
    "sparq-bpc": "81efe79b55a4",
    "sparq-needle": "11f83ff3953b",
    "sparq-beats-h2o": "dc0e9c746b64",
    "sparq-beats-local": "bf0e2499d8d4",
    "sparq-beats-streaming": "3ca8573792a1",
}
_PILOT = (
    " A 16-context pilot at the new operating point (the default run's first batch) had been seen before the "
    "default run: SparQ / dense repetition 0.87 [0.60, 1.01], BPC +2.0% [+0.6, +3.5]; dense copied 13.3 "
    "characters and retrieved 2 of 16 needles (0.63 at 512-token contexts), under the needle claim's declared "
    "gate of 0.5. After it one thing changed: a claim whose dense baseline cannot do its task is reported not "
    "measured (with the reason) instead of failing on a NaN."
)

# the margins of 2026-11-24/25, which the entries below name
REPETITION_KEPT, BPC_INCREASE, NEEDLE_KEPT = V1_REPETITION_KEPT, V1_BPC_INCREASE, V1_NEEDLE_KEPT

_ISSUE_23 = "Issue 23 (claims that can fail)"
_CHARLM = "README row of commit 7484b79 (character LM, default run 2026-11-24)"

# The rules the 1/8 claims were decided by until 2026-11-25 (our point estimate against the paper's point value, so
# a faithful replication failed about half the time); this ledger evaluates them beside the interval rules.


def _estimate_at_least(bound: float, what: str) -> Rule:
    return Rule(
        f"estimate >= {bound:.4f} ({what}); 95% interval reported",
        lambda ours, paper: isinstance(ours, Interval) and math.isfinite(ours.estimate) and ours.estimate >= bound,
    )


def _estimate_at_most(bound: float, what: str) -> Rule:
    return Rule(
        f"estimate <= {bound:.4f} ({what}); 95% interval reported",
        lambda ours, paper: isinstance(ours, Interval) and math.isfinite(ours.estimate) and ours.estimate <= bound,
    )


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
    Change(
        "2026-11-24",
        "sparq-beats-h2o",
        "respecified",
        old="is_true: higher mean repetition score and lower mean BPC than the baseline (point means)",
        new="is_true: the score gain's 95% paired-bootstrap interval above 0 and the BPC difference's below 0",
        reason=(
            f"{_ISSUE_23}: decide on the paired examples' spread, not on two means. The result "
            "had been seen (it failed on BPC: the small character LM was itself worse than its "
            "local window)."
        ),
        old_verdict="fails (SparQ wins the repetition task by far but loses on BPC)",
        commit="03a9f74",
        run="README row of commit 77020bf (character LM, default run 2026-11-22)",
    ),
    Change(
        "2026-11-24",
        "sparq-beats-local",
        "respecified",
        old="is_true: higher mean repetition score and lower mean BPC than the baseline (point means)",
        new="is_true: the score gain's 95% paired-bootstrap interval above 0 and the BPC difference's below 0",
        reason=(
            f"{_ISSUE_23}: decide on the paired examples' spread, not on two means. The result "
            "had been seen (it failed on BPC: the small character LM was itself worse than its "
            "local window)."
        ),
        old_verdict="fails (SparQ wins the repetition task by far but loses on BPC)",
        commit="03a9f74",
        run="README row of commit 77020bf (character LM, default run 2026-11-22)",
    ),
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
    Change(
        "2026-11-24",
        "sparq-repetition",
        "respecified",
        old="estimate >= 0.8986 on the character LM trained here (sparq.lm=charlm, 2 layers)",
        new="estimate >= 0.8986 on the pretrained SmolLM2-135M (sparq.lm=smollm2, 512-token contexts)",
        reason=(
            "Commit 59a7171 moved the default LM to SmolLM2-135M (the character LM stays for the smoke "
            "tests): its copying was fragile and its BPC worse than its own local window's (README). "
            "The rule did not change; the model it is decided on did, after the character LM's results "
            "had been seen (failing)."
        ),
        old_verdict="fails (0.82 [0.65, 0.95])",
        commit="59a7171",
        run=_CHARLM,
    ),
    Change(
        "2026-11-24",
        "sparq-bpc",
        "respecified",
        old="estimate <= 0.0156 on the character LM trained here (sparq.lm=charlm, 2 layers)",
        new="estimate <= 0.0156 on the pretrained SmolLM2-135M (sparq.lm=smollm2, 512-token contexts)",
        reason=(
            "Commit 59a7171 moved the default LM to SmolLM2-135M (the character LM stays for the smoke "
            "tests): its copying was fragile and its BPC worse than its own local window's (README). "
            "The rule did not change; the model it is decided on did, after the character LM's results "
            "had been seen (holding)."
        ),
        old_verdict="holds (+0.73% [-0.07, +1.54])",
        commit="59a7171",
        run=_CHARLM,
    ),
    Change(
        "2026-11-24",
        "sparq-beats-h2o",
        "respecified",
        old=(
            "score gain > 0 and BPC drop < 0 (intervals) on the character LM trained here (sparq.lm=charlm, 2 layers)"
        ),
        new=(
            "score gain > 0 and BPC drop < 0 (intervals) on the pretrained SmolLM2-135M "
            "(sparq.lm=smollm2, 512-token contexts)"
        ),
        reason=(
            "Commit 59a7171 moved the default LM to SmolLM2-135M (the character LM stays for the smoke "
            "tests): its copying was fragile and its BPC worse than its own local window's (README). "
            "The rule did not change; the model it is decided on did, after the character LM's results "
            "had been seen (failing)."
        ),
        old_verdict="fails (loses on BPC)",
        commit="59a7171",
        run=_CHARLM,
    ),
    Change(
        "2026-11-24",
        "sparq-beats-local",
        "respecified",
        old=(
            "score gain > 0 and BPC drop < 0 (intervals) on the character LM trained here (sparq.lm=charlm, 2 layers)"
        ),
        new=(
            "score gain > 0 and BPC drop < 0 (intervals) on the pretrained SmolLM2-135M "
            "(sparq.lm=smollm2, 512-token contexts)"
        ),
        reason=(
            "Commit 59a7171 moved the default LM to SmolLM2-135M (the character LM stays for the smoke "
            "tests): its copying was fragile and its BPC worse than its own local window's (README). "
            "The rule did not change; the model it is decided on did, after the character LM's results "
            "had been seen (failing)."
        ),
        old_verdict="fails (loses on BPC)",
        commit="59a7171",
        run=_CHARLM,
    ),
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
        fingerprint="201bcbe47086",
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
        fingerprint="07fa673c0720",
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
        fingerprint="6ed9480b7804",
    ),
    # ------------------------------------------------------------------ 2026-11-25, issue 43
    Change(
        "2026-11-25",
        "sparq-repetition",
        "respecified",
        old=(
            f"ours >= {REPETITION_KEPT:.4f} (Llama 2 7B 186/207), on the whole 95% interval; "
            "512-token contexts, 1/8 split half to r (r = d/8) and half to k (k = S/16 = 34 "
            "positions, the current token among them), 24 tokens generated"
        ),
        new=(
            "ours >= 0.8701 (Table 2, Mistral 7B 201/231), on the whole 95% interval; 2048-token "
            "contexts, k = 128 positions read plus the current token (local window 32 + 1), r from the "
            "budget (8 of 64), SparQ without step 5 on this GQA model, repetition scored up to 256 "
            "characters"
        ),
        reason=(
            "Issue 43: the 1/8 claims ran in a regime the paper never ran (k = 34 of 552 positions; "
            "the paper fixes k = 128 at S ~ 2048), and their margins came from Llama 2 7B figures of "
            "the authors' December 2023 notebook, not from the published tables; the needle's from "
            "SQuAD. The new margins are the published Table 2's (the less favourable of its two GQA "
            "models, Mistral 7B) and, for the needle, Table 3's own task. The old rule's verdict is "
            "evaluated on every run."
        )
        + _PILOT,
        old_rule=at_least(REPETITION_KEPT, kind="non-inferiority"),
        fingerprint=_ISSUE_43["sparq-repetition"],
    ),
    Change(
        "2026-11-25",
        "sparq-bpc",
        "respecified",
        old=(
            f"ours <= {BPC_INCREASE:.4f} (Llama 2 7B 0.782/0.770 - 1), on the whole 95% "
            "interval; 512-token contexts, 1/8 split half to r (r = d/8) and half to k (k = S/16 "
            "= 34 positions, the current token among them), 24 tokens generated"
        ),
        new=(
            "ours <= 0.0484 (Table 2, Mistral 7B 0.65/0.62 - 1), on the whole 95% interval; 2048-token "
            "contexts, k = 128 positions read plus the current token (local window 32 + 1), r from the "
            "budget (8 of 64), SparQ without step 5 on this GQA model, repetition scored up to 256 "
            "characters"
        ),
        reason=(
            "Issue 43: the 1/8 claims ran in a regime the paper never ran (k = 34 of 552 positions; "
            "the paper fixes k = 128 at S ~ 2048), and their margins came from Llama 2 7B figures of "
            "the authors' December 2023 notebook, not from the published tables; the needle's from "
            "SQuAD. The new margins are the published Table 2's (the less favourable of its two GQA "
            "models, Mistral 7B) and, for the needle, Table 3's own task. The old rule's verdict is "
            "evaluated on every run."
        )
        + _PILOT,
        old_rule=at_most(BPC_INCREASE),
        fingerprint=_ISSUE_43["sparq-bpc"],
    ),
    Change(
        "2026-11-25",
        "sparq-needle",
        "respecified",
        old=(
            f"ours >= {NEEDLE_KEPT:.4f} (SQuAD's share, Llama 2 7B .727/.769), on the whole 95% "
            "interval; 512-token contexts, 1/8 split half to r (r = d/8) and half to k (k = S/16 "
            "= 34 positions, the current token among them), 24 tokens generated"
        ),
        new=(
            "ours >= 0.794 (Table 3, the needle task at 1/8, 8k-16k tokens), on the whole 95% "
            "interval; 2048-token contexts, k = 128 positions read plus the current token (local "
            "window 32 + 1), r from the budget (8 of 64), SparQ without step 5 on this GQA model, "
            "repetition scored up to 256 characters"
        ),
        reason=(
            "Issue 43: the 1/8 claims ran in a regime the paper never ran (k = 34 of 552 positions; "
            "the paper fixes k = 128 at S ~ 2048), and their margins came from Llama 2 7B figures of "
            "the authors' December 2023 notebook, not from the published tables; the needle's from "
            "SQuAD. The new margins are the published Table 2's (the less favourable of its two GQA "
            "models, Mistral 7B) and, for the needle, Table 3's own task. The old rule's verdict is "
            "evaluated on every run."
        )
        + _PILOT,
        old_rule=at_least(NEEDLE_KEPT, kind="non-inferiority"),
        fingerprint=_ISSUE_43["sparq-needle"],
    ),
    Change(
        "2026-11-25",
        "sparq-beats-h2o",
        "respecified",
        old="is_true: the repetition gain's 95% interval above 0 and the BPC difference's below 0, at 512 tokens",
        new=(
            "interval_above(0): the repetition gain's 95% paired-bootstrap interval above 0 (three "
            "verdicts), at the paper's operating point; the needle and BPC differences reported beside "
            "it"
        ),
        reason=(
            "Issue 43: superiority as the paper states it. Its Table 2 shows SparQ far above H2O and "
            "LM-Infinite on repetition at 1/8 on every model; its BPC gaps to H2O are at the table's "
            "rounding on the GQA models (0.58 vs 0.59, 0.65 vs 0.66) and reversed on Llama 2 13B (0.70 "
            "vs 0.64), so BPC is not a statement of the paper. A boolean rule had no undecided verdict."
        )
        + _PILOT,
        old_verdict="fails (SparQ copies more but loses on BPC)",
        fingerprint=_ISSUE_43["sparq-beats-h2o"],
        run="README row of commit 5172eeb (default run 2026-11-25, 512-token contexts)",
    ),
    Change(
        "2026-11-25",
        "sparq-beats-local",
        "respecified",
        old="is_true: the repetition gain's 95% interval above 0 and the BPC difference's below 0, at 512 tokens",
        new=(
            "interval_above(0): the repetition gain's 95% paired-bootstrap interval above 0 (three "
            "verdicts), at the paper's operating point; the needle and BPC differences reported beside "
            "it"
        ),
        reason=(
            "Issue 43: superiority as the paper states it. Its Table 2 shows SparQ far above H2O and "
            "LM-Infinite on repetition at 1/8 on every model; its BPC gaps to H2O are at the table's "
            "rounding on the GQA models (0.58 vs 0.59, 0.65 vs 0.66) and reversed on Llama 2 13B (0.70 "
            "vs 0.64), so BPC is not a statement of the paper. A boolean rule had no undecided verdict."
        )
        + _PILOT,
        old_verdict="holds",
        fingerprint=_ISSUE_43["sparq-beats-local"],
        run="README row of commit 5172eeb (default run 2026-11-25, 512-token contexts)",
    ),
    Change(
        "2026-11-25",
        "sparq-beats-streaming",
        "added",
        old="-",
        new="interval_above(0): SparQ - StreamingLLM (4 sinks + window) repetition gain at 1/8, whole 95% interval "
        "above 0",
        reason="Issue 43: users compare SparQ with StreamingLLM; the paper's LM-Infinite baseline is the same rule "
        "with 16 sinks (Table 2)." + _PILOT,
        fingerprint=_ISSUE_43["sparq-beats-streaming"],
    ),
    Change(
        "2026-11-25",
        "decode-speed",
        "removed",
        old="interval_above(3.0): dense / SparQ decode-step time on this CPU at S=16384, r=32, k=128 above the "
        "paper's A100 figure",
        new="-",
        reason="Issue 43: the 3.0x is the A100's at S=4096, batch 64 (Table 4) and the 7.41x the IPU's at S=16384 "
        "(Section 6.1): neither is a figure for this CPU, and a timing is not compared with one from other "
        "hardware except as labelled context. Its verdict followed the machine's load (3.10x [2.71, 3.58], fails, "
        "in the README run; 3.40x [3.04, 3.61], holds, re-run from a clean clone), and its operating point had "
        "moved after a failing result (ledger above).",
        old_verdict="fails (3.10x [2.71, 3.58]); holds (3.40x [3.04, 3.61]) on a re-run of the same code",
        run="README row of commit 5172eeb (default run 2026-11-25)",
        moved_to="table decode_step: measured and theoretical speed-ups at the quality claims' operating point and "
        "at S=16384, the paper's A100 and IPU figures as labelled context",
    ),
    # ------------------------------------------------------------------ 2026-11-28, issue 57
    *code_changes(
        "2026-11-28",
        "Issue 57: decided from the stored Results (run -> results -> decide): each claim's measuring function reads "
        "the per-context outcomes of papers/sparq/results.py instead of the dicts `evaluate` returned; the statistic "
        "(the same ratio-of-means and paired bootstraps, seeded by the run's seed), rule and figure are unchanged, "
        "and the smoke run's values are identical.",
        {
            "sparq-repetition": "cff757d074b3",
            "sparq-bpc": "51486f7fb2ea",
            "sparq-needle": "baaff1d8fbbd",
            "sparq-beats-h2o": "238140bbdb65",
            "sparq-beats-local": "e1a0f98aaff3",
            "sparq-beats-streaming": "3455159fc57c",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "sparq-repetition": "957253602668",
        "sparq-bpc": "d690d7f2c02e",
        "sparq-needle": "48a4655b093d",
        "sparq-beats-h2o": "6b5d2af4ddf3",
        "sparq-beats-local": "9ae19924e19b",
        "sparq-beats-streaming": "f325a2e74ee2",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "sparq-repetition": "fa1716414f85",
        "sparq-bpc": "df074de7183f",
        "sparq-needle": "d5f07daf42e6",
        "sparq-beats-h2o": "fa042675bba8",
        "sparq-beats-local": "ccc0ed2193fb",
        "sparq-beats-streaming": "a489c8626c0c",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    "issue 60: the decode methods became objects (core.nn.decode_methods: the claims' SparQ transfer is "
    "SparQ(r=, k=).transfer, no longer published.sparq_attention_transfer, the same formula), the old 1/8 "
    "rules moved from claims.py into the ledger that evaluates them, and the claims API's JSON helper "
    "became public (core.claims.jsonable); no declaration, statistic or rule changed. There is no "
    "reference record to re-decide (results/pending.yaml says why)",
    {
        "sparq-repetition": "f2cb1540417f",
        "sparq-bpc": "5dc689d1c49c",
        "sparq-needle": "8860bae51511",
        "sparq-beats-h2o": "3df8ec40ede6",
        "sparq-beats-local": "b9fa282abc23",
        "sparq-beats-streaming": "26423c354b03",
    },
)

# code entry (2026-11-29)
LEDGER += code_changes(
    "2026-11-29",
    "issue 62: core.claims' rules gained their region (the range our figure must lie in, read by "
    "core.claims.margin_distance to show how far a verdict sits from the margin); the functions at_most, "
    "at_least, equivalent and interval_above changed form, none decides differently (tests/core/test_claims.py "
    "checks the distance against each rule's verdict). No declaration, statistic or rule changed. There is no "
    "reference record to re-decide (results/pending.yaml says why)",
    {
        "sparq-repetition": "5bc693d6b774",
        "sparq-bpc": "256dfa7a6c6e",
        "sparq-needle": "905193a60172",
    },
)

# ------------------------------------------------------------------ 2026-11-29, issue 62
LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels only; no rule, figure or statistic changed. Figure source: paper (Table 2 and Table 3, read in "
    "the ICML version's text, arXiv v6: REFERENCES.md). Margin source: paper for the repetition (201/231), BPC "
    "(0.65/0.62 - 1) and needle (0.794) shares, where choosing Mistral 7B, the less favourable of the two "
    "grouped-query models, is ours; ours for the beats-X claims (0: the direction of the paper's statement). n = "
    "sparq.examples contexts (64 by default). sparq-needle is declared undecidable with this model: its gate needs a "
    "dense model that retrieves half of the needles and dense SmolLM2-135M retrieves about 19% at 2048 tokens, so no "
    "number of contexts decides it. There is no reference record (results/pending.yaml says why); on the last "
    "default run (2026-11-25) the verdicts do not move: sparq-repetition undecided -> undecided, sparq-bpc holds "
    "-> holds, sparq-needle not measured -> not measured, the three beats-X claims holds -> holds",
    {
        "sparq-repetition": "b83c05f74e3f",
        "sparq-bpc": "f04f944750d8",
        "sparq-needle": "4529360e75ef",
        "sparq-beats-h2o": "4be57fdbf722",
        "sparq-beats-local": "136b82243450",
        "sparq-beats-streaming": "a11b5349cf4f",
    },
)

# ------------------------------------------------------------------ 2026-11-29, issue 63
_ISSUE_63 = (
    "issue 63: Section 6.1's IPU timing (Bow IPU, batch 1, 32 heads of 128, S = 16384, r = 32, k = 128: dense 40.4 "
    "ms, SparQ 5.28 ms, 7.41x) decided on the simulated Bow IPU (ipu_model), the timed kernels lowered from JAX with "
    "the cache in streaming memory as the authors' benchmark keeps it. Declared before any simulated run at this "
    "point; exploratory runs seen before: the dense kernel with K and V in tile memory (S = 1024: 12.2 us; S = "
    "16384: 937.5 us, before batched matmuls ran side by side), SparQ's kernel at S = 1024 and S = 512 (4 heads: "
    "0.14 and 0.10 ms, sync-bound). The simulator's streaming bandwidth (15.75 GB/s, an assumption) is 2.4x the "
    "6.6 GB/s the paper's own times imply (REFERENCES.md, IPU benchmark), so the time claims were expected to fail "
    "if streaming dominates; the margins were not chosen to change that."
)
LEDGER += [
    Change(
        "2026-11-29",
        "sparq-ipu-speedup",
        "added",
        old="",
        new="|simulated dense time / SparQ time - 7.41| <= 0.10 x 7.41 (the paper's ratio as printed, [7.405, "
        "7.415], widened by 10%: [6.66, 8.16]); one deterministic simulated run of each kernel",
        reason=f"{_ISSUE_63} Margin ours (10%): the paper's measurement and its theory (7.53x) differ by 1.6%.",
        fingerprint="c113be3734ab",
    ),
    Change(
        "2026-11-29",
        "sparq-ipu-dense-time",
        "added",
        old="",
        new="|simulated dense ms - 40.4| <= 0.25 x 40.4 (as printed, [40.35, 40.45], widened by 25%: [30.26, 50.56])",
        reason=f"{_ISSUE_63} Margin ours (25%).",
        fingerprint="d88cb22d4e62",
    ),
    Change(
        "2026-11-29",
        "sparq-ipu-sparq-time",
        "added",
        old="",
        new="|simulated SparQ ms - 5.28| <= 0.25 x 5.28 (as printed, [5.275, 5.285], widened by 25%: [3.956, "
        "6.606]); the authors' notebook's 5.457 ms at k = 128 lies inside",
        reason=f"{_ISSUE_63} Margin ours (25%).",
        fingerprint="c87f138785c0",
    ),
]

# code entry (2026-11-30)
LEDGER += code_changes(
    "2026-11-30",
    "issue 63's review: the IPU claims' detail reads each phase's share from IpuKernel.shares (results.py), which the "
    "report's ipu_step table reads too, instead of dividing the phases in each; the same shares, the same text. No "
    "declaration, statistic or rule changed. The reference (c1cea43) predates these claims, so there is no record to "
    "re-decide them on; on the first run's stored timing (aa097ce) the details and verdicts are unchanged",
    {
        "sparq-ipu-speedup": "13b35ecb53bd",
        "sparq-ipu-dense-time": "556a2cd40e3f",
        "sparq-ipu-sparq-time": "a64abe2b488f",
    },
)

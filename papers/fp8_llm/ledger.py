"""Every change to the FP8 LLM claims, oldest first (core/ledger.py). Entries before 2026-11-25 predate the claims
lock and carry no fingerprint: they were found in `git log -p -- papers/fp8_llm/report.py` and the README's history,
with the verdict last recorded under the old rule."""

from core.claims import interval_below
from core.ledger import ISSUE_58_CORRECTION, ISSUE_58_FORM, Change, code_changes, label_changes

# the claims' fingerprints after issue 44 (claims.lock.json)
_ISSUE_44 = {
    "amax-matches-fp32": "aeaafeaa6caa",
    "cscale-worse-than-amax": "b8e3588c0700",
    "cscale-gap-grows": "b80c2e7b4e02",
    "fp8-inference": "de68d6c3e764",
    "pretrained-fp8-inference": "c70cee681012",
    "gradients-smallest-amax": "bc5c9defb2d1",
}
_README_44 = "README run of 2026-11-26 (default scale, 3 seeds, 8 SmolLM2 windows, 10.9 min)"
_SEEDS_44 = (
    "The seeds rose from 3 to 8 for issue 44 so that the 'matches' claims' t intervals (0.84 x the per-seed sd at "
    "8 seeds, 2.48 x at 3) can be narrower than their 1% margin; the count was computed from the per-seed sds of "
    "that run, whose results had been seen."
)

_ISSUE_57 = (
    "issue 57: decided from the stored Results (run -> Results -> decide -> render), so a change to how a claim is "
    "decided or shown is re-decided without re-running; the statistic, rule and figure are unchanged"
)

LEDGER: list[Change] = [
    Change(
        "2026-11-24",
        "amax-matches-fp32",
        "respecified",
        old="ours <= 0.01: largest |relative difference| over sizes, one seed per arm (largest size d_model 128)",
        new="ours <= 0.01: largest |mean over 3 seeds of the paired per-seed differences| over sizes (largest size "
        "d_model 96)",
        reason="Issue 23 (claims that can fail) asked for 3 or more seeds; the rule's threshold is unchanged, the "
        "statistic became a 3-seed mean (still a point estimate, no interval) and the largest size shrank to keep "
        "three seeds within the default run's time. The one-seed result had been seen (it held).",
        old_verdict="holds (+0.39% / -0.01% / -0.61% at d_model 32 / 64 / 128)",
        commit="fae6d2c",
        run="README row of commit 5f84952 (default run 2026-11-23, 14.8 min)",
    ),
    Change(
        "2026-11-24",
        "cscale-worse-than-amax",
        "respecified",
        old="is_true: cscale's loss above amax's at every size (one seed per arm)",
        new="interval_above(0): the t interval over 3 seeds of cscale / amax - 1 (paired by "
        "seed) above 0 at every size",
        reason="Issue 23 (claims that can fail) asked for seed spreads and intervals instead of one-seed "
        "comparisons. The one-seed result had been seen (it held); under the new rule the README run of "
        "2026-11-24 straddles 0 (+0.54% [-2.9, +4.0] at the lowest size): undecided.",
        old_verdict="holds (+2.5% / +1.7% / +5.9%)",
        commit="fae6d2c",
        run="README row of commit 5f84952 (default run 2026-11-23)",
    ),
    Change(
        "2026-11-24",
        "cscale-gap-grows",
        "respecified",
        old="is_true: cscale's gap to amax increases from each size to the next (one seed per arm)",
        new="interval_above(0): least-squares slope of cscale / fp32 - 1 against ln(parameters) over every "
        "(size, seed) point, 3 seeds",
        reason="Issue 23 named this claim: strict monotonicity over three sizes with one seed cannot be decided; "
        "it asked for >= 3 seeds and a slope with an interval. Changed after a failing result had been seen (the "
        "gap dipped at the middle size); the reference arm also moved from amax to fp32.",
        old_verdict="fails (the gap does not grow monotonically: it dips at the middle size)",
        commit="fae6d2c",
        run="README row of commit 5f84952 (default run 2026-11-23)",
    ),
    Change(
        "2026-11-25",
        "gradients-need-largest-biases",
        "removed",
        old="is_true: gradient median bias above both activation and weight medians",
        new="-",
        reason="Issue 41: holds by construction. The bias is floor(log2(max / amax)) and E5M2's max (57344) is 2^7 "
        "x E4M3's (448), so gradients get ~7 more octaves of bias by their format alone. A restated claim that "
        "can fail (log2 amax of gradients vs activations) is left to a later issue.",
        old_verdict="holds (medians: activations 7, weights 11, gradients 27)",
        commit="8236b18",
        run="README row (default run 2026-11-24 21:57)",
        moved_to="fact gradient-biases-largest (construction), with the median biases as its value",
    ),
    # ------------------------------------------------------------------ 2026-11-26, issue 44
    Change(
        "2026-11-26",
        "amax-matches-fp32",
        "respecified",
        old="ours <= 0.01: largest |mean over 3 seeds of the paired gaps amax / fp32 - 1| over sizes, a point estimate",
        new="-0.01 <= ours <= 0.01 (equivalence): the 95% t interval over 8 seeds of the paired gaps amax / fp32 - 1 "
        "inside [-1%, +1%] at every size; ours is the size's interval that reaches farthest from 0",
        reason="issue 44: 'matches' was decided on a 3-seed point estimate while the pretrained claim used an "
        "interval, and a one-sided bound cannot tell a match from a gain; now a two-sided equivalence on the seeds' "
        "interval. The result under the old rule had been seen (it held: +0.40% at size m, per-seed sd 0.76%). "
        + _SEEDS_44,
        old_verdict="holds (+0.40% at size m)",
        commit="5164b10",
        run=_README_44,
        fingerprint=_ISSUE_44["amax-matches-fp32"],
    ),
    Change(
        "2026-11-26",
        "fp8-inference",
        "respecified",
        old="ours <= 0.01: largest |FP8 / FP32 - 1| over every (size, seed) trained FP32 model, a point value",
        new="-0.01 <= ours <= 0.01 (equivalence): the 95% t interval over 8 seeds of FP8 / FP32 - 1 inside "
        "[-1%, +1%] at every size; ours is the size's interval that reaches farthest from 0",
        reason="issue 44: every 'matches' claim decided on a seed interval, two-sided. The result under the old rule "
        "had been seen (it held: at most +0.063%, sd at most 0.03%). " + _SEEDS_44,
        old_verdict="holds (0.063%: size s, seed 1)",
        commit="5164b10",
        run=_README_44,
        fingerprint=_ISSUE_44["fp8-inference"],
    ),
    Change(
        "2026-11-26",
        "pretrained-fp8-inference",
        "respecified",
        old="interval_below(0.01): the 95% paired-bootstrap interval of SmolLM2's amax / fp32 - 1 (mean loss per "
        "token) below 1%, 8 windows of 512 tokens",
        new="-0.01 <= ours <= 0.01 (equivalence): the same interval inside [-1%, +1%], 64 windows of 512 tokens; "
        "the weights' provenance (Q4_1 / Q8_0 GGUF dequantised to float32) stated in the claim",
        reason="issue 44: 8 windows gave a half-width of 0.25% beside an estimate 0.06% from the margin; 64 windows "
        "(of the 337 the test plays hold) narrow it to ~0.09%, and 'matches' becomes two-sided like the other "
        "claims. The result had been seen (undecided: +0.94% [+0.69, +1.17]); the old rule is evaluated on every "
        "run.",
        old_rule=interval_below(0.01),
        old_verdict="undecided (+0.94% [+0.69, +1.17], 8 windows)",
        commit="5164b10",
        run=_README_44,
        fingerprint=_ISSUE_44["pretrained-fp8-inference"],
    ),
    Change(
        "2026-11-26",
        "cscale-worse-than-amax",
        "respecified",
        old=(
            "interval_above(0): the t interval of cscale / amax - 1 (paired by seed) above 0 at every "
            "size, over 3 seeds"
        ),
        new=(
            "interval_above(0): the t interval of cscale / amax - 1 (paired by seed) above 0 at every "
            "size, over 8 seeds (the rule unchanged: only the seed count, unit and resolution texts "
            "moved)"
        ),
        reason="issue 44: the seed count rose for the 'matches' claims and these claims pair the same seeds. "
        + _SEEDS_44,
        old_verdict="undecided (+0.71% [-3.6, +5.0] at size s)",
        commit="5164b10",
        run=_README_44,
        fingerprint=_ISSUE_44["cscale-worse-than-amax"],
    ),
    Change(
        "2026-11-26",
        "cscale-gap-grows",
        "respecified",
        old=(
            "interval_above(0): the slope of cscale / fp32 - 1 against ln(parameters) over every "
            "(size, seed) point, over 3 seeds"
        ),
        new=(
            "interval_above(0): the slope of cscale / fp32 - 1 against ln(parameters) over every "
            "(size, seed) point, over 8 seeds (the rule unchanged: only the seed count, unit and "
            "resolution texts moved)"
        ),
        reason="issue 44: the seed count rose for the 'matches' claims and these claims pair the same seeds. "
        + _SEEDS_44,
        old_verdict="undecided (+0.0005 [-0.0078, +0.0087] over 9 points)",
        commit="5164b10",
        run=_README_44,
        fingerprint=_ISSUE_44["cscale-gap-grows"],
    ),
    Change(
        "2026-11-26",
        "gradients-smallest-amax",
        "added",
        old="-",
        new="interval_below(0): per seed, median log2 amax of the gradients minus the larger of the activations' and "
        "the weights' medians (layers, recorded steps and sizes of the amax arm); the 95% t interval over 8 seeds "
        "below 0",
        reason="issue 44: the construction fact of 2026-11-25 (gradient-biases-largest) restated so it can fail: the "
        "biases differ by format, the amaxes do not. No amax had been recorded in a report, but the README run's "
        "median biases (activations 7, weights 11, gradients 27) imply a gap of about -13 octaves, so the outcome "
        "was foreseeable; about 10 of those octaves are the 1 / (batch x sequence) of the mean loss (the claim's "
        "detail states it). The fact stays beside it.",
        fingerprint=_ISSUE_44["gradients-smallest-amax"],
    ),
    *code_changes(
        "2026-11-28",
        _ISSUE_57 + ", and the smoke run's values are identical",
        {
            "amax-matches-fp32": "4ba33bf2476e",
            "cscale-worse-than-amax": "11457780b365",
            "cscale-gap-grows": "10fa58ff1765",
            "fp8-inference": "ab0736735070",
            "gradients-smallest-amax": "6ebdbc2b40a6",
        },
    ),
    *code_changes(
        "2026-11-28",
        _ISSUE_57 + "; SmolLM2 is off in the smoke run: the old and the new code gave identical values (interval, "
        "verdict and detail, the power text included) on the smoke run's Results with a hand-made 64-window SmolLM2 "
        "result",
        {"pretrained-fp8-inference": "9f666f4f64bd"},
    ),
    *code_changes(
        "2026-11-28",
        "issue 57's demonstration: a decision helper written in several papers moved into core.stats, decided "
        "again from the stored Results without training. The per-seed relative gap arm / reference - 1 (+inf "
        "where the arm diverged), written here as _rel, is now core.stats.relative_gaps; the statistic, rule, "
        "figure and intervals are unchanged, and every claim's value and verdict on the smoke fixture's Results "
        "is identical to the old code's. The estimates now also hold a one-seed arm's gap (a number), which the "
        "report computed itself before and now shows from the decision",
        {
            "amax-matches-fp32": "1f9cc2832f45",
            "cscale-worse-than-amax": "fb640e923d7c",
            "cscale-gap-grows": "a258d579b9a9",
            "fp8-inference": "cf9cb556d008",
        },
    ),
]

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_FORM,
    {
        "amax-matches-fp32": "c24db2dc3abb",
        "cscale-worse-than-amax": "b159622149ae",
        "cscale-gap-grows": "e33351fce534",
        "fp8-inference": "5d8e218efdc0",
        "pretrained-fp8-inference": "3eee277c2712",
        "gradients-smallest-amax": "d2a73b45c094",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    ISSUE_58_CORRECTION,
    {
        "amax-matches-fp32": "6f5cf2d1662e",
        "cscale-worse-than-amax": "e27c81033ffa",
        "cscale-gap-grows": "02128fb6065a",
        "fp8-inference": "6992c4843ff0",
        "pretrained-fp8-inference": "82030afff77e",
        "gradients-smallest-amax": "1a28645daf12",
    },
)

# code entry (2026-11-28)
LEDGER += code_changes(
    "2026-11-28",
    "the claims API's JSON helper became public (core.claims._jsonable -> jsonable, issue 60: one import "
    "path for the claims API and no private name used across modules); no declaration, statistic or rule "
    "changed. There is no reference record to re-decide (results/pending.yaml says why)",
    {
        "amax-matches-fp32": "8c9c01939b10",
        "cscale-worse-than-amax": "71fe39f1cc38",
        "cscale-gap-grows": "db9731b2071c",
        "fp8-inference": "b97ba66b0c7c",
        "pretrained-fp8-inference": "071c3ea2afc8",
        "gradients-smallest-amax": "b41f53e4053a",
    },
)

# code entry (2026-11-29)
LEDGER += code_changes(
    "2026-11-29",
    "the claim's power text reckons the windows that would decide on the bootstrap interval's side facing "
    "the nearer margin instead of on its mean half-width (the interval is asymmetric: the old text "
    "understated the windows needed, 63 where the facing side needs ~68 in the run of issue 44's note); "
    "the statistic, the rule and the verdict are unchanged, only the claim's detail text moves. No "
    "reference record to re-decide (results/pending.yaml says why)",
    {
        "pretrained-fp8-inference": "710c2bafb0d5",
    },
)

# ------------------------------------------------------------------ 2026-11-29, issue 62
_REFERENCE = "results/fp8_llm (reference run of 2026-11-29, default scale, 8 seeds, 64 SmolLM2 windows)"

LEDGER.append(
    Change(
        "2026-11-29",
        "gradients-smallest-amax",
        "removed",
        old="interval_below(0): per seed, median log2 amax of the gradients minus the larger of the activations' and "
        "the weights' medians (layers, recorded steps and sizes of the amax arm); the 95% t interval over 8 seeds "
        "below 0",
        new="-",
        reason="issue 62: it could not fail at this design. The loss is the mean over the batch's 16 x 64 = 1024 "
        "tokens, so every output gradient carries 2^-10 from that convention alone: 10 of the -13.7 octaves "
        "measured, and the interval sat ~195 half-widths below its bound 0. The paper gives no figure for it "
        "(REFERENCES.md [4]: our reading of its scale-distribution plots). It is reported as a construction fact "
        "beside gradient-biases-largest, its value the same interval. The verdict leaves the count: holds -> fact",
        old_verdict="holds (-13.69 [-13.76, -13.62] octaves)",
        commit="bd407c8",
        run=_REFERENCE,
        moved_to="fact gradients-smallest-amax (construction), its value the same t interval over seeds",
    )
)

LEDGER += label_changes(
    "2026-11-29",
    "issue 62: labels only; rule, figure and statistic unchanged. figure_source secondary for every claim: "
    "REFERENCES.md says only the abstract and the opening of Sec. 1 were read, and the figures come from a blog "
    "summary (S), the OpenReview reviews (R) and the Graphcore blog (B); a search of the stored pages on 2026-11-29 "
    "found no more of the paper's text (its arXiv HTML page gave the abstract and the opening of Sec. 1 again). "
    "margin_source ours for "
    "each (+-1% and 0 are this project's). n and n_of: the 8 seeds behind each t interval (per size for the slope) "
    "and SmolLM2's 64 windows, so an undecided rule says what sample would decide it. The verdicts move: "
    "amax-matches-fp32 and fp8-inference holds -> unverified (rule: holds); cscale-worse-than-amax, "
    "cscale-gap-grows and pretrained-fp8-inference undecided -> unverified (rule: undecided). fp8-inference stays a "
    "claim: it sits 43 half-widths inside its margin, but wrong FP8 casts or scales would fail it",
    {
        "amax-matches-fp32": "3d478703264d",
        "cscale-worse-than-amax": "cc27e5d0a0be",
        "cscale-gap-grows": "867735866f7e",
        "fp8-inference": "c7dac41a948a",
        "pretrained-fp8-inference": "f647e8dca8be",
    },
)

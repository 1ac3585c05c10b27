"""The unit-scaling claims: their declarations (from the config alone, before any run) and the function that
measures them. The paper's side of each claim is in papers/unit_scaling/REFERENCES.md (US-FIG1, US-BPC and the gaps
derived from it, US-FP8); the tolerances are this project's (the same file says so). The ledger of changes to these
claims is papers/unit_scaling/ledger.py."""

from __future__ import annotations

import math

import numpy as np

from core.report import Claim, Rule, at_least, at_most, or_diverged
from core.unit_scaling.analysis import TensorScale
from papers.unit_scaling.train import ARMS, IID_LABEL, ArmResult, recipe

# Test bits per character of the paper's character-LM table (WikiText-103 raw), by model row: papers/unit_scaling/
# REFERENCES.md, US-BPC (the claims' paper figures derived from it: US-GAP-FP16-UNIT, US-GAP-FP16-REG). Context
# only: no claim's rule compares with them (every rule is a threshold of ours on our own gap).
PAPER_BPC = {
    "post": {
        "fp16_regular": 1.660,
        "fp16_unit": 1.540,
        "fp16_regular_ls2048": 1.555,
        "fp32_regular": 1.548,
        "fp32_unit": 1.540,
    },
    "pre": {
        "fp16_regular": 1.661,
        "fp16_unit": 1.567,
        "fp16_regular_ls2048": 1.587,
        "fp32_regular": 1.582,
        "fp32_unit": 1.562,
    },
}

# "orders of magnitude lower" (US-FIG1 in REFERENCES.md): a median gradient std under 1/100; the threshold is ours
REGULAR_GRADIENTS_BELOW = math.log2(1 / 100)

# the design of the four gap claims (a point value: the ratio of the seed means)
GAP_STATISTIC = "relative test-BPC gap to FP32 regular: mean BPC of the arm's seeds / mean of FP32 regular's - 1"
GAP_UNIT = "2 seeds (mean; decided on the point value)"
GAP_RESOLUTION = (
    "point value, no interval: the README run's seed spread (FP32 regular 2.95 / 2.94 BPC) puts the gap's standard "
    "error near 0.25%, a 95% Welch half-width near 1% at 2 seeds"
)
INIT_UNIT = "deterministic: one initialisation (the first seed) on one batch of text (analysis_batch_size windows)"


def _worse_or_diverged(threshold: float) -> Rule:
    return or_diverged(at_least(threshold), f"gap >= {threshold:.0%} (worse than FP32), or diverged")


def _gap_rule(threshold: float) -> Rule:
    return Rule(
        f"gap <= {threshold:.0%} (at most {threshold:.0%} worse than FP32)", at_most(threshold).check, "non-inferiority"
    )


def _claims(cfg) -> dict[str, Claim]:
    c = cfg.unit_scaling
    fp8 = recipe(c).label
    fp16 = "weights and Adam state in FP16" if c.fp16_state else "FP32 weights and Adam state"
    out = [
        Claim(
            "init-unit-scales",
            "At initialisation every activation and activation gradient of the unit-scaled model (q, k and v "
            "separately) has std within a factor 2 of 1 (max |log2 std|; weight gradients reported beside)",
            "about 0 (Fig. 1)",
            at_most(1.0, kind="bound"),
            source="US-FIG1",
            statistic="max |log2 std| over the unit-scaled FP32 model's activations and activation gradients at "
            "initialisation",
            unit=INIT_UNIT,
            resolution="exact (one draw, not replicated over seeds)",
        ),
        Claim(
            "init-regular-gradients-small",
            "...while the regular model's gradients sit orders of magnitude lower (median log2 std of its activation "
            "gradients)",
            "far below 0 (Fig. 1)",
            at_most(REGULAR_GRADIENTS_BELOW, kind="bound"),
            source="US-FIG1",
            statistic="median log2 std of the regular FP32 model's activation gradients at initialisation",
            unit=INIT_UNIT,
            resolution="exact (one draw, not replicated over seeds)",
        ),
        Claim(
            "fp16-unit-matches-fp32",
            f"FP16 unit-scaled without loss scaling ({fp16}) reaches the FP32 (regular) test BPC within 2% "
            "(relative gap)",
            PAPER_BPC["pre"]["fp16_unit"] / PAPER_BPC["pre"]["fp32_regular"] - 1,
            _gap_rule(0.02),
            source="US-GAP-FP16-UNIT",
            statistic=GAP_STATISTIC,
            unit=GAP_UNIT,
            resolution=GAP_RESOLUTION,
        ),
        Claim(
            "fp16-regular-worse",
            f"FP16 regular without loss scaling ({fp16}) is measurably worse than FP32 (relative BPC gap), or diverges",
            PAPER_BPC["pre"]["fp16_regular"] / PAPER_BPC["pre"]["fp32_regular"] - 1,
            _worse_or_diverged(0.01),
            source="US-GAP-FP16-REG",
            statistic=GAP_STATISTIC + ' ("diverged" when a seed\'s test BPC is not finite)',
            unit=GAP_UNIT,
            resolution=GAP_RESOLUTION,
        ),
        Claim(
            "fp8-unit-matches-fp32",
            f"FP8 unit-scaled (E4M3/E5M2 matmul casts, {fp8}) reaches the FP32 regular test BPC within 3% (relative "
            "gap; the gap to FP32 unit-scaled is reported beside)",
            "close to FP32",
            _gap_rule(0.03),
            source="US-FP8",
            statistic=GAP_STATISTIC,
            unit=GAP_UNIT,
            resolution=GAP_RESOLUTION,
        ),
        Claim(
            "fp8-regular-fails",
            "...while FP8 regular with the same casts does not (relative BPC gap above 3%, or diverged)",
            "fails (gradients under E5M2's 2^-16)",
            _worse_or_diverged(0.03),
            source="US-FP8",
            statistic=GAP_STATISTIC + ' ("diverged" when a seed\'s test BPC is not finite)',
            unit=GAP_UNIT,
            resolution=GAP_RESOLUTION,
        ),
    ]
    return {claim.id: claim for claim in out}


ARM_CLAIMS = {  # claim -> the arm it measures against FP32 regular
    "fp16-unit-matches-fp32": "fp16_unit",
    "fp16-regular-worse": "fp16_regular",
    "fp8-unit-matches-fp32": "fp8_unit",
    "fp8-regular-fails": "fp8_regular",
}


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run (the runner records them and checks the report keeps them)."""
    return list(_claims(cfg).values())


def mean_bpc(result: ArmResult | None) -> float | str | None:
    if result is None:
        return None
    v = np.asarray(result.test_bpc, np.float64)
    return float(v.mean()) if np.isfinite(v).all() else "diverged"


def _gap(results: dict[str, ArmResult], arm: str, base: str = "fp32_regular") -> float | str | None:
    a, b = mean_bpc(results.get(arm)), mean_bpc(results.get(base))
    if a is None or b is None or isinstance(b, str):
        return None
    return "diverged" if isinstance(a, str) else a / b - 1


def _worst(rows: list[TensorScale], kinds: tuple[str, ...]) -> TensorScale:
    return max((r for r in rows if r.kind in kinds and r.std > 0), key=lambda r: abs(math.log2(r.std)))


def measure(cfg, scales: dict[str, list[TensorScale]], results: dict[str, ArmResult]) -> list[Claim]:
    """Our figure for every declared claim (an arm left out of the run leaves its claim unmeasured)."""
    CLAIMS = _claims(cfg)
    regular, unit = (scales[ARMS[a].label] for a in ("fp32_regular", "fp32_unit"))
    acts = ("activation", "activation grad")
    worst = _worst(unit, acts)
    n_acts = sum(1 for r in unit if r.kind in acts)
    worst_w, worst_iid = _worst(unit, ("weight grad",)), _worst(scales[IID_LABEL], ("weight grad",))
    regular_grads = [math.log2(r.std) for r in regular if r.kind == "activation grad" and r.std > 0]
    out = [
        CLAIMS["init-unit-scales"].measured(
            abs(math.log2(worst.std)),
            f"{n_acts} activations and activation gradients on a batch of text; worst: {worst.name} ({worst.kind}, "
            f"std {worst.std:.2f}). Weight gradients, whose batch^-1/2 rule assumes independent tokens (Adam is "
            f"invariant to their scale and no arm casts them): worst {worst_w.name} std {worst_w.std:.2f} on text, "
            f"{worst_iid.std:.2f} on i.i.d. random tokens",
        ),
        CLAIMS["init-regular-gradients-small"].measured(
            float(np.median(regular_grads)), f"threshold log2(1/100) = {REGULAR_GRADIENTS_BELOW:.2f}"
        ),
    ]
    for cid, arm in ARM_CLAIMS.items():
        gap = _gap(results, arm)
        if gap is None:
            out.append(CLAIMS[cid])  # an arm left out of this run: not measured
            continue
        r = results[arm]
        detail = (
            f"test BPC per seed {', '.join(f'{v:.3f}' for v in r.test_bpc)} vs FP32 "
            f"{', '.join(f'{v:.3f}' for v in results['fp32_regular'].test_bpc)}; "
            f"gradient underflow {r.grad_underflow['init']:.1%} at init, {r.grad_underflow['final']:.1%} at the end"
        )
        twin = "fp32_unit" if ARMS[arm].scaling == "unit" else None
        unit_gap = _gap(results, arm, twin) if twin else None
        if isinstance(unit_gap, float):
            detail += f"; gap to FP32 unit-scaled {unit_gap:+.2%}"
        if sum(r.skipped_steps):
            detail += f"; {sum(r.skipped_steps)} non-finite steps skipped over the seeds"
        if ARMS[arm].fp8 and recipe(cfg.unit_scaling).rounding == "stochastic":
            detail += (
                "; underflow counts what round-to-nearest flushes: stochastic rounding turns a gradient g below "
                "E5M2's smallest subnormal 2^-16 into 2^-16 with probability |g|/2^-16, so it reaches the weights "
                "unbiased (unit_scaling.fp8.rounding=nearest casts plainly)"
            )
        out.append(CLAIMS[cid].measured(gap, detail))
    return out

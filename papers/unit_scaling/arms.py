"""The arms of the paper's table and what both sides of a run share about them: names, labels, the FP16 storage
settings, which FP32 arm each low-precision arm is compared with, and the paper's own figures for them
(papers/unit_scaling/REFERENCES.md). Imports no JAX: the config, the claims and the report read it; the compute code
(train.py) gives each arm its model's parametrization and number formats."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arm:
    """One column of the paper's table (papers/unit_scaling/REFERENCES.md, US-BPC): a scaling, number formats and a
    loss-scaling rule. Its model's parametrization and formats: papers.unit_scaling.train.parametrization and
    .formats."""

    name: str
    label: str
    scaling: str  # "regular" | "unit"
    fwd: str | None  # format of weights and activations (None: FP32)
    bwd: str | None  # format of gradients
    loss_scale: str = "none"  # "none" | "static" | "dynamic"
    static_scale: float = 1.0

    @property
    def fp8(self) -> bool:
        return self.fwd in ("e4m3", "e5m2")

    @property
    def fp16(self) -> bool:
        return self.fwd == "fp16"

    @property
    def scaling_label(self) -> str:
        """The scaling as the labels write it: "regular" or "unit-scaled"."""
        return {"regular": "regular", "unit": "unit-scaled"}[self.scaling]


ARMS: dict[str, Arm] = {
    a.name: a
    for a in (
        Arm("fp32_regular", "FP32 regular", "regular", None, None),
        Arm("fp32_unit", "FP32 unit-scaled", "unit", None, None),
        Arm("fp16_regular", "FP16 regular, no loss scale", "regular", "fp16", "fp16"),
        Arm("fp16_regular_ls2048", "FP16 regular, loss scale 2048", "regular", "fp16", "fp16", "static", 2048.0),
        Arm("fp16_regular_dynamic", "FP16 regular, dynamic loss scale", "regular", "fp16", "fp16", "dynamic"),
        Arm("fp16_unit", "FP16 unit-scaled", "unit", "fp16", "fp16"),
        Arm("fp8_regular", "FP8 regular (E4M3/E5M2 casts)", "regular", "e4m3", "e5m2"),
        Arm("fp8_unit", "FP8 unit-scaled (E4M3/E5M2 casts)", "unit", "e4m3", "e5m2"),
    )
}

# the third model of the scale analysis at initialisation: FP32 unit-scaled on i.i.d. random tokens
IID_LABEL = "FP32 unit-scaled, i.i.d. random tokens"

# How an FP16 arm stores its weights and Adam state between steps (unit_scaling.fp16_storage; train.py does it); the
# update arithmetic is FP32 in every case.
FP16_STORAGE = {
    "paper": "weights and Adam's first moment in FP16 with stochastic rounding, the second moment in FP32 (the "
    "authors' character-LM code on the IPU)",
    "fp16": "weights and both Adam moments in FP16, round-to-nearest",
    "fp32": "FP32 weights and Adam state",
}

# Test bits per character of the authors' character-LM results (WikiText-103 raw), attention rows: papers/unit_scaling/
# REFERENCES.md, US-BPC (the claims' paper figures derived from it: US-GAP-FP16-UNIT, -LS, -REG). Shown beside ours;
# the rules decide our paired gaps against the margin read from the same table (US-MARGIN).
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

# The equivalence margin of the precision claims, ours, read from the authors' character-LM notebook (US-BPC,
# US-MARGIN in REFERENCES.md; whether the paper prints that table was not checked): the largest gap it shows between
# a low-precision arm the paper calls matching and that arm's FP32 counterpart is 0.48% (RNN, FP16 regular with loss
# scale 2048: 1.682 / 1.674), the smallest degradation attributed to FP16 underflow is 1.4% (RNN, FP16 regular
# without loss scaling: 1.697 / 1.674). 1%, about their midpoint, separates the two.
MATCH_MARGIN = 0.01

# arms whose precision claim compares them with FP32 of the same parametrization (the paper's comparisons), and the
# FP32 twin of each
TWIN = {
    "fp16_unit": "fp32_unit",
    "fp8_unit": "fp32_unit",
    "fp16_regular_ls2048": "fp32_regular",
    "fp16_regular": "fp32_regular",
    "fp8_regular": "fp32_regular",
}


def gap_name(arm: str, reference: str) -> str:
    """The name of the estimate arm / reference - 1 of the test BPC, paired by seed (decided in claims.py, shown in
    the report's gaps table)."""
    return f"gap/{arm}/{reference}"

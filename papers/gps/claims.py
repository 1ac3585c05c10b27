"""The GPS++ claims, declared from the config alone before any run, and their decision: a pure function of the
stored Results (`decide`), with the function that measures each claim from them.

Every figure is an entry of papers/gps/REFERENCES.md, cited by its [name] (the paper's printed figures:
papers/gps/published.py). The report (papers/gps/report.py) builds the tables and the figure from the Results and
this decision; the history of these claims is papers/gps/ledger.py, their fingerprints papers/gps/claims.lock.json.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from core.claims import Claim, Decided, Fact, Interval, interval_above, interval_below
from core.report import mean_std
from core.stats import paired_relative_gap, relative_gaps, seed_mean, seeds_for_half_width, t_half_width
from papers.gps.config import ARMS, SEEDS
from papers.gps.published import PAPER_PACKING_EFFICIENCY, PAPER_PARAMETERS, PAPER_PCQM4MV2
from papers.gps.results import Packing, Results

# [ablation]: "nearly all of the model's performance can be maintained without any use of global self-attention".
# [mpnn-threshold]: the bound on the relative MAE increase is GPS++'s own margin over GPS, the hybrid
# MPNN/transformer it extends (85.8 vs 77.8 meV, +10.3%): an MPNN-only model that lost more would have given back
# all that GPS++ gained over its predecessor, not kept nearly all of its performance.
MPNN_THRESHOLD = PAPER_PCQM4MV2["GPS"] / PAPER_PCQM4MV2["GPS++ 44M"] - 1
MPNN_PAPER = "'nearly all of the model's performance' kept without attention"
THREE_D_PAPER = "3D information the larger gain: nearly all kept without attention, not without 3D"

# The design (issue 45). Every training seed is shared by all arms: the same initialisation of the modules they have
# in common, the same dropout keys, packing order, masking groups and noise (papers/gps/train.py), so each claim is
# an interval over the per-seed paired differences, 95% t with seeds - 1 degrees of freedom (core.stats.seed_mean).
# The number of seeds comes from a pilot's paired standard deviation (PILOT) by core.stats.seeds_for_half_width: the
# fewest seeds whose interval is narrower than the distance from the pilot's mean to the margin. The pilot trained the
# default's data, model and schedule (1500 steps) from 8 seeds that the default does not use (100-107) on a GPU
# (how it was run, and its per-seed numbers: papers/gps/README.md); its validation MAE still fell ~12% over the last
# 10% of steps, so these are the 1500-step models' gaps, not converged ones.
# SEEDS (papers/gps/config.py, 6): the default design's training seeds (Config.seeds)
PILOT = {  # claim: (mean, sample std) of its paired statistic over the pilot's 8 seeds
    "mpnn-keeps-accuracy": (0.0832, 0.0177),
    "3d-costs-more": (-0.0552, 0.0262),
}
PILOT_RUN = "8 paired seeds (100-107) x 1500 steps, the default's data and model, on a GPU, 2026-11-26"
SEEDS_UNIT = f"{SEEDS} training seeds, each shared by every arm (paired); t interval over the per-seed differences"
# Where the margin comes from (issue 62): the project's reading of the paper's words, from the paper's own figures
MPNN_MARGIN_SOURCE = (
    "ours: 'nearly all' read as 'gives back less than GPS++ gained over GPS': GPS 0.0858 / GPS++ 0.0778 eV - 1 "
    "([TR] Table 3, p. 9; REFERENCES.md [mpnn-threshold]); the paper states no margin"
)


def _power(claim: str, margin: float) -> str:
    """The claim's resolution: the pilot's paired spread, the half-width it gives at the default seeds, and the seeds
    needed for the interval to clear the margin at the pilot's mean."""
    mean, sd = PILOT[claim]
    distance = abs(margin - mean)
    need = seeds_for_half_width(sd, distance)
    return (
        f"pilot ({PILOT_RUN}): paired mean {mean:+.1%}, sd {sd:.1%}; at {SEEDS} seeds the 95% half-width is "
        f"{t_half_width(sd, SEEDS):.1%}, against {distance:.1%} from the pilot's mean to the margin "
        f"({margin:+.1%}): {need or 'no number of'} seeds needed for the interval to clear it; {SEEDS} seeds clear "
        f"it at that mean while the paired sd stays below {distance / t_half_width(1.0, SEEDS):.1%}"
    )


def seed_maes(results: Results) -> dict[str, np.ndarray]:
    """Each arm's validation MAE (meV), one value per seed, in the order of the seeds every arm shares."""
    seeds = {arm: list(r.seeds) for arm, r in results.arms.items()}
    if len({tuple(s) for s in seeds.values()}) > 1:
        raise ValueError(f"the arms must share their training seeds to be paired, got {seeds}")
    return {arm: np.asarray(r.valid_mae, np.float64) for arm, r in results.arms.items()}


def paired_gaps(mae: dict[str, np.ndarray], arm: str, comparator: str) -> np.ndarray:
    """MAE arm / MAE comparator - 1, seed by seed (the two arms share each seed's initialisation and batches;
    core.stats.relative_gaps)."""
    return relative_gaps(mae[arm], mae[comparator])


def packing(results: Results) -> Packing:
    """The packing efficiency of the batches (every arm packs the same molecules: the first arm's)."""
    return next(iter(results.arms.values())).packing


def _paired(values: np.ndarray, margin: float) -> tuple[Interval, str]:
    """The t interval of the per-seed values and the seeds their spread would need to clear `margin`."""
    ours = seed_mean(values)
    distance = abs(margin - ours.estimate)
    need = seeds_for_half_width(float(np.std(values, ddof=1)), distance) if values.size > 1 else None
    return ours, (
        f"per seed {', '.join(f'{v:+.1%}' for v in values)}; at this spread {need or 'no number of'} seeds would "
        f"clear the margin ({margin:+.1%}) at this mean"
    )


def measure_mpnn(cfg, results: Results) -> tuple[Interval, str]:
    """`mpnn-keeps-accuracy`: MPNN only against full GPS++ (both masked), MAE ratio - 1 per seed."""
    mae = seed_maes(results)
    ours, spread = _paired(paired_gaps(mae, "mpnn_only", "full"), MPNN_THRESHOLD)
    return ours, (
        f"MPNN only {mean_std(mae['mpnn_only'], '.1f')} vs full {mean_std(mae['full'], '.1f')} meV (mean +- std "
        f"over {len(mae['full'])} seeds); {spread}"
    )


def measure_3d(cfg, results: Results) -> tuple[Interval, str]:
    """`3d-costs-more`: the cost of 3D (no 3D against full unmasked, both unmasked) minus the cost of attention (MPNN
    only against full, both masked), per seed, each cost an MAE ratio - 1."""
    mae = seed_maes(results)
    cost_3d, cost_attention = paired_gaps(mae, "no_3d", "full_unmasked"), paired_gaps(mae, "mpnn_only", "full")
    ours, spread = _paired(cost_3d - cost_attention, 0.0)
    return ours, (
        f"no 3D {mean_std(mae['no_3d'], '.1f')} vs full unmasked {mean_std(mae['full_unmasked'], '.1f')} meV "
        f"({cost_3d.mean():+.1%}); MPNN only vs full {cost_attention.mean():+.1%}; {spread}"
    )


CLAIMS = {
    "mpnn-keeps-accuracy": Claim(
        "mpnn-keeps-accuracy",
        "MPNN only (no global attention) keeps nearly all of GPS++'s accuracy: relative increase of the validation "
        "MAE over full GPS++ of the same seed, 95% t interval over the paired seeds, below GPS++'s margin over GPS "
        f"(+{MPNN_THRESHOLD:.1%}, Table 3)",
        MPNN_PAPER,
        interval_below(MPNN_THRESHOLD, kind="non-inferiority"),
        measure=measure_mpnn,
        source="[ablation], threshold [mpnn-threshold] (REFERENCES.md)",
        statistic="mean over seeds of MAE MPNN only / MAE full - 1 (both trained with grouped masking from the same "
        "seed), 95% t interval",
        unit=SEEDS_UNIT,
        resolution=_power("mpnn-keeps-accuracy", MPNN_THRESHOLD),
        figure_source="paper: [P] abstract ('nearly all of the model's performance can be maintained without any "
        "use of global self-attention'; REFERENCES.md [ablation]); [P]'s ablation table was not read, so no MAE of "
        "it is used",
        margin_source=MPNN_MARGIN_SOURCE,
        n=SEEDS,
        n_of="paired training seeds",
    ),
    "3d-costs-more": Claim(
        "3d-costs-more",
        "Removing the 3D features costs more than removing attention: (MAE no 3D / MAE full unmasked - 1) - (MAE "
        "MPNN only / MAE full - 1) per seed, each ablation against a comparator trained with the same masking, 95% t "
        "interval over the paired seeds above 0",
        THREE_D_PAPER,
        interval_above(0.0),
        measure=measure_3d,
        source="[ablation] (REFERENCES.md)",
        statistic="mean over seeds of (MAE no 3D / MAE full unmasked - 1) - (MAE MPNN only / MAE full - 1), 95% t "
        "interval",
        unit=SEEDS_UNIT,
        resolution=_power("3d-costs-more", 0.0),
        figure_source="secondary: the project's paper notes as REFERENCES.md [ablation] quotes them ('3D "
        "information is the larger gain'; the notes as read on 2026-11-29, refs/PAPERS.md, do not say it); [P]'s "
        "ablation table was not read, and its abstract, which was, does not say it (it says GPS++ without 3D beats "
        "prior art)",
        margin_source="ours: zero (the interval above 0: 3D costs more than attention by any amount)",
        n=SEEDS,
        n_of="paired training seeds",
    ),
}


def claims(cfg) -> list[Claim]:
    """The claims, declared before the run: the ablation claims need the arms they compare and at least two seeds
    (a spread to decide on), each with the run's number of seeds as its sample. The 44M preset's parameter count
    and the packing efficiency are facts (`facts`), not claims: the preset was built to match Table 1, and the
    packing efficiency is arithmetic on QM9's molecule sizes and the pack limits."""
    arms = set(cfg.gps.arms)
    seeds = len(cfg.gps.seeds)
    out = []
    if seeds >= 2:
        if {"full", "mpnn_only"} <= arms:
            out.append(CLAIMS["mpnn-keeps-accuracy"])
        if {"full", "mpnn_only", "no_3d", "full_unmasked"} <= arms:
            out.append(CLAIMS["3d-costs-more"])
    return [dataclasses.replace(c, n=seeds) for c in out]


def packing_fact(cfg, results: Results) -> Fact:
    """The packing efficiency of the training batches beside [TR]'s 87%: an analytic row, not a claim (issue 62). It
    is deterministic, our packer's arithmetic on QM9's molecule sizes (nearly all 8-9 heavy atoms) under the pack
    limits: about six molecules of ~9 atoms fill 60 node slots to ~0.87-0.9 whatever else the run does. The
    paper's 87% is on PCQM4Mv2 (1-51 atoms), so the agreement is one of limits, not a reproduction."""
    limits, packed = cfg.gps.limits, packing(results)
    return Fact(
        "packing-efficiency",
        f"Share of node slots the packed training batches use ({limits.nodes} nodes, {limits.edges} edges, "
        f"{limits.graphs} molecules per pack; [packing], REFERENCES.md): QM9's sizes under these limits",
        packed.nodes,
        "analytic",
        f"edges {packed.edges:.1%}, molecules {packed.graphs:.1%} of slots, {packed.graphs_per_pack:.2f} molecules "
        "per pack; the paper's 87% is on PCQM4Mv2 (1-51 atoms, 3.6 graphs per pack)",
        paper=PAPER_PACKING_EFFICIENCY,
    )


def facts(breakdowns: dict) -> list[Fact]:
    """Rows that are not claims: the 44M preset's parameter count beside Table 1's, a calibration (the preset's
    widths and depths were chosen to reach Table 1's count; papers/gps/ledger.py)."""
    b44 = breakdowns["gps++_44m"]
    parts = [k for k in PAPER_PARAMETERS if k != "total"]
    worst = max(parts, key=lambda k: abs(b44[k] / PAPER_PARAMETERS[k] - 1))
    return [
        Fact(
            "parameters-44m",
            "Parameters of the gps++_44m preset, built to match Table 1 ([parameters], REFERENCES.md)",
            int(b44["total"]),
            "calibration",
            f"{b44['total'] / 1e6:.2f}M vs 44.3M ({b44['total'] / PAPER_PARAMETERS['total'] - 1:+.2%}); worst part "
            f"{worst} off by {abs(b44[worst] / PAPER_PARAMETERS[worst] - 1):.1%}",
            paper=PAPER_PARAMETERS["total"],
        )
    ]


def estimates(cfg, results: Results) -> dict:
    """The key figures the report's tables show: per arm the validation MAE (meV) and, for an ablation, its MAE over
    its comparator's - 1 paired by seed, each a 95% t interval over the seeds (core.stats.paired_relative_gap: a gap
    of one seed is that value, a non-finite MAE "diverged"); the packing of the training batches, the arms' parameter
    counts and the mean predictor's MAE (deterministic: points)."""
    out: dict = {}
    mae = seed_maes(results)
    for arm, values in mae.items():
        if values.size > 1:
            out[f"valid_mae/{arm}"] = seed_mean(values)
        comparator = ARMS[arm].comparator if arm in ARMS else None
        if comparator in mae:
            out[f"gap/{arm}"] = paired_relative_gap(mae[arm], mae[comparator])
    out["valid_mae/mean_predictor"] = results.data.mean_mae
    packed = packing(results)
    out |= {f"packing/{k}": getattr(packed, k) for k in ("nodes", "edges", "graphs", "graphs_per_pack")}
    out |= {f"parameters/{arm}": r.parameters for arm, r in results.arms.items()}
    return out


def decide(cfg, results: Results) -> Decided:
    """Every declared claim measured from the Results by its own `measure`, the facts (the calibrated parameter count,
    the packing efficiency) and the estimates."""
    decided = [claim.measured(*claim.measure(cfg, results)) for claim in claims(cfg)]
    return Decided(
        decided, facts=[*facts(results.breakdowns), packing_fact(cfg, results)], estimates=estimates(cfg, results)
    )


__all__ = [
    "CLAIMS",
    "MPNN_THRESHOLD",
    "claims",
    "decide",
    "estimates",
    "facts",
    "packing_fact",
    "paired_gaps",
    "seed_maes",
]

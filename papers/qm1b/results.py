"""What a QM1B run computes (the Results `run` returns and `decide` and `render` read): the labelled dataset's and the
drop sample's counts as their manifests hold them, the errors of the rows validated against converged PySCF, and
SchNet's per-seed MAEs at every training size. A generate-only job (qm1b.stage=generate) holds its shard's counts
alone.

Small at any scale: counts per drop reason, one error per validated row (48 at the default scale, 200 at full) and
a few numbers per (size, seed); no rows, geometries or training curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# the drop reasons of QM1B's rules on a DFT result (generate.conformer_rows): its std and zero-gap filters, and an
# energy or gap that is not finite (an SCF that blew up); other reasons (embedding_failed, error:*) are not QM1B's
# rules: those conformers never had a DFT result
RULE_DROPS = ("std", "zero_gap", "not_finite")


@dataclass
class Labelled:
    """One labelled dataset (every shard of the run's dataset, or the drop sample), as its shards' manifests count
    it (papers.qm1b.generate.generate_shard)."""

    key: str  # the dataset's key (generate.dataset_key): it lives in output_root/qm1b/data/<key>
    shards: int  # the manifests counted here
    rows: int  # rows kept
    dropped: dict[str, int]  # conformers dropped, by reason, summed over the shards
    seconds: float  # labelling time, summed over the shards' parts
    skipped_smiles: dict[str, int]  # SMILES the filters skipped, by reason (every shard selects alike: the first's)
    iterations: int  # the SCF's iterations: the most (early stopping) or all of them
    early_stop: bool

    @property
    def conformers(self) -> int:
        """Conformers labelled or dropped."""
        return self.rows + sum(self.dropped.values())

    @property
    def per_hour(self) -> float:
        """Conformers per hour of labelling on the machine that ran it."""
        return self.conformers / self.seconds * 3600 if self.seconds else float("nan")

    def split_drops(self) -> tuple[dict[str, int], dict[str, int]]:
        """(the drops by QM1B's rules, RULE_DROPS; the others: conformers that never had a DFT result)."""
        by_rule = {k: v for k, v in self.dropped.items() if k in RULE_DROPS}
        other = {k: v for k, v in self.dropped.items() if k not in RULE_DROPS}
        return by_rule, other

    @property
    def rule_dropped(self) -> int:
        """Conformers QM1B's rules dropped (RULE_DROPS), each after its DFT."""
        return sum(self.split_drops()[0].values())

    @property
    def computed(self) -> int:
        """Conformers with a DFT result: the rows kept and those QM1B's rules dropped."""
        return self.rows + self.rule_dropped


@dataclass
class Validation:
    """Random rows of the dataset re-computed with converged PySCF: per-row errors of the stored labels (meV)."""

    gap_mev: np.ndarray  # [rows] ours - PySCF's HOMO-LUMO gap
    energy_mev: np.ndarray  # [rows] ours - PySCF's total energy
    pyscf_seconds_per_row: float  # context: what one converged PySCF reference cost


@dataclass
class Size:
    """SchNet at one training size: every seed an independent replicate (its own nested subset, initialisation and
    batch order), validated on the run's held-out molecules."""

    size: int  # training conformers
    steps: int
    seeds: list[int]
    train_mae: list[float]  # meV per seed, on its own training subset
    valid_mae: list[float]  # meV per seed
    mean_mae: list[float]  # meV per seed: predicting its training subset's mean gap
    seconds: float  # training time of all seeds together
    valid_rows: int
    valid_molecules: int

    @property
    def gaps(self) -> list[float]:
        """Validation - training MAE (meV) per seed."""
        return [v - t for v, t in zip(self.valid_mae, self.train_mae, strict=True)]

    @property
    def relative(self) -> list[float]:
        """Validation MAE / that seed's mean predictor's MAE, per seed."""
        return [v / m for v, m in zip(self.valid_mae, self.mean_mae, strict=True)]

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (*self.train_mae, *self.valid_mae, *self.mean_mae))


@dataclass
class Results:
    stage: str  # "all": generated, validated and trained; "generate": one shard generated (`dataset` is its counts)
    dataset: Labelled
    drops: Labelled | None = None  # the drop sample in QM1B's regime (None: qm1b.drops.molecules=0)
    validation: Validation | None = None
    scaling: list[Size] = field(default_factory=list)  # by increasing size

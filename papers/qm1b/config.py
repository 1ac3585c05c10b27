"""The `qm1b` config section (`qm1b.<key>=<value>`): its defaults are the default scale's; configs/paper_scale/qm1b/
<scale>.yaml holds what another scale changes. With the SchNet presets and training keys (papers.qm1b.schnet trains
them) and the selections of the dataset and the drop sample the run labels (`selection`, `drop_selection`,
`drop_dft`).

Validating a config refuses, before any work, DFT settings no molecule could be labelled with (papers.qm1b.checks);
nothing here imports JAX, so the claims, the decision and the report load it without JAX.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from core.config import ConfigError, check_choice, check_range
from papers.qm1b.checks import ELEMENTS, SOURCES, Selection, basis_aos, check_dft

STAGES = ("all", "generate")
DTYPES = ("float32", "float64")


# ---------------------------------------------------------------------------------------------- SchNet


@dataclass(frozen=True)
class SchNetConfig:
    features: int = 1024
    filters: int = 256
    interactions: int = 5
    gaussians: int = 200
    cutoff: float = 15.0  # Bohr
    neighbours: int = 28

    def __post_init__(self) -> None:
        for name in ("features", "filters", "interactions", "gaussians", "neighbours"):
            if getattr(self, name) < 1:
                raise ValueError(f"SchNet {name}={getattr(self, name)} must be at least 1")
        if not self.cutoff > 0:
            raise ValueError(f"SchNet cutoff={self.cutoff} must be positive (Bohr)")


PRESETS = {
    "schnet_9m": SchNetConfig(),  # QM1B's SchNet 9M (papers/qm1b/REFERENCES.md [9])
    "small": SchNetConfig(features=128, filters=64, interactions=3, gaussians=50),
}


@dataclass
class TrainConfig:
    """How SchNet trains (the training keys of the config's qm1b.schnet section)."""

    steps: int = 600  # the fewest at any size (qm1b.schnet.epochs raises it with the size)
    batch_size: int = 32
    lr: float = 5e-4
    warmup: int = 60
    eval_every: int = 200
    checkpoint_every: int = 200

    def __post_init__(self) -> None:
        for key in ("steps", "batch_size", "eval_every", "checkpoint_every"):
            check_range(f"qm1b.schnet.{key}", getattr(self, key), ge=1)
        check_range("qm1b.schnet.lr", self.lr, gt=0)
        check_range("qm1b.schnet.warmup", self.warmup, ge=0)


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class DataConfig:
    # small QM9 molecules (6-7 heavy atoms), so that ~720 conformers label in minutes on 2 cores; scale=full takes
    # QM1B's 9-11 heavy atoms. 240 molecules of 3 conformers rather than 160 of 4: 60 molecules held out for
    # validation instead of 32, for about as many conformers
    source: str = "qm9"
    min_heavy: int = 6
    max_heavy: int = 7
    max_hydrogens: int = 14
    molecules: int = 240
    conformers: int = 3
    molecules_per_part: int = 10
    # how the labelling runs, not what it labels (not part of the dataset's key): conformers per SCF batch (across a
    # part's molecules, by size) and processes preparing integrals ahead (null: the CPUs this process may use)
    batch_conformers: int = 16
    workers: int | None = None

    def __post_init__(self) -> None:
        check_choice("qm1b.data.source", self.source, SOURCES)
        check_range("qm1b.data.min_heavy", self.min_heavy, ge=1)
        check_range("qm1b.data.max_heavy", self.max_heavy, ge=self.min_heavy)
        check_range("qm1b.data.max_hydrogens", self.max_hydrogens, ge=0)
        check_range("qm1b.data.molecules", self.molecules, ge=2)
        check_range("qm1b.data.conformers", self.conformers, ge=1)
        check_range("qm1b.data.molecules_per_part", self.molecules_per_part, ge=1)
        check_range("qm1b.data.batch_conformers", self.batch_conformers, ge=1)
        if self.workers is not None:
            check_range("qm1b.data.workers", self.workers, ge=0)


@dataclass
class DFTConfig:
    basis: str = "sto-3g"
    xc: str = "b3lyp5"
    grid_level: int = 0
    iterations: int = 20  # the most; QM1B ran 20 fixed (early_stop=false)
    dtype: str = "float32"
    density_fit: bool = False  # PySCF's density_fit(): no 4-centre ERIs, no n^4 matrix (6-31G(d) at QM1B's size)
    early_stop: bool = True  # stop once converged (papers.qm1b.dft.scf.stop_rule)

    def __post_init__(self) -> None:
        check_choice("qm1b.dft.xc", self.xc, ("b3lyp5",))
        check_range("qm1b.dft.grid_level", self.grid_level, ge=0, le=9)
        check_range("qm1b.dft.iterations", self.iterations, ge=5)
        check_choice("qm1b.dft.dtype", self.dtype, DTYPES)
        try:  # a misspelled basis would fail every molecule: refused here, before any work
            basis_aos(self.basis, ELEMENTS)
        except ValueError as e:
            raise ConfigError(f"qm1b.dft.{e}") from None


@dataclass
class ValidateConfig:
    # rows re-computed with PySCF (converged), drawn at random from the dataset: the accuracy claims' sample
    rows: int = 48

    def __post_init__(self) -> None:
        check_range("qm1b.validate.rows", self.rows, ge=0)


@dataclass
class SchNetRunConfig(TrainConfig):
    """SchNet on nested subsets of the generated conformers: the preset, the subset sizes and the held-out share,
    plus how each trains (TrainConfig's keys)."""

    preset: str = "small"
    sizes: list[int] = field(default_factory=lambda: [16, 50, 160, 500])  # training conformers: 31x span
    valid_fraction: float = 0.25
    seeds: int = 3  # replicates per size, trained together (vmapped): the run's seed, seed + 1, ...
    # the budget grows with the size: each size trains max(steps, ceil(epochs * size / batch_size)) steps, past the
    # plateau of its validation MAE (a pilot at 500 conformers, 3 replicates: validation flat from ~30-60 epochs,
    # training MAE still falling; README). QM1B's own code gives every size 1e9 examples: thousands of epochs of
    # its smallest subsets (REFERENCES.md [9])
    epochs: float = 100.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("qm1b.schnet.seeds", self.seeds, ge=1)
        check_range("qm1b.schnet.epochs", self.epochs, ge=0)
        check_choice("qm1b.schnet.preset", self.preset, PRESETS)
        if len(self.sizes) < 2 or any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise ConfigError(f"qm1b.schnet.sizes={list(self.sizes)} must be at least two increasing sizes")
        check_range("qm1b.schnet.sizes", self.sizes[0], ge=1)
        check_range("qm1b.schnet.valid_fraction", self.valid_fraction, gt=0, lt=1)

    def steps_at(self, size: int) -> int:
        """The training steps at `size` conformers: at least `steps`, and at least `epochs` passes over them."""
        return max(self.steps, math.ceil(self.epochs * size / min(self.batch_size, size)))


@dataclass
class DropsConfig:
    """The drop-share sample: QM9 molecules of QM1B's size labelled in QM1B's regime (20 fixed SCF iterations, no
    early stopping), whose share dropped by QM1B's std rule decides `drop-share` (molecules=0: not run). 480
    conformers: no drop bounds the share below 0.77% (Clopper-Pearson 95%), inside the paper's 1%."""

    molecules: int = 120
    conformers: int = 4
    min_heavy: int = 9
    max_heavy: int = 9
    iterations: int = 20  # QM1B's fixed iteration count (REFERENCES.md [6])

    def __post_init__(self) -> None:
        check_range("qm1b.drops.molecules", self.molecules, ge=0)
        check_range("qm1b.drops.conformers", self.conformers, ge=1)
        check_range("qm1b.drops.min_heavy", self.min_heavy, ge=1)
        check_range("qm1b.drops.max_heavy", self.max_heavy, ge=self.min_heavy)
        check_range("qm1b.drops.iterations", self.iterations, ge=5)


@dataclass
class Config:
    stage: str = "all"
    data: DataConfig = field(default_factory=DataConfig)
    dft: DFTConfig = field(default_factory=DFTConfig)
    validate: ValidateConfig = field(default_factory=ValidateConfig)
    schnet: SchNetRunConfig = field(default_factory=SchNetRunConfig)
    drops: DropsConfig = field(default_factory=DropsConfig)

    def __post_init__(self) -> None:
        check_choice("qm1b.stage", self.stage, STAGES)
        total = self.data.molecules * self.data.conformers
        train = round((1 - self.schnet.valid_fraction) * self.data.molecules) * self.data.conformers
        if self.stage == "all" and self.schnet.sizes[-1] > train:
            raise ConfigError(
                f"qm1b.schnet.sizes ends at {self.schnet.sizes[-1]} training conformers, but qm1b.data makes "
                f"{total} conformers of which about {train} are for training: raise qm1b.data.molecules or "
                "lower the sizes"
            )
        # exact ERIs too large for the largest molecule qm1b.data (or qm1b.drops) admits (DFTConfig checked the basis)
        samples = [("data", selection(self, 0))] + (
            [("drops", drop_selection(self, 0))] if self.drops.molecules else []
        )
        for where, sel in samples:
            try:
                check_dft(sel, asdict(self.dft))
            except ValueError as e:
                raise ConfigError(
                    f"qm1b.dft.{e} (qm1b.dft.density_fit=true; the molecules: qm1b.{where}.max_heavy="
                    f"{sel.max_heavy}, qm1b.data.max_hydrogens={self.data.max_hydrogens})"
                ) from None


def selection(c, seed: int) -> Selection:
    d = c.data
    return Selection(d.source, d.min_heavy, d.max_heavy, d.max_hydrogens, d.molecules, d.conformers, seed)


def drop_selection(c, seed: int) -> Selection:
    """The drop-share sample's molecules (DropsConfig): QM9's, whatever qm1b.data.source is (QM1B's 9 heavy atoms)."""
    d = c.drops
    return Selection("qm9", d.min_heavy, d.max_heavy, c.data.max_hydrogens, d.molecules, d.conformers, seed)


def drop_dft(c) -> dict:
    """The drop-share sample's DFT: the dataset's, at QM1B's fixed iteration count without early stopping."""
    return {**asdict(c.dft), "iterations": c.drops.iterations, "early_stop": False}

"""What a unit-scaling run computes (the Results `run` returns and `decide` and `render` read): the per-tensor scales
at initialisation, the FP8 gradient error at initialisation, every trained arm (per-seed test BPC, validation curves,
gradient underflow, tensor scales over training), the corpus' sizes, the FP8 formats' ranges the scales are held
against, and the learning-rate sweep behind the arms' rates. Imports no JAX: the compute modules (train.py) make
these types, the decision and the report read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.scales import FormatRange, TensorScale  # no JAX: the data of core.unit_scaling's analyses


@dataclass
class ArmResult:
    """One arm, every seed trained together (papers.unit_scaling.train.train_arm)."""

    arm: str
    test_bpc: list[float]  # per seed
    valid_curve: list[tuple[int, list[float]]]  # (step, per-seed valid BPC)
    skipped_steps: list[int]  # per seed: updates skipped for non-finite gradients
    grad_underflow: dict[str, float]  # 'init' and 'final': fraction of activation gradients that underflow
    final_loss_scale: list[float]  # per seed
    seconds: float  # wall time of the arm (training, evaluation, tracking)
    resumed_from: int = 0  # the step training resumed from (0: a fresh start)
    # step -> the std of every tensor of the arm's own (cast) model on a validation batch, first seed
    scale_tracks: dict[int, list[TensorScale]] = field(default_factory=dict)


@dataclass
class GradientError:
    """How far one FP8 recipe's parameter gradient is from the FP32 gradient at initialisation (first seed, one
    training batch; papers.unit_scaling.train.gradient_errors)."""

    scaling: str  # "unit" | "regular"
    recipe: str  # core.charlm.FP8Casts.label
    relative_error: float  # ||g - g_fp32|| / ||g_fp32|| over all parameters together
    min_cosine: float  # the smallest per-parameter cosine between g and g_fp32


@dataclass
class Corpus:
    """The Shakespeare corpus the arms trained on: its alphabet and split sizes in characters."""

    vocab_size: int
    train: int
    valid: int
    test: int
    test_plays: list[str]


@dataclass
class SweepRow:
    """One (arm, learning rate) of the learning-rate sweep (papers/unit_scaling/sweep.py)."""

    arm: str
    lr: float
    valid_bpc: float | None  # mean over seeds at the last evaluation; None: diverged
    test_bpc_per_seed: str
    seeds: list[int]
    steps: int
    commit: str


@dataclass
class Sweep:
    """The learning-rate sweep behind Config.lr, as shipped in papers/unit_scaling/lr_sweep.json."""

    rows: list[SweepRow]
    best: dict[str, float]  # arm -> the rate with the best mean validation BPC


@dataclass
class Results:
    # model label (the FP32 regular and unit-scaled arms' labels, and arms.IID_LABEL) -> every tensor's std at
    # initialisation (first seed, one batch; q, k and v apart)
    init_scales: dict[str, list[TensorScale]]
    gradient_errors: list[GradientError]
    arms: dict[str, ArmResult]  # in the config's order
    corpus: Corpus
    formats: dict[str, FormatRange]  # "e4m3", "e5m2": what the scale tracks are held against
    sweep: Sweep | None = None  # None where no sweep is shipped

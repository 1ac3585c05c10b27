"""What a packing run computes (the Results `run` returns and `decide` and `render` read): every packed cell of the
table, and, when it trains, both training runs, the cross-contamination differences and the timing rounds."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cell:
    """One packing of a published histogram: a method with a limit of sequences per pack."""

    histogram: str
    method: str
    limit: int
    packs: int
    efficiency: float
    speedup: float
    bound: float
    seconds: float


@dataclass
class TrainRun:
    """One training run, padded or packed."""

    mode: str
    curve: list[tuple[int, float]] = field(default_factory=list)  # (sequences seen, validation loss)
    train_curve: list[tuple[int, float]] = field(default_factory=list)
    step_seconds: float = 0.0  # time in training steps (compilation excluded)
    real_tokens: int = 0
    slot_tokens: int = 0  # rows x max_len processed
    sequences: int = 0
    steps: int = 0
    rows_per_step: int = 0

    @property
    def tokens_per_second(self) -> float:
        return self.real_tokens / self.step_seconds if self.step_seconds else 0.0


@dataclass
class Arm:
    """One timed arm: a training step on `rows` rows of the `mode` plan."""

    name: str
    mode: str
    rows: int
    tokens_per_step: float  # real tokens of an average step of the whole plan
    seconds: list[float] = field(default_factory=list)  # seconds per step, one entry per round


@dataclass
class Contamination:
    """The largest absolute differences between each sequence packed and alone."""

    loss: float
    cls: float
    hidden: float
    sequences: int
    packs: int


@dataclass
class Training:
    runs: dict[str, TrainRun]  # "padded", "packed"
    contamination: Contamination
    rounds: dict[str, Arm]  # "padded", "packed", "padded, packed rows"
    train_lengths: list[int]  # tokens of every training sequence ([CLS] included)
    truncated: float  # fraction of training speeches cut at max_len
    speedup: float  # SPFHP's speed-up on the training lengths (what the packed batch size follows)


@dataclass
class Results:
    cells: list[Cell]
    training: Training | None = None

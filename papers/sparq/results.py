"""What a SparQ run computes (the Results `run` returns and `decide` and `render` read): every method's per-context
outcomes on each task with its transfer, the LM evaluated, the budgets no setting reaches, and the decode-step
timing rounds with both kernels' counted transfer. Imports no JAX (nor does core.nn.decode_methods, whose methods the
`Method` records store): the compute modules (run.py, speed.py) import `Method` and `DecodeTiming` from here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import numpy as np

from core.nn.decode_methods import DECODE_METHODS, DecodeMethod


@dataclass(frozen=True)
class Method:
    """A decode-step attention method as Results store it: its name and every setting any method has (those it lacks
    at their defaults), one flat record for all of them. `Method.of(method)` stores a core.nn.decode_methods method
    (its settings, budget and transfer are documented there); `build()` rebuilds it. `ratio`: the fraction of the
    dense transfer its budget was set for; `k`: the cache positions it reads besides the current token's; `local_k`:
    SparQ's local window and H2O's recent window; `sinks`: StreamingLLM's; `page`: Quest's; `reallocate`: SparQ's
    step 5."""

    name: str
    ratio: float = 1.0  # target fraction of the dense transfer
    r: int = 0
    k: int = 0
    local_k: int = 0
    sinks: int = 0
    page: int = 0
    reallocate: bool = True

    @classmethod
    def of(cls, method: DecodeMethod) -> Method:
        """The record of a method: its name and settings."""
        return cls(method.name, **asdict(method))

    def build(self) -> DecodeMethod:
        """The method this record stores."""
        kind = DECODE_METHODS[self.name]
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})

    @property
    def label(self) -> str:
        return self.build().label


@dataclass
class MethodResult:
    """One method's outcomes, one value per context (in context order): the repetition score (characters copied
    before the first mismatch), the BPC of the text that followed the context, and (with the needle task) 1.0 where
    the needle was retrieved; with its transfer as a fraction of dense's at the decode-start cache length, by the
    paper's formulas and counted from its scoring kernel's traced program (None for H2O's masked kernel)."""

    method: Method
    transfer: float
    counted: float | None
    scores: list[int]
    bpcs: list[float]
    needles: list[float] | None = None

    @property
    def score(self) -> float:
        return float(np.mean(self.scores))

    @property
    def bpc(self) -> float:
        return float(np.mean(self.bpcs))

    @property
    def needle(self) -> float | None:
        return None if self.needles is None else float(np.mean(self.needles))


@dataclass(frozen=True)
class DecodeTiming:
    """Seconds per decode step of both kernels over the same interleaved rounds, and the elements per head per step
    each moves, counted from its traced program (`core.nn.transfer`)."""

    S: int
    d: int
    rows: int
    r: int
    k: int
    dense_rounds: tuple[float, ...]
    sparq_rounds: tuple[float, ...]
    dense_elements: int
    sparq_elements: int
    select_rounds: tuple[float, ...] = ()  # SparQ's step 3 alone (top-k of S approximate scores), same rounds

    @property
    def select_seconds(self) -> float:
        return float(np.median(self.select_rounds)) if self.select_rounds else float("nan")

    @property
    def dense_seconds(self) -> float:
        return float(np.median(self.dense_rounds))

    @property
    def sparq_seconds(self) -> float:
        return float(np.median(self.sparq_rounds))

    @property
    def transfer(self) -> float:
        """SparQ's counted transfer as a fraction of dense's."""
        return self.sparq_elements / self.dense_elements

    @property
    def theoretical_speedup(self) -> float:
        """What a purely memory-bound step would gain: dense elements / SparQ elements."""
        return self.dense_elements / self.sparq_elements


@dataclass
class TimingPoint:
    """The decode step timed at one operating point: `key` names it in metrics and estimates ("quality": SparQ at the
    claim ratio on the evaluated LM's cache; "paper": the configured S, r, k), `label` as the table shows it."""

    key: str
    label: str
    timing: DecodeTiming


@dataclass(frozen=True)
class IpuKernel:
    """One decode-step kernel costed on the simulated IPU (ipu_model.lowering, cost-only): its cycles and seconds,
    the cycles of each phase (sync, exchange, compute, host, stream), the bytes it reads from streaming memory,
    whether it fits in tile memory (with the compiler's message where not), the fullest tile's bytes, and the host
    seconds lowering, compiling and simulating took."""

    cycles: float
    seconds: float
    fits: bool
    phases: dict[str, float]
    streamed_bytes: int
    memory_peak_bytes: float
    wall: dict[str, float]
    message: str = ""

    @property
    def shares(self) -> dict[str, float]:
        """Each phase's share of the kernel's cycles (ipu_model.lowering.Cost.shares of the stored phases)."""
        total = sum(self.phases.values())
        return {p: (v / total if total else 0.0) for p, v in self.phases.items()}


@dataclass(frozen=True)
class IpuTiming:
    """Dense and SparQ decode steps on a simulated IPU (`device`) at batch x heads = `heads`, S, d, r, k, float16,
    the KV cache (and SparQ's transposed copy of K and mean of V) in streaming memory read at
    `streaming_bytes_per_second` (ipu_model's device spec: an assumption, ipu_model/README.md [STREAM])."""

    device: str
    S: int
    d: int
    heads: int
    r: int
    k: int
    streaming_bytes_per_second: float
    dense: IpuKernel
    sparq: IpuKernel

    @property
    def speedup(self) -> float:
        return self.dense.seconds / self.sparq.seconds


@dataclass
class LMInfo:
    """The LM evaluated: its description and, for SmolLM2, the held-out tokens; for the character LM its training
    curve ((step, train loss in nats)), seconds, and whether it was loaded from a finished checkpoint."""

    name: str
    test_tokens: int = 0
    train_loss: list[tuple[int, float]] = field(default_factory=list)
    train_seconds: float = 0.0
    loaded: bool = False


@dataclass
class Results:
    """Every method in the order evaluated (dense first, then each ratio's methods), the (method, ratio) budgets no
    setting reaches, the decode step at each timed operating point (the quality claims' first where SparQ runs
    at the claim ratio, the configured S last), and the configured S's kernels on the simulated IPU."""

    lm: LMInfo
    methods: list[MethodResult]
    speed: list[TimingPoint]
    unreachable: list[tuple[str, float]] = field(default_factory=list)
    ipu: IpuTiming | None = None  # the timed kernels on the simulated IPU at the configured S (sparq.ipu)

    def find(self, name: str, ratio: float | None = None) -> MethodResult | None:
        """The result of method `name` (at `ratio`, where given), or None where it was not run."""
        for r in self.methods:
            m = r.method
            if m.name == name and (ratio is None or abs(m.ratio - ratio) < 1e-9):
                return r
        return None

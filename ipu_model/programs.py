"""Programs: the control flow an Engine runs (Poplar's program::Sequence, Execute, Copy, Repeat, ...).

Every program node has a `name`, used by the profile to report cycles per program step.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence as Seq

from ipu_model.graph import ComputeSet, GraphError, Tensor

_ids = itertools.count()


class Program:
    def __init__(self, name: str = ""):
        self.id = next(_ids)
        self.name = name or f"{type(self).__name__.lower()}{self.id}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def children(self) -> list[Program]:
        return []


class Sequence(Program):
    def __init__(self, *steps: Program, name: str = ""):
        self.steps = [s for s in steps if s is not None]
        for s in self.steps:
            if not isinstance(s, Program):
                raise GraphError(f"Sequence steps must be programs, got {type(s).__name__}")
        super().__init__(name)

    def add(self, step: Program) -> Sequence:
        self.steps.append(step)
        return self

    def children(self) -> list[Program]:
        return self.steps


class Execute(Program):
    """Run every vertex of a compute set: one BSP superstep (sync if needed, then compute)."""

    def __init__(self, compute_set: ComputeSet, name: str = ""):
        self.compute_set = compute_set
        super().__init__(name or compute_set.name)


class Copy(Program):
    """Copy tensors elementwise, src[i] -> dst[i] for each pair, as one exchange phase.

    Elements whose source and destination tiles differ cross the exchange (sync + bytes at the exchange rate);
    the rest are on-tile copies at the tile's memory rate. Several pairs in one Copy share one exchange phase, as
    Poplar merges the copies of one step.
    """

    def __init__(self, src: Tensor | Seq[Tensor], dst: Tensor | Seq[Tensor], name: str = ""):
        srcs = [src] if isinstance(src, Tensor) else list(src)
        dsts = [dst] if isinstance(dst, Tensor) else list(dst)
        if len(srcs) != len(dsts):
            raise GraphError(f"Copy: {len(srcs)} sources but {len(dsts)} destinations")
        for s, d in zip(srcs, dsts, strict=True):
            if s.shape != d.shape:
                raise GraphError(f"Copy {s.name!r} -> {d.name!r}: shapes differ, {s.shape} vs {d.shape}")
            if d.var.constant:
                raise GraphError(f"Copy: destination {d.name!r} is a constant")
        self.pairs = list(zip(srcs, dsts, strict=True))
        super().__init__(name)


class DynamicCopy(Program):
    """A Copy whose source or destination moves with a loop counter (Poplar: a dynamic slice inside a Repeat): its
    i-th run performs `variants[i % len(variants)]`, each a Copy of the same shapes. On hardware the pattern is one
    exchange and the offset comes from the counter, so the exchange code is that of the largest variant, not of all
    of them; each run pays its variant's exchange plus an on-tile copy of the slice on its source tiles (the slicing
    vertices)."""

    def __init__(self, variants: Seq[Copy], name: str = ""):
        self.variants = list(variants)
        if not self.variants or not all(isinstance(v, Copy) for v in self.variants):
            raise GraphError("DynamicCopy needs one or more Copy programs as its variants")
        shapes = {tuple(tuple(t.shape) for pair in v.pairs for t in pair) for v in self.variants}
        if len(shapes) > 1:
            raise GraphError(f"DynamicCopy {name!r}: the variants must copy tensors of the same shapes")
        super().__init__(name)


class Repeat(Program):
    def __init__(self, count: int, body: Program, name: str = ""):
        if count < 0:
            raise GraphError(f"Repeat count={count} must be >= 0")
        self.count, self.body = int(count), body
        super().__init__(name)

    def children(self) -> list[Program]:
        return [self.body]


def _check_predicate(pred: Tensor, what: str) -> None:
    if pred.size != 1:
        raise GraphError(f"{what}: the predicate {pred.name!r} must have one element, got shape {pred.shape}")


class RepeatWhileTrue(Program):
    """Run `condition`, then while the scalar `predicate` is non-zero: run `body` and `condition` again."""

    def __init__(self, condition: Program, predicate: Tensor, body: Program, name: str = "", max_iterations=1_000_000):
        _check_predicate(predicate, "RepeatWhileTrue")
        self.condition, self.predicate, self.body, self.max_iterations = condition, predicate, body, max_iterations
        super().__init__(name)

    def children(self) -> list[Program]:
        return [self.condition, self.body]


class If(Program):
    def __init__(self, predicate: Tensor, then: Program, otherwise: Program | None = None, name: str = ""):
        _check_predicate(predicate, "If")
        self.predicate, self.then, self.otherwise = predicate, then, otherwise or Sequence()
        super().__init__(name)

    def children(self) -> list[Program]:
        return [self.then, self.otherwise]


class HostToDevice(Program):
    """Fill `tensor` from the next array of the host stream `stream` (Poplar: a Copy from a DataStream)."""

    def __init__(self, stream: str, tensor: Tensor, name: str = ""):
        self.stream, self.tensor = stream, tensor
        super().__init__(name or f"host->{stream}")


class DeviceToHost(Program):
    """Append the value of `tensor` to the host stream `stream`."""

    def __init__(self, tensor: Tensor, stream: str, name: str = ""):
        self.tensor, self.stream = tensor, stream
        super().__init__(name or f"{stream}->host")


def walk(program: Program):
    """Every node of the program tree, depth first, each once."""
    seen: set[int] = set()
    stack = [program]
    while stack:
        p = stack.pop()
        if p.id in seen:
            continue
        seen.add(p.id)
        yield p
        stack.extend(reversed(p.children()))

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


class RemoteBuffer:
    """Rows in streaming memory, the off-chip DRAM an IPU reads over its link (Poplar's RemoteBuffer): `rows` rows
    of `row` elements of `dtype`. Not in tile memory; filled from the host with `data[...] = ...` (free)."""

    def __init__(self, name: str, rows: int, row: int, dtype: str):
        import numpy as np

        if rows < 1 or row < 1:
            raise GraphError(f"remote buffer {name!r}: {rows} rows of {row} elements; both must be positive")
        self.name, self.rows, self.row, self.dtype = name, int(rows), int(row), np.dtype(dtype)
        self.data = np.zeros((self.rows, self.row), self.dtype)

    @property
    def nbytes(self) -> int:
        return self.rows * self.row * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"RemoteBuffer({self.name!r}, {self.rows} x {self.row} {self.dtype.name})"


class RemoteRead(Program):
    """Copy rows of a remote buffer into `dst` (Poplar: Copy(RemoteBuffer, tensor, offsets)): every row when `offsets`
    is None (dst holds rows x row elements), else the rows the int32 tensor `offsets` names when the step runs (dst
    holds len(offsets) x row elements; an offset outside the buffer is an error). One sync, then the bytes at the
    streaming rate or the busiest receiving tile's exchange rate, whichever is slower."""

    def __init__(self, buffer: RemoteBuffer, dst: Tensor, offsets: Tensor | None = None, name: str = ""):
        rows = buffer.rows if offsets is None else offsets.size
        if dst.size != rows * buffer.row or dst.dtype != buffer.dtype:
            raise GraphError(
                f"RemoteRead {buffer.name!r} -> {dst.name!r}: {rows} rows of {buffer.row} {buffer.dtype.name} need a "
                f"destination of {rows * buffer.row} {buffer.dtype.name} elements, got {dst.size} {dst.dtype.name}"
            )
        if offsets is not None and offsets.dtype.kind not in "iu":
            raise GraphError(f"RemoteRead {buffer.name!r}: offsets must be integers, got {offsets.dtype.name}")
        self.buffer, self.dst, self.offsets = buffer, dst, offsets
        super().__init__(name or f"{buffer.name}->chip")


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


def side_by_side(graph, programs: Seq[Program], name: str = "") -> Program:
    """Programs of one structure that work on disjoint tiles, merged into one program: each step's compute sets into
    one compute set and its copies into one exchange, as Poplar runs independent operations of a step together
    (e.g. poplin's grouped matmul, each group on its own tiles). Raises GraphError where the structures differ."""
    programs = list(programs)
    first = programs[0]
    if len({type(p) for p in programs}) != 1:
        raise GraphError(f"side_by_side: steps of different kinds {sorted({type(p).__name__ for p in programs})}")
    label = name or first.name
    if isinstance(first, Sequence):
        if len({len(p.steps) for p in programs}) != 1:
            raise GraphError(f"side_by_side: sequences {label!r} of different lengths")
        return Sequence(*(side_by_side(graph, list(s)) for s in zip(*(p.steps for p in programs), strict=True)),
                        name=label)  # fmt: skip
    if isinstance(first, Execute):
        cs = graph.add_compute_set(first.compute_set.name)
        for p in programs:
            cs.vertices.extend(p.compute_set.vertices)
        return Execute(cs)
    if isinstance(first, Copy):
        return Copy([s for p in programs for s, _ in p.pairs], [d for p in programs for _, d in p.pairs], name=label)
    if isinstance(first, DynamicCopy):
        if len({len(p.variants) for p in programs}) != 1:
            raise GraphError(f"side_by_side: dynamic copies {label!r} with different numbers of variants")
        return DynamicCopy([side_by_side(graph, list(v)) for v in zip(*(p.variants for p in programs), strict=True)],
                           name=label)  # fmt: skip
    if isinstance(first, Repeat):
        if len({p.count for p in programs}) != 1:
            raise GraphError(f"side_by_side: loops {label!r} with different counts")
        return Repeat(first.count, side_by_side(graph, [p.body for p in programs]), name=label)
    raise GraphError(f"side_by_side: cannot merge {type(first).__name__} steps")

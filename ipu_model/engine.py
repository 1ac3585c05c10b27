"""The Engine: compiles a graph and a program (ipu_model/compiler.py), then runs it on the host.

Running executes every vertex for real (batched: all vertices of a compute set that share a codelet and field shapes
in one call) and charges each program step its BSP cycles (ipu_model/cost.py) in a Profile.
`run(..., evaluate=False)` charges exactly the same cycles without computing values (see Engine.run).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.random.ipu import ipu_seed_state
from core.random.xoroshiro import draw
from ipu_model.compiler import CompiledProgram, VertexGroup
from ipu_model.cost import exchange_cycles, host_transfer_cycles, streaming_transfer_cycles
from ipu_model.graph import Graph, GraphError, Tensor
from ipu_model.profile import Profile, StepStats
from ipu_model.programs import (
    Copy,
    DeviceToHost,
    DynamicCopy,
    Execute,
    HostToDevice,
    If,
    Program,
    RemoteRead,
    Repeat,
    RepeatWhileTrue,
    Sequence,
)


@dataclass
class RunResult:
    outputs: dict[str, list[np.ndarray]]
    cycles: int
    seconds: float


class Engine:
    """Compile `program` over `graph` for its device; then `run()` it as often as wanted.

    seed / seed_modifier seed every tile's worker generators as the IPU does (core.random.ipu).
    """

    def __init__(self, graph: Graph, program: Program, *, seed: int = 0, seed_modifier: int = 0):
        self.graph, self.program, self.device = graph, program, graph.device
        self.s0, self.s1 = ipu_seed_state(seed, seed_modifier, self.device.tiles, self.device.workers)
        self._evaluating = True
        self._compiled = CompiledProgram(graph, program)
        self.mem = self._compiled.memory
        self.profile = Profile(self.device, self._compiled.order, self._compiled.memory_map())
        self._streams: dict[str, Any] = {}
        self._outputs: dict[str, list[np.ndarray]] = defaultdict(list)
        self._phase = "start"

    def read(self, t: Tensor) -> np.ndarray:
        """A tensor's current value (host access for inspection: free, not charged to the profile)."""
        return t.read()

    def write(self, t: Tensor, value: Any) -> None:
        """Set a tensor's value from the host (free, not charged)."""
        value = np.asarray(value)
        if value.shape != t.shape and value.size != 1:
            raise ValueError(f"value of shape {value.shape} does not fit tensor {t.name!r} of shape {t.shape}")
        t.var.data[t.idx] = np.broadcast_to(value, t.shape).astype(t.dtype)

    def run(self, inputs: Mapping[str, Any] | None = None, *, evaluate: bool = True) -> RunResult:
        """Run the program once. `inputs[name]` feeds host stream `name`: an array reused by every read of the
        stream, or a list consumed one array per read. Returns what DeviceToHost steps sent to the host.

        evaluate=False is a cost-only run: the same cycles are charged to the profile, but vertices are not run
        and copies move no data (host streams still write), so tensor values are not computed. Only the steps that
        decide control flow (writing a branch predicate, or what such a step reads) still run, so every branch
        and loop goes as it would in a full run. Random codelets do not advance their generators."""
        self._evaluating = evaluate
        self._streams = {k: (list(v) if isinstance(v, list | tuple) else v) for k, v in (inputs or {}).items()}
        self._outputs = defaultdict(list)
        before = self.profile.total_cycles
        self._phase = "start"
        self._run(self.program)
        cycles = self.profile.total_cycles - before
        self.profile.runs += 1
        return RunResult(dict(self._outputs), int(cycles), self.device.seconds(cycles))

    def _run(self, p: Program) -> None:
        stats = self.profile.steps[p.id]
        stats.runs += 1
        if isinstance(p, Sequence):
            for s in p.steps:
                self._run(s)
        elif isinstance(p, Execute):
            self._execute(p, stats)
        elif isinstance(p, Copy):
            self._copy(p, stats)
        elif isinstance(p, DynamicCopy):
            i = (stats.runs - 1) % len(p.variants)  # this run's variant: the loop counter
            self._copy(p.variants[i], stats, self._compiled.copies[p.id][i], control=p.id)
        elif isinstance(p, Repeat):
            for _ in range(p.count):
                self._run(p.body)
        elif isinstance(p, RepeatWhileTrue):
            self._run(p.condition)
            for _ in range(p.max_iterations):
                if not self._predicate(p.predicate, stats):
                    return
                self._run(p.body)
                self._run(p.condition)
            if not self._predicate(p.predicate, stats):
                return
            raise RuntimeError(f"RepeatWhileTrue {p.name!r} did not stop within {p.max_iterations} iterations")
        elif isinstance(p, If):
            self._run(p.then if self._predicate(p.predicate, stats) else p.otherwise)
        elif isinstance(p, HostToDevice):
            self._host_to_device(p, stats)
        elif isinstance(p, DeviceToHost):
            self._outputs[p.stream].append(p.tensor.read())
            self._charge_host(p, stats)
        elif isinstance(p, RemoteRead):
            self._remote_read(p, stats)
        else:
            raise GraphError(f"unknown program type {type(p).__name__}")

    def _predicate(self, pred: Tensor, stats: StepStats) -> bool:
        # the branch is decided on one tile and must reach every tile: one sync
        stats.add(sync=self.device.sync_cycles)
        self._phase = "sync"
        return bool(pred.read().reshape(-1)[0])

    def _execute(self, p: Execute, stats: StepStats) -> None:
        plan = self._compiled.compute[id(p.compute_set)]
        if self._evaluating or id(p.compute_set) in self._compiled.control:
            for g in plan.groups:
                self._evaluate(g)
        # a superstep starts with one sync, unless an exchange or a branch's sync has just aligned the tiles
        sync = 0 if self._phase in ("exchange", "sync") else self.device.sync_cycles
        stats.add(
            sync=sync, compute=float(plan.tile_cycles.max(initial=0)), tile_cycles=plan.tile_cycles, flops=plan.flops
        )
        self._phase = "compute"

    def _evaluate(self, g: VertexGroup) -> None:
        code = g.vertices[0].codelet
        args = {f: np.stack([v.fields[f].read() for v in g.vertices]) for f in code.reads}
        if code.random:
            args["rng"] = self._rng_for(g)
            args["shapes"] = {f: t.shape for f, t in g.vertices[0].fields.items()}
        out = code.fn(**args) if code.vectorised else _vmapped(code)(**args)
        if not isinstance(out, Mapping):
            raise GraphError(
                f"codelet {code.name!r} must return a dict of its written fields, got {type(out).__name__}"
            )
        for f in code.writes:
            if f not in out:
                raise GraphError(f"codelet {code.name!r} did not return field {f!r}")
            value = np.asarray(out[f])
            want = (len(g.vertices), *g.vertices[0].fields[f].shape)
            if value.shape != want:
                raise GraphError(f"codelet {code.name!r} returned {f!r} of shape {value.shape}, expected {want}")
            for b, v in enumerate(g.vertices):
                t = v.fields[f]
                t.var.data[t.idx] = value[b]

    def _rng_for(self, g: VertexGroup):
        tiles, workers = g.tiles, g.workers

        def rng(n: int) -> np.ndarray:
            out, s0, s1 = draw(self.s0[tiles, workers], self.s1[tiles, workers], int(n))
            self.s0[tiles, workers], self.s1[tiles, workers] = s0, s1
            return out

        return rng

    def _copy(self, p: Copy, stats: StepStats, plan=None, control: int | None = None) -> None:
        if self._evaluating or (p.id if control is None else control) in self._compiled.control:
            values = [src.var.data[src.idx] for src, _ in p.pairs]  # one phase: every source is read before any write
            for (_, dst), value in zip(p.pairs, values, strict=True):
                dst.var.data[dst.idx] = value
        plan = plan or self._compiled.copies[p.id]
        if plan.remote:
            ex = exchange_cycles(plan.bytes_in, plan.bytes_out, self.device)
            stats.add(
                sync=self.device.sync_cycles,
                exchange=ex,
                compute=float(plan.local_cycles.max(initial=0)),
                tile_bytes=plan.bytes_in + plan.bytes_out,
                exchanged=float(plan.bytes_in.sum()),
            )
            self._phase = "exchange"
        else:
            stats.add(compute=float(plan.local_cycles.max(initial=0)), tile_cycles=plan.local_cycles)
            self._phase = "compute"

    def _host_to_device(self, p: HostToDevice, stats: StepStats) -> None:
        if p.stream not in self._streams:
            raise KeyError(f"host stream {p.stream!r} has no input: pass inputs={{{p.stream!r}: array}} to run()")
        src = self._streams[p.stream]
        if isinstance(src, list):
            if not src:
                raise ValueError(f"host stream {p.stream!r} ran out of arrays")
            src = src.pop(0)
        src = np.asarray(src)
        if src.shape != p.tensor.shape:
            raise ValueError(f"host stream {p.stream!r}: array of shape {src.shape}, tensor {p.tensor.shape}")
        p.tensor.var.data[p.tensor.idx] = src.astype(p.tensor.dtype)
        self._charge_host(p, stats)

    def _remote_read(self, p: RemoteRead, stats: StepStats) -> None:
        if self._evaluating or p.id in self._compiled.control:
            buf = p.buffer
            rows = np.arange(buf.rows) if p.offsets is None else p.offsets.read().reshape(-1).astype(np.int64)
            bad = (rows < 0) | (rows >= buf.rows)
            if bad.any():
                raise IndexError(
                    f"RemoteRead {p.name!r}: offset {int(rows[bad][0])} is outside {buf.name!r}'s rows "
                    f"0..{buf.rows - 1}"
                )
            p.dst.var.data[p.dst.idx] = buf.data[rows].reshape(p.dst.shape)
        per_tile = self._compiled.host_bytes[p.id]
        cycles = streaming_transfer_cycles(int(per_tile.sum()), per_tile, self.device)
        stats.add(sync=self.device.sync_cycles, stream=cycles, exchanged=float(per_tile.sum()), tile_bytes=per_tile)
        self._phase = "exchange"

    def _charge_host(self, p: HostToDevice | DeviceToHost, stats: StepStats) -> None:
        per_tile = self._compiled.host_bytes[p.id]
        cycles = host_transfer_cycles(int(per_tile.sum()), per_tile, self.device)
        stats.add(sync=self.device.sync_cycles, host=cycles, exchanged=float(per_tile.sum()), tile_bytes=per_tile)
        self._phase = "exchange"


_VMAPPED: dict[Any, Any] = {}


def _vmapped(code) -> Any:
    """jit(vmap(fn)) for a codelet written for one vertex, cached per codelet."""
    fn = _VMAPPED.get(code)
    if fn is None:
        import jax

        if code.random:
            raise GraphError(f"codelet {code.name!r}: random codelets must be vectorised (numpy over the batch)")
        fn = _VMAPPED[code] = jax.jit(jax.vmap(code.fn))
    return fn

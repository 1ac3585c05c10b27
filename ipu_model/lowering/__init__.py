"""A jitted JAX function on the simulated IPU: its jaxpr lowered to an ipu_model graph and program.

    low = lower(fn, *args)                        # args: arrays, or jax.ShapeDtypeStruct for cost-only use
    outs = low.run(*arrays)                       # values, computed by the vertices (exact against JAX: tests)
    c = low.cost()                                # cycles, seconds, phases, memory: a cost-only run
    print(c.report())

Lowering reads `jax.make_jaxpr(fn)(*args)` and turns each equation into ipu_model ops (`rules.RULES`): inputs and
new tensors are mapped over the tiles as Poplar's defaults would (linearly, in grains of the 64-bit vector width and
at least 128 bytes a tile), elementwise ops run where their output lives with six worker vertices per tile,
reductions and matmuls use `ipu_model.ops`, views (reshape, transpose, slices, broadcasts) cost nothing, and nested
jaxprs (jit, checkpoint, custom derivatives) are inlined. Every primitive of the function is checked before any
graph is built: one without a rule, or a dtype the IPU does not have, raises `UnsupportedError` naming it and what
is supported.

By default the inputs are already in tile memory (a decode step's cache and weights live there) and the outputs
stay there; `host_io=True` adds the host transfers. A function whose tensors do not fit in tile memory lowers, and
its cost says so (`Cost.fits`, with the compiler's message naming the tile and its largest tensors).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ipu_model.device import DeviceSpec, get_device
from ipu_model.engine import Engine
from ipu_model.graph import DTYPES, Graph, GraphError, Tensor
from ipu_model.lowering import control as _control  # registers scan
from ipu_model.lowering import dynamic as _dynamic  # registers dynamic_slice and dynamic_update_slice
from ipu_model.lowering import gather as _gather  # registers gather and scatter-add
from ipu_model.lowering import keys as _keys  # registers the PRNG key rules and random_bits
from ipu_model.lowering import rules as _rules  # registers the rules
from ipu_model.lowering import topk as _topk  # registers top_k
from ipu_model.lowering.builder import (
    RULES,
    Builder,
    HostMemoryError,
    Remote,
    UnsupportedError,
    check_jaxpr,
    dtype_name,
)
from ipu_model.programs import DeviceToHost, HostToDevice, RemoteBuffer, RemoteRead, Sequence, walk

RULE_MODULES = (_control, _dynamic, _gather, _keys, _rules, _topk)  # each registers its rules in RULES on import


def _rule_modules() -> tuple:
    """The modules holding the rules. `lower` names them so that the fingerprint of code that lowers a function
    covers every rule (core.provenance follows names; the rules reach RULES through decorators it cannot see)."""
    return RULE_MODULES


UNBOUNDED_TILE_BYTES = 1 << 40  # tile memory of the device a program that does not fit is costed on (`cost`)

__all__ = ["RULES", "Cost", "HostMemoryError", "Lowered", "UnsupportedError", "lower", "supported_primitives"]


def supported_primitives() -> list[str]:
    """The JAX primitives the lowering has a rule for."""
    return sorted(RULES)


@dataclass
class Cost:
    """A cost-only run of a lowered function: the cycles and their phases, or why it does not fit."""

    device: str
    cycles: float
    seconds: float
    fits: bool
    phases: dict[str, float] = field(default_factory=dict)  # sync, exchange, compute, host cycles
    memory_peak_bytes: float = 0.0  # the fullest tile's bytes (all categories)
    memory_per_tile: int = 0
    message: str = ""  # the compiler's out-of-memory message when it does not fit
    primitives: dict[str, int] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)  # host seconds: lower, compile, simulate

    def shares(self) -> dict[str, float]:
        total = sum(self.phases.values())
        return {k: (v / total if total else 0.0) for k, v in self.phases.items()}

    def report(self) -> str:
        if not self.fits and not self.cycles:
            return f"does not fit in tile memory on {self.device}: {self.message}"
        parts = ", ".join(f"{k} {v:.0%}" for k, v in self.shares().items() if v)
        text = (
            f"{self.cycles:,.0f} cycles = {self.seconds * 1e6:,.1f} us on {self.device} ({parts}); fullest tile "
            f"{self.memory_peak_bytes / 1024:,.0f} of {self.memory_per_tile / 1024:,.0f} KiB"
        )
        return (
            text if self.fits else f"does not fit in tile memory on {self.device} ({self.message}); if it did: {text}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "cycles": self.cycles,
            "seconds": self.seconds,
            "fits": self.fits,
            "phases": self.phases,
            "memory_peak_bytes": self.memory_peak_bytes,
            "memory_per_tile": self.memory_per_tile,
            "message": self.message,
            "primitives": self.primitives,
            "wall": self.wall,
        }


@dataclass
class Lowered:
    """A function lowered onto one simulated IPU: its graph, program, input and output tensors (flat, in the
    order of jax.tree_util's leaves) and how many equations of each primitive it has."""

    graph: Graph
    program: Sequence
    inputs: list[Any]  # a Tensor, or a RemoteBuffer for an argument in streaming memory
    shapes: list[tuple[int, ...]]
    outputs: list[Tensor]
    in_tree: Any
    out_tree: Any
    primitives: Counter
    host_io: bool
    seconds: float  # host time to lower
    _engine: Engine | None = None
    _compile_seconds: float = 0.0

    @property
    def streamed_bytes(self) -> int:
        """Bytes the program reads from streaming memory (its RemoteRead steps' destinations)."""
        return sum(p.dst.size * p.dst.dtype.itemsize for p in walk(self.program) if isinstance(p, RemoteRead))

    def engine(self) -> Engine:
        """The compiled engine (compiled once; raises OutOfMemoryError and the compiler's other checks)."""
        if self._engine is None:
            t0 = time.perf_counter()
            self._engine = Engine(self.graph, self.program)
            self._compile_seconds = time.perf_counter() - t0
        return self._engine

    def unbounded_engine(self) -> Engine:
        """The program compiled for its device with tile memory unbounded (every other figure the device's): what a
        program that does not fit would take if its tiles held it. Not cached (nothing else is compiled so)."""
        spec = self.graph.device
        self.graph.device = replace(spec, memory_per_tile=UNBOUNDED_TILE_BYTES)
        try:
            t0 = time.perf_counter()
            engine = Engine(self.graph, self.program)
            self._compile_seconds = time.perf_counter() - t0
        finally:
            self.graph.device = spec
        return engine

    def run(self, *args: Any) -> Any:
        """Run the function's program on these arguments (the pytree `lower` saw); returns its outputs, as numpy
        arrays in the function's output structure."""
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)
        if tree != self.in_tree:
            raise ValueError(f"arguments of structure {tree} do not match the lowered function's {self.in_tree}")
        engine = self.engine()
        feeds = {}
        for i, (t, x) in enumerate(zip(self.inputs, leaves, strict=True)):
            x = np.asarray(x)
            shape = self.shapes[i]
            if x.shape != shape or x.dtype != t.dtype:
                raise ValueError(
                    f"argument {i}: {x.dtype}{list(x.shape)}, the lowered function takes {t.dtype}{list(shape)}"
                )
            if isinstance(t, RemoteBuffer):
                t.data[:] = x.reshape(t.data.shape)
            elif self.host_io:
                feeds[f"in{i}"] = x
            else:
                engine.write(t, x)
        result = engine.run(feeds)
        if self.host_io:
            outs = [result.outputs[f"out{i}"][-1] for i in range(len(self.outputs))]
        else:
            outs = [engine.read(t) for t in self.outputs]
        return jax.tree_util.tree_unflatten(self.out_tree, outs)

    def cost(self, *, over_memory: bool = False) -> Cost:
        """A cost-only run (`Engine.run(evaluate=False)`): the same cycles as a full run, no values computed. A
        program that does not fit in tile memory gives `fits=False` and the compiler's message, with no cycles, or
        with `over_memory=True` the cycles it would take if its tiles held it (what a layout that fits could aim at)."""
        from ipu_model.compiler import OutOfMemoryError

        device = self.graph.device
        prims = dict(sorted(self.primitives.items()))
        problem = ""
        try:
            engine = self.engine()
        except OutOfMemoryError as e:
            if not over_memory:
                return Cost(device.name, 0.0, 0.0, False, message=str(e), memory_per_tile=device.memory_per_tile,
                            primitives=prims, wall={"lower": self.seconds})  # fmt: skip
            problem, engine = str(e), self.unbounded_engine()
        t0 = time.perf_counter()
        feeds = {f"in{i}": np.zeros(t.shape, t.dtype) for i, t in enumerate(self.inputs)} if self.host_io else {}
        before = engine.profile.totals()
        result = engine.run(feeds, evaluate=False)
        after = engine.profile.totals()
        phases = {k: after[k] - before[k] for k in ("sync", "exchange", "compute", "host", "stream")}
        peak = after["memory_max_tile_bytes"]
        return Cost(
            device.name,
            float(result.cycles),
            float(result.seconds),
            not problem,
            phases=phases,
            memory_peak_bytes=peak,
            memory_per_tile=device.memory_per_tile,
            message=problem,
            primitives=prims,
            wall={"lower": self.seconds, "compile": self._compile_seconds, "simulate": time.perf_counter() - t0},
        )


def _spec(x: Any) -> tuple[tuple[int, ...], Any]:
    """(shape, dtype) of an argument: an array, a jax.ShapeDtypeStruct, a scalar (a typed PRNG key keeps its dtype)."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(int(s) for s in x.shape), x.dtype
    a = np.asarray(x)
    return a.shape, a.dtype


def lower(
    fn: Any,
    *args: Any,
    device: DeviceSpec | str | int = "mk2",
    host_io: bool = False,
    name: str = "",
    remote: tuple[int, ...] | list[int] = (),
    max_host_bytes: int | None = None,
) -> Lowered:
    """Lower `fn(*args)` onto a simulated IPU. `args` are arrays or jax.ShapeDtypeStruct (only shapes and dtypes
    are read); `device` a DeviceSpec, a preset name or a tile count (an Mk2 with that many tiles); `remote` the
    positions (among the flattened arguments) of those kept in streaming memory, as rows of their last axis: a row
    gather reads the rows it needs, any other use streams the whole argument in first. Raises UnsupportedError,
    before building anything, for a primitive without a rule or a dtype the IPU lacks; HostMemoryError, between
    equations, once the process holds more than `max_host_bytes` of the host's memory (None: no limit)."""
    import jax

    t0 = time.perf_counter()
    _rule_modules()
    leaves, in_tree = jax.tree_util.tree_flatten(args)
    structs = [jax.ShapeDtypeStruct(*_spec(x)) for x in leaves]
    for i, s in enumerate(structs):
        if dtype_name(s.dtype) not in DTYPES:
            raise UnsupportedError(
                f"argument {i} of {name or getattr(fn, '__name__', 'the function')} is {s.dtype}: the "
                f"simulated IPU holds {', '.join(DTYPES)} (pass a PRNG key's data, jax.random.key_data)"
            )
    closed, out_shape = jax.make_jaxpr(lambda *xs: fn(*jax.tree_util.tree_unflatten(in_tree, xs)), return_shape=True)(
        *structs
    )
    out_tree = jax.tree_util.tree_structure(out_shape)
    primitives = check_jaxpr(closed.jaxpr)  # raises before any graph is built
    if isinstance(device, str):
        device = get_device(device)
    elif not isinstance(device, DeviceSpec):
        device = get_device("mk2", tiles=int(device))
    bad = [i for i in remote if not 0 <= i < len(structs)]
    if bad:
        raise ValueError(f"remote={list(remote)}: positions {bad} are not among the {len(structs)} arguments")
    if remote and host_io:
        raise ValueError("remote arguments are filled in streaming memory, not streamed from the host: drop host_io")
    graph = Graph(device)
    b = Builder(graph)
    b.max_host_bytes, b.equations = max_host_bytes, (0, int(sum(primitives.values())))
    inputs: list[Any] = []
    env_inputs: list[Any] = []
    for i, s in enumerate(structs):
        if i in remote:
            row = s.shape[-1] if s.shape else 1
            buf = RemoteBuffer(f"in{i}", max(int(np.prod(s.shape)) // max(row, 1), 1), row, s.dtype.name)
            inputs.append(buf)
            env_inputs.append(Remote(buf, tuple(s.shape)))
            continue
        t = graph.add_variable(s.shape, s.dtype.name, f"in{i}")
        b.map_default(t)
        b.arguments.add(id(t.var))
        inputs.append(t)
        env_inputs.append(t)
    consts = [b.constant(np.asarray(c), "const") for c in closed.consts]
    outputs = [b.stream_in(t) if isinstance(t, Remote) else t for t in b.lower_jaxpr(closed.jaxpr, consts, env_inputs)]
    # an output that is a view of another tensor (an input, a broadcast) becomes its own variable, as JAX returns
    # fresh arrays; host_io streams it back
    outputs = [b.materialise(t, f"out{i}") for i, t in enumerate(outputs)]
    steps = list(b.steps)
    if host_io:
        steps = [HostToDevice(f"in{i}", t) for i, t in enumerate(inputs)] + steps
        steps += [DeviceToHost(t, f"out{i}") for i, t in enumerate(outputs)]
    program = Sequence(*steps, name=name or getattr(fn, "__name__", "function"))
    if not graph.variables:
        raise GraphError("the lowered function has no tensors")
    shapes = [tuple(s.shape) for s in structs]
    return Lowered(
        graph, program, inputs, shapes, outputs, in_tree, out_tree, primitives, host_io, time.perf_counter() - t0
    )

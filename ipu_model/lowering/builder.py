"""The lowering's machinery: the rule registry, the check of a jaxpr before anything is built, and the Builder
that walks a jaxpr, holds each variable's tensor and collects the program steps the rules add (rules.py).

A rule gets the Builder, the equation and the tensors of its operands, and returns the tensors of its results; a
primitive may also register a check (`CHECKS`) that says, from the equation alone, why the IPU cannot run it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ipu_model.graph import DTYPES, Codelet, Graph, GraphError, Tensor
from ipu_model.ops import tile_ranges, worker_chunks
from ipu_model.programs import Copy, Execute, RemoteBuffer, RemoteRead


class UnsupportedError(GraphError):
    """A JAX function the lowering cannot build: a primitive without a rule, or a dtype the IPU does not have.
    `missing` counts the equations of each primitive without a rule (loop bodies included), `problems` names the
    equations a rule refuses (empty where the message says all)."""

    def __init__(self, message: str, missing: dict[str, int] | None = None, problems: list[str] | None = None):
        super().__init__(message)
        self.missing = dict(missing or {})
        self.problems = list(problems or [])


class HostMemoryError(GraphError):
    """The lowering needed more of the host's memory than it was given (`lower(..., max_host_bytes=...)`): the
    graph it builds keeps every vertex as a Python object (about a kilobyte each), so a step of many thousands of
    equations can outgrow a small machine. Raised between equations, before the machine runs out."""


def host_rss_bytes() -> int:
    """This process's resident memory (Linux /proc; the peak so far where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            import os

            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass(frozen=True)
class Remote:
    """An argument kept in streaming memory: a remote buffer of its rows (the last axis) and its shape. Rules that
    can read rows of it directly take it as it is (`REMOTE_RULES`: a row gather); any other use streams it onto the
    tiles whole first (`Builder.stream_in`)."""

    buffer: RemoteBuffer
    shape: tuple[int, ...]


# primitives whose rule reads a Remote operand itself (its first); a scatter-add's operand is streamed in first
REMOTE_RULES = {"gather"}
INLINED_BODIES = {"scan"}  # primitives whose rule lowers the jaxprs they hold (lowering/control.py)


CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
         "checkpoint", "remat", "remat2")  # fmt: skip


def _platform_branch(eqn) -> tuple[Any, list] | None:
    """The branch a `jax.lax.platform_dependent` choice runs on the IPU, and its constants: the default branch (the
    IPU is none of the platforms JAX names); None for any other equation, a data-dependent `cond` among them."""
    platforms = eqn.params.get("branches_platforms") if eqn.primitive.name == "cond" else None
    if platforms is None or None not in platforms:
        return None
    sub = eqn.params["branches"][platforms.index(None)]
    return sub.jaxpr, list(sub.consts)


def _subjaxpr(eqn) -> tuple[Any, list]:
    """The jaxpr a call-like equation runs, and its constants."""
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = eqn.params.get(key)
        if sub is None:
            continue
        if hasattr(sub, "jaxpr"):  # a ClosedJaxpr
            return sub.jaxpr, list(sub.consts)
        return sub, []
    raise UnsupportedError(f"{eqn.primitive.name}: no inner jaxpr among its parameters {sorted(eqn.params)}")


def dtype_name(dtype: Any) -> str | None:
    """numpy's name of a dtype; None for what is not a numpy dtype at all (a typed PRNG key, a token)."""
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


KEY_WORDS = 2  # uint32 words of a threefry key's data (lowering/keys.py)
# primitives that only move elements: on key arrays, views of the key data (KEY_VIEW, set by lowering/keys.py)
KEY_VIEWS = ("slice", "squeeze", "reshape", "broadcast_in_dim", "transpose", "expand_dims", "rev", "copy", "copy_p")
KEY_VIEW: list[Callable] = []


def is_key(aval) -> bool:
    """Whether an abstract value is a typed PRNG key array."""
    return str(getattr(aval, "dtype", "")).startswith("key<")


def data_shape(aval) -> tuple[int, ...]:
    """The shape the lowering holds a value in: a key array's with its key words last, any other's own."""
    return (*aval.shape, KEY_WORDS) if is_key(aval) else tuple(aval.shape)


def _dtype_problem(eqn) -> str | None:
    """Why the equation cannot run on the IPU, beyond its primitive's rule existing; None if it can."""
    name = eqn.primitive.name
    for v in [*eqn.invars, *eqn.outvars]:
        aval = getattr(v, "aval", None)
        dtype = getattr(aval, "dtype", None)
        if is_key(aval):
            if not (name.startswith("random_") or name in KEY_VIEWS):
                return f"{name} on {dtype} keys (keys are lowered through random_* and {', '.join(KEY_VIEWS)} only)"
        elif dtype is not None and dtype_name(dtype) not in DTYPES:
            return f"{name} on {dtype} (the simulated IPU holds {', '.join(DTYPES)})"
    return CHECKS[name](eqn) if name in CHECKS else None


def _inner_jaxprs(eqn) -> list:
    """The jaxprs inside a control-flow or mapping equation (scan, while, cond, shard_map), to name what they hold."""
    out = []
    for value in eqn.params.values():
        for item in value if isinstance(value, tuple | list) else (value,):
            if hasattr(item, "eqns"):
                out.append(item)
            elif hasattr(item, "jaxpr") and hasattr(item.jaxpr, "eqns"):
                out.append(item.jaxpr)
    return out


def check_jaxpr(jaxpr, counts: Counter | None = None) -> Counter:
    """Every primitive of `jaxpr` (nested calls included) has a rule and dtypes the IPU has: raise
    UnsupportedError naming all that do not (inside an unsupported loop or map too, so one message lists what a
    function needs); return the count of each primitive's equations."""
    counts = Counter() if counts is None else counts
    missing: Counter = Counter()
    problems: list[str] = []

    def visit(jx) -> None:
        for eqn in jx.eqns:
            name = eqn.primitive.name
            if name in CALLS:
                visit(_subjaxpr(eqn)[0])
                continue
            branch = _platform_branch(eqn)
            if branch is not None:  # platform_dependent: only the IPU's branch is lowered
                visit(branch[0])
                continue
            if name == "cond" and eqn.params.get("branches_platforms") is not None:
                problems.append(f"platform_dependent for {list(eqn.params['branches_platforms'])} only (no default)")
                continue
            counts[name] += 1
            if name not in RULES:
                missing[name] += 1
                for inner in _inner_jaxprs(eqn):  # a loop's body: what it would need besides the loop
                    visit(inner)
                continue
            problem = _dtype_problem(eqn)
            if problem:
                problems.append(problem)
            if name in INLINED_BODIES:  # a loop the lowering unrolls: its body is lowered too
                for inner in _inner_jaxprs(eqn):
                    visit(inner)

    visit(jaxpr)
    if missing or problems:
        parts = []
        if missing:
            parts.append("no rule for " + ", ".join(f"{p} (x{n})" for p, n in sorted(missing.items())))
        if problems:
            parts.append("unsupported: " + "; ".join(sorted(set(problems))))
        raise UnsupportedError(
            f"cannot lower this function to the simulated IPU: {'; '.join(parts)}. Supported primitives: "
            f"{', '.join(sorted(RULES))} (and calls {', '.join(CALLS)}, inlined; platform_dependent's default branch)",
            missing=dict(sorted(missing.items())),
            problems=sorted(set(problems)),
        )
    return counts


Rule = Callable[["Builder", Any, list[Tensor]], list[Tensor]]
RULES: dict[str, Rule] = {}
CHECKS: dict[str, Callable[[Any], str | None]] = {}  # primitive -> why an equation cannot run (None: it can)


def rule(*names: str, check: Callable[[Any], str | None] | None = None) -> Callable[[Rule], Rule]:
    """Register the decorated function as the rule of primitives `names` (and `check` as their check)."""

    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
            if check is not None:
                CHECKS[n] = check
        return fn

    return register


class Builder:
    """Lowers equations into `graph`, appending program steps to `steps`."""

    def __init__(self, graph: Graph):
        self.graph, self.steps = graph, []
        self.arguments: set[int] = set()  # ids of the arguments' variables (`lower` fills it)
        self.codelets: dict[tuple, Codelet] = {}  # the rules' codelets, by what makes them differ
        self._literals: dict[tuple, Tensor] = {}
        self._streamed: dict[int, Tensor] = {}  # remote buffer id -> its copy on the tiles
        self._frames: list[list] = []  # the jaxprs being lowered, outermost first: [env, last use of each var, eqn]
        self.max_host_bytes: int | None = None  # HostMemoryError past this resident size (checked every 16 equations)
        self.equations = (0, 0)  # (lowered so far, in all)

    # -------------------------------------------------------------------------------------------- tensors
    def map_default(self, t: Tensor) -> None:
        """Poplar's default for a new tensor (poputil::mapTensorLinearly, lib/poputil/TileMapping.cpp,
        calcLinearTileMapping): linearly over the tiles in grains of one 64-bit vector, at least 128 bytes a tile,
        so a small tensor sits on few tiles."""
        size = t.dtype.itemsize
        self.graph.map_linearly(t, grain=max(1, 8 // size), min_per_tile=-(-128 // size))

    def constant(self, value: np.ndarray, name: str) -> Tensor:
        """A constant tensor: a scalar on tile 0 (read by others over the exchange), else mapped linearly."""
        t = self.graph.add_constant(value, name=name)
        if t.size <= 1:
            self.graph.set_tile_mapping(t, 0)
        else:
            self.map_default(t)
        return t

    def literal(self, value: Any, dtype: Any) -> Tensor:
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.name, arr.shape, arr.tobytes())
        if key not in self._literals:
            self._literals[key] = self.constant(arr, "literal")
        return self._literals[key]

    def new(self, shape, dtype, name: str, like_t: Tensor | None = None) -> Tensor:
        """A new variable, mapped like view `like_t` (same shape) or by default."""
        t = self.graph.add_variable(tuple(shape), np.dtype(dtype).name, name)
        if like_t is not None and like_t.shape == t.shape:
            t.var.tile[:] = like_t.tiles().reshape(-1)
        else:
            self.map_default(t)
        return t

    def per_worker(self, name: str, code: Codelet, along: Tensor, **fields: Tensor) -> None:
        """One compute set where each tile's share of the flat view `along` is split over its workers, one vertex of
        `code` per share; each field is a view whose last axis runs along `along` (taken at the same positions)."""
        g = self.graph
        cs = g.add_compute_set(name)
        for tile, positions in tile_ranges(along).items():
            for chunk in worker_chunks(positions, g.device.workers):
                g.add_vertex(cs, code, tile, **{k: f[..., chunk] for k, f in fields.items()})
        self.steps.append(Execute(cs))

    def stream_in(self, r: Remote) -> Tensor:
        """The whole of a streaming-memory argument copied onto the tiles (once), mapped linearly."""
        key = id(r.buffer)
        if key not in self._streamed:
            t = self.new((r.buffer.rows, r.buffer.row), r.buffer.dtype, f"{r.buffer.name}/on_chip")
            self.steps.append(RemoteRead(r.buffer, t, name=f"{r.buffer.name}/stream_in"))
            self._streamed[key] = t.reshape(r.shape)
        return self._streamed[key]

    def owned(self, t: Tensor) -> bool:
        """`t` is the whole of a variable the lowering made (not an argument, not a constant)."""
        whole = t.shape == t.var.shape and np.array_equal(t.idx.reshape(-1), np.arange(t.var.size))
        return whole and not t.var.constant and id(t.var) not in self.arguments

    def materialise(self, t: Tensor, name: str) -> Tensor:
        """`t` as a whole variable of its own (an on-tile copy unless it already is one that no one else owns)."""
        if self.owned(t):
            return t
        out = self.new(t.shape, t.dtype, name, like_t=t)
        self.steps.append(Copy(t, out, name=f"{name}/copy"))
        return out

    def _count_equation(self, eqn) -> None:
        done, total = self.equations
        self.equations = (done + 1, total)
        if self.max_host_bytes is None or done % 16:
            return
        used = host_rss_bytes()
        if used > self.max_host_bytes:
            vertices = sum(len(cs.vertices) for cs in self.graph.compute_sets)
            raise HostMemoryError(
                f"lowering stopped at equation {done + 1:,} ({eqn.primitive.name}; the jaxpr has {total:,}, loop "
                f"bodies counted once): it holds "
                f"{used / 2**30:.1f} GiB of this host's memory, over the {self.max_host_bytes / 2**30:.1f} GiB it "
                f"may use ({vertices:,} vertices so far, {len(self.graph.variables):,} variables)"
            )

    def consumable(self, t: Tensor, position: int) -> bool:
        """Whether the rule now lowering may write its result over `t`, its operand at `position`, as XLA reuses a
        buffer that dies: `t` is a whole variable of its own (not an argument, not a constant), no value read later
        (in this jaxpr or an enclosing one) nor any other operand of this equation is a view of it, and it did not
        come into this jaxpr from a caller that reads it again (a loop body's inputs never die)."""
        if not self._frames or not self.owned(t):
            return False
        _, last, k, eqn, inputs, lent = self._frames[-1]
        mine = eqn.invars[position]
        if (mine in inputs and lent) or last.get(mine) != k:
            return False  # the caller's, or read again after this equation
        for depth, (env, last, k, *_) in enumerate(self._frames):
            inner = depth == len(self._frames) - 1
            for v, u in env.items():
                if inner and v is mine:
                    continue
                live = last.get(v, -1) > k or (inner and last.get(v, -1) == k)
                if live and not isinstance(u, Remote) and u.var is t.var:
                    return False
        return True

    # -------------------------------------------------------------------------------------------- jaxprs
    def lower_jaxpr(self, jaxpr, consts: list[Tensor], args: list[Tensor], lent: bool = False) -> list[Tensor]:
        """The tensors of `jaxpr`'s results. `lent`: its inputs stay the caller's after it (a loop body's), so no
        rule may write over them."""
        from jax.extend.core import Literal

        env: dict[Any, Tensor] = {}
        last: dict[Any, int] = {}  # each var's last reader: an equation's index, or past the end for the results
        for k, eqn in enumerate(jaxpr.eqns):
            last.update((a, k) for a in eqn.invars if not isinstance(a, Literal))
        last.update((a, len(jaxpr.eqns)) for a in jaxpr.outvars if not isinstance(a, Literal))
        frame: list = [env, last, -1, None, {*jaxpr.invars, *jaxpr.constvars}, lent]
        self._frames.append(frame)
        try:
            return self._lower_eqns(jaxpr, consts, args, frame)
        finally:
            self._frames.pop()

    def _lower_eqns(self, jaxpr, consts: list[Tensor], args: list[Tensor], frame: list) -> list[Tensor]:
        from jax.extend.core import Literal

        env = frame[0]
        for v, t in zip(jaxpr.constvars, consts, strict=True):
            env[v] = t
        for v, t in zip(jaxpr.invars, args, strict=True):
            env[v] = t

        def read(a) -> Tensor | Remote:
            return self.literal(a.val, a.aval.dtype) if isinstance(a, Literal) else env[a]

        for k, eqn in enumerate(jaxpr.eqns):
            frame[2:4] = k, eqn
            self._count_equation(eqn)
            ins = [read(a) for a in eqn.invars]
            name = eqn.primitive.name
            branch = _platform_branch(eqn)
            if name in CALLS or branch is not None:  # a platform choice: its IPU branch, without the index
                sub, sub_consts = branch or _subjaxpr(eqn)
                args = ins[1:] if branch is not None else ins
                outs = self.lower_jaxpr(sub, [self.constant(np.asarray(c), "const") for c in sub_consts], args)
            else:
                keep = 1 if name in REMOTE_RULES else 0  # a rule reading a Remote first operand itself
                ins = [t if i < keep or not isinstance(t, Remote) else self.stream_in(t) for i, t in enumerate(ins)]
                view = name in KEY_VIEWS and is_key(eqn.invars[0].aval)
                outs = KEY_VIEW[0](self, eqn, ins) if view else RULES[name](self, eqn, ins)
            for v, t in zip(eqn.outvars, outs, strict=True):
                if type(v).__name__ != "DropVar":
                    want = data_shape(v.aval)
                    if tuple(t.shape) != want:
                        raise GraphError(f"lowering {name}: result of shape {t.shape}, JAX's is {want}")
                    env[v] = t
        return [read(v) for v in jaxpr.outvars]

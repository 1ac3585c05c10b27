"""Compiling a program for the simulated IPU: the checks, and the plans the Engine (ipu_model/engine.py) runs.

Compiling checks what the hardware and Poplar would refuse: unmapped tensors, a vertex connected to data on another
tile (data must be brought over by an exchange: a Copy program), two vertices of one compute set writing the same
element or one reading what another writes, and tile memory (live tensors + vertex state + code + exchange code)
above the tile's capacity. A tensor is live from its first write to its last read in program order, as Poplar's
liveness analysis overlaps the memory of tensors whose lifetimes do not meet (`CompiledProgram._lifetimes`). It
plans every step once: the batches of vertices evaluated together and the cycles of each compute set, the traffic
of each Copy and host stream, and the steps a cost-only run must still execute.

One module over 400 lines: the checks and the plans read the same tile mapping and liveness, and a compiled
program is their single product.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ipu_model.cost import default_vertex_cycles, schedule_workers
from ipu_model.device import DeviceSpec
from ipu_model.graph import ComputeSet, Graph, GraphError, Tensor, Variable, Vertex, runs
from ipu_model.profile import MemoryMap
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


class OutOfMemoryError(GraphError):
    """A tile needs more memory than it has; the message names the tile, the bytes and the largest tensors there."""


class RemoteAccessError(GraphError):
    """A vertex is connected to data on another tile without an exchange."""


class WriteConflictError(GraphError):
    """Two vertices of one compute set write the same element, or one reads an element another writes."""


# ------------------------------------------------------------------------------------------------ compiled steps
@dataclass
class VertexGroup:
    """Vertices of one compute set that share a codelet and field shapes: evaluated in one batched call."""

    vertices: list[Vertex]
    tiles: np.ndarray
    workers: np.ndarray


@dataclass
class ComputePlan:
    """A compute set's vertex groups, each tile's cycles (its busiest worker's) and its arithmetic."""

    groups: list[VertexGroup]
    tile_cycles: np.ndarray
    flops: float


@dataclass
class CopyPlan:
    """A Copy's bytes received and sent per tile, the cycles of its on-tile part, and whether it crosses tiles."""

    bytes_in: np.ndarray
    bytes_out: np.ndarray
    local_cycles: np.ndarray
    remote: bool


@dataclass
class _Mapping:
    """A variable's tile mapping as runs of equal tile: [starts[i], ends[i]) on tiles[i]."""

    starts: np.ndarray
    ends: np.ndarray
    tiles: np.ndarray

    @classmethod
    def of(cls, var: Variable) -> _Mapping:
        t = var.tile
        if t.size == 0:
            z = np.zeros(0, np.int64)
            return cls(z, z, z)
        cut = np.flatnonzero(t[1:] != t[:-1]) + 1
        starts = np.concatenate([[0], cut]).astype(np.int64)
        ends = np.concatenate([cut, [t.size]]).astype(np.int64)
        return cls(starts, ends, t[starts].astype(np.int64))

    run_of: np.ndarray | None = None  # the mapping run of every element, made for many queries (`owner`)

    def owner(self, start: np.ndarray, length: int | np.ndarray) -> np.ndarray:
        """The tile owning each run [start, start+length) whole, or -2 where the run straddles tiles (`length` one for
        all runs or one per run). Many runs (a fiftieth of the elements or more) look up each end's mapping run in
        a table of the elements; fewer search the runs' starts."""
        size = int(self.ends[-1]) if self.ends.size else 0
        if self.run_of is None and np.size(start) * 50 >= size > 0:
            self.run_of = np.repeat(np.arange(self.starts.size, dtype=np.int32), self.ends - self.starts)
        if self.run_of is not None:
            first, last = self.run_of[start], self.run_of[start + length - 1]
            return np.where(first == last, self.tiles[first], -2)
        i = np.searchsorted(self.starts, start, side="right") - 1
        whole = self.ends[i] >= start + length
        return np.where(whole, self.tiles[i], -2)

    def bytes_per_tile(self, itemsize: int, num_tiles: int) -> np.ndarray:
        return np.bincount(self.tiles, weights=(self.ends - self.starts) * itemsize, minlength=num_tiles)


@dataclass
class TileMemory:
    """Bytes per tile by category, and the codelets each tile runs (code is counted once per codelet and tile).
    `variables` is each tile's peak of live tensor bytes over the program; vertex state, code and exchange code are
    resident throughout."""

    variables: np.ndarray
    vertex_state: np.ndarray
    code: np.ndarray
    exchange_code: np.ndarray
    codelets: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))


class CompiledProgram:
    """`program` over `graph`, checked and planned for the graph's device. Constructing one compiles it: raises
    GraphError (unmapped elements), RemoteAccessError, WriteConflictError or OutOfMemoryError before anything runs.

    order: every program step once, depth first, with its depth (as the Profile lists them); compute: the plan of
    each compute set, by id(compute set); copies: the plan of each Copy, by program id; host_bytes: the bytes per tile
    of each host stream step, by program id; control: ids of the compute sets and Copy programs that decide control
    flow; memory: the bytes each tile needs, by category.
    """

    def __init__(self, graph: Graph, program: Program):
        self.graph, self.program, self.device = graph, program, graph.device
        self._mappings: dict[int, _Mapping] = {}
        self.compute: dict[int, ComputePlan] = {}
        self.copies: dict[int, CopyPlan] = {}
        self.host_bytes: dict[int, np.ndarray] = {}
        self.control: set[int] = set()
        self._access_cache: dict[tuple, tuple[set[int], set[int]]] = {}  # by compute set (`_accesses`)
        self._local: dict[int, set] = defaultdict(set)  # by variable: keys of field runs found on their tile
        self._compile()

    def _mapping(self, var: Variable) -> _Mapping:
        m = self._mappings.get(id(var))
        if m is None:
            m = self._mappings[id(var)] = _Mapping.of(var)
        return m

    def _compile(self) -> None:
        n = self.device.tiles
        for var in self.graph.variables:
            unmapped = int(np.count_nonzero(var.tile < 0))
            if unmapped:
                raise GraphError(
                    f"variable {var.name!r} has {unmapped} of {var.size} elements without a tile: "
                    "map it with graph.set_tile_mapping or graph.map_linearly"
                )
        self.memory = TileMemory(*(np.zeros(n) for _ in range(4)))
        self.order: list[tuple[Program, int]] = []
        self._walk_depth(self.program, 0)
        self._live_memory()
        for p, _ in self.order:
            if isinstance(p, Execute):
                if id(p.compute_set) not in self.compute:
                    self.compute[id(p.compute_set)] = self._plan_compute(p.compute_set)
            elif isinstance(p, Copy):
                self.copies[p.id], code = self._plan_copy(p)
                self.memory.exchange_code += code
            elif isinstance(p, DynamicCopy):
                self.copies[p.id] = self._plan_dynamic_copy(p)
            elif isinstance(p, HostToDevice | DeviceToHost | RemoteRead):
                t = p.dst if isinstance(p, RemoteRead) else p.tensor
                self.host_bytes[p.id] = np.bincount(t.tiles().reshape(-1), minlength=n) * t.dtype.itemsize
        for tile, names in self.memory.codelets.items():
            self.memory.code[tile] += len(names) * self.device.codelet_code_bytes
        self._check_memory()
        self._find_control()
        for m in self._mappings.values():  # the element tables are only for compiling
            m.run_of = None

    def _accesses(self, p: Program) -> tuple[set[int], set[int]]:
        """(ids of the variables a step reads, ids of those it writes)."""
        if isinstance(p, Execute):
            key = ("cs", id(p.compute_set))
            if key not in self._access_cache:
                reads, writes = set(), set()
                for v in p.compute_set.vertices:
                    for f, t in v.fields.items():
                        if f in v.codelet.reads:
                            reads.add(id(t.var))
                        if f in v.codelet.writes:
                            writes.add(id(t.var))
                self._access_cache[key] = (reads, writes)
            return self._access_cache[key]
        if isinstance(p, Copy):
            return {id(s.var) for s, _ in p.pairs}, {id(d.var) for _, d in p.pairs}
        if isinstance(p, DynamicCopy):
            return (
                {id(s.var) for v in p.variants for s, _ in v.pairs},
                {id(d.var) for v in p.variants for _, d in v.pairs},
            )
        if isinstance(p, HostToDevice):
            return set(), {id(p.tensor.var)}
        if isinstance(p, DeviceToHost):
            return {id(p.tensor.var)}, set()
        if isinstance(p, RemoteRead):
            return ({id(p.offsets.var)} if p.offsets is not None else set()), {id(p.dst.var)}
        return set(), set()

    def _lifetimes(self) -> dict[int, tuple[int, int]]:
        """Every variable's live interval [first, last] over the steps of the program in execution order. A
        variable is live from its first write to its last read. Read before any write (its value was set before the
        program: a constant, or written from the host), it is live from step 0; written last and never read after
        (a result the host reads), to the end; never touched, throughout. A loop's body is walked once and whatever
        it touches lives for the whole loop (the next iteration may read it); both branches of an If are walked,
        one after the other."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        written_last: dict[int, bool] = {}
        log: list[tuple[int, int]] = []  # (step, variable id) of every access, for the loops
        t = 0

        def touch(reads: set[int], writes: set[int]) -> None:
            for key, is_write in [*((r, False) for r in reads), *((w, True) for w in writes)]:
                if key not in first:
                    first[key] = t if is_write else 0
                last[key] = t
                written_last[key] = is_write and key not in reads
                log.append((t, key))

        def visit(p: Program) -> None:
            nonlocal t
            if isinstance(p, Sequence):
                for s in p.steps:
                    visit(s)
            elif isinstance(p, Repeat | RepeatWhileTrue):
                t0, at = t, len(log)
                if isinstance(p, RepeatWhileTrue):
                    visit(p.condition)
                    touch({id(p.predicate.var)}, set())
                    t += 1
                visit(p.body)
                for key in {key for _, key in log[at:]}:
                    first[key] = min(first[key], t0)
                    last[key] = max(last[key], t)
                t += 1
            elif isinstance(p, If):
                touch({id(p.predicate.var)}, set())
                t += 1
                visit(p.then)
                visit(p.otherwise)
            else:
                touch(*self._accesses(p))
                t += 1

        visit(self.program)
        end = max(t - 1, 0)
        spans = {}
        for var in self.graph.variables:
            key = id(var)
            if var.constant or key not in first:
                spans[key] = (0, end)
            else:
                spans[key] = (first[key], end if written_last[key] else last[key])
        return spans

    def _live_memory(self) -> None:
        """Each tile's peak of live tensor bytes (memory.variables) and the step where it peaks."""
        n = self.device.tiles
        self.lifetimes = self._lifetimes()
        starts = np.unique([a for a, _ in self.lifetimes.values()] + [0])
        delta = np.zeros((len(starts) + 1, n))
        for var in self.graph.variables:
            a, b = self.lifetimes[id(var)]
            per_tile = self._mapping(var).bytes_per_tile(var.dtype.itemsize, n)
            delta[np.searchsorted(starts, a)] += per_tile
            delta[np.searchsorted(starts, b, side="right")] -= per_tile
        live = np.cumsum(delta[:-1], axis=0)  # [distinct start steps, tiles]: bytes live at each start
        self.memory.variables = live.max(axis=0) if len(starts) else np.zeros(n)
        self._peak_step = starts[np.argmax(live, axis=0)]  # per tile

    def _find_control(self) -> None:
        """The steps a cost-only run must still execute: those writing a branch predicate's variable and,
        transitively, those writing what such steps read (host streams always write), so branches and loop counts
        come out as in a full run."""
        steps: list[tuple[int, set[int], set[int]]] = []  # (key, variables read, variables written)
        control: set[int] = set()
        for p, _ in self.order:
            if isinstance(p, If | RepeatWhileTrue):
                control.add(id(p.predicate.var))
            elif isinstance(p, Execute):
                steps.append((id(p.compute_set), *self._accesses(p)))
            elif isinstance(p, Copy | DynamicCopy | RemoteRead):
                steps.append((p.id, *self._accesses(p)))
        changed = bool(control)
        while changed:
            changed = False
            for key, reads, writes in steps:
                if writes & control and key not in self.control:
                    self.control.add(key)
                    control |= reads
                    changed = True

    def _walk_depth(self, p: Program, depth: int) -> None:
        if any(q is p for q, _ in self.order):
            return
        self.order.append((p, depth))
        for c in p.children():
            self._walk_depth(c, depth + 1)

    def _plan_compute(self, cs: ComputeSet) -> ComputePlan:
        dev, verts = self.device, cs.vertices
        field_runs = self._field_runs(cs)
        self._check_locality(cs, field_runs)
        self._check_conflicts(cs, field_runs)
        # cycles: one estimate per (codelet, shapes) signature
        cycles = np.zeros(len(verts))
        flops_total = 0.0
        by_sig: dict[tuple, list[int]] = defaultdict(list)
        signatures = [_signature(v) for v in verts]
        for i, sig in enumerate(signatures):
            by_sig[sig].append(i)
        for members in by_sig.values():
            v = verts[members[0]]
            c, f = _vertex_cost(dev, v)
            cycles[members] = c
            flops_total += f * len(members)
        tiles = np.array([v.tile for v in verts], np.int64)
        workers, makespan = schedule_workers(tiles, cycles, dev.tiles, dev.workers)
        # random codelets: a vertex draws from its worker's stream; vertices sharing a worker draw in turn
        turn = np.zeros(len(verts), np.int64)
        seen: dict[tuple[int, int], int] = defaultdict(int)
        for i, v in enumerate(verts):
            if v.codelet.random:
                key = (v.tile, int(workers[i]))
                turn[i] = seen[key]
                seen[key] += 1
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, sig in enumerate(signatures):
            groups[(*sig, int(turn[i]))].append(i)
        plan_groups = [
            VertexGroup([verts[i] for i in members], tiles[members], workers[members])
            for _, members in sorted(groups.items(), key=lambda kv: kv[0][-1])
        ]
        # vertex state and code
        state = np.array(
            [dev.vertex_state_bytes + dev.field_state_bytes * len(v.fields) + v.codelet.state_bytes for v in verts]
        )
        self.memory.vertex_state += np.bincount(tiles, weights=state, minlength=dev.tiles)
        for v in verts:
            self.memory.codelets[v.tile].add(v.codelet.name)
        return ComputePlan(plan_groups, makespan, flops_total)

    def _field_runs(self, cs: ComputeSet) -> dict[int, tuple[Variable, list[tuple]]]:
        """Every vertex field of a compute set as runs of its variable, by variable in vertex order:
        (vertex, field, run starts, run length)."""
        per_var: dict[int, tuple[Variable, list[tuple]]] = {}
        for v in cs.vertices:
            for f, t in v.fields.items():
                starts, length = runs(t)
                per_var.setdefault(id(t.var), (t.var, []))[1].append((v, f, starts, length))
        return per_var

    @staticmethod
    def _flat(items: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(run starts, run lengths, item index of each run) of a variable's field runs."""
        sizes = np.array([st.size for _, _, st, _ in items], np.int64)
        starts = np.concatenate([st for _, _, st, _ in items]).astype(np.int64, copy=False)
        lengths = np.repeat(np.array([ln for _, _, _, ln in items], np.int64), sizes)
        return starts, lengths, np.repeat(np.arange(len(items)), sizes)

    def _check_locality(self, cs: ComputeSet, field_runs) -> None:
        for var, all_items in field_runs.values():
            # a field whose runs were already found on its tile (another compute set's view of the same elements)
            keys = [_runs_key(v.tile, st, ln) for v, _, st, ln in all_items]
            items = [it for it, key in zip(all_items, keys, strict=True) if key not in self._local[id(var)]]
            if not items:
                continue
            starts, lengths, item = self._flat(items)
            tiles = np.array([v.tile for v, _, _, _ in items], np.int64)[item]
            bad = np.flatnonzero(self._mapping(var).owner(starts, lengths) != tiles)
            if bad.size:
                v, f, _, length = items[int(item[bad[0]])]
                run = int(starts[bad[0]]) + np.arange(length)
                pos = int(run[np.argmax(var.tile[run] != v.tile)])  # the first element elsewhere
                raise RemoteAccessError(
                    f"compute set {cs.name!r}: vertex {v.codelet.name}.{f} on tile {v.tile} reads {var.name!r} "
                    f"element {pos}, which lives on tile {int(var.tile[pos])}; bring the data over with "
                    "a Copy program (an exchange) first"
                )
            self._local[id(var)].update(key for key in keys if key is not None)

    def _check_conflicts(self, cs: ComputeSet, field_runs) -> None:
        writes: dict[int, tuple] = {}
        reads: dict[int, tuple] = {}
        names: dict[int, str] = {}
        for key, (var, items) in field_runs.items():
            names[key] = var.name
            written = np.array([f in v.codelet.writes for v, f, _, _ in items])
            if not written.any():
                continue  # only read here: nothing to conflict with
            starts, lengths, item = self._flat(items)
            who = np.array([v.id for v, _, _, _ in items], np.int64)[item]
            is_write = written[item]
            writes[key] = (starts[is_write], lengths[is_write], who[is_write])
            if not is_write.all():
                reads[key] = (starts[~is_write], lengths[~is_write], who[~is_write])
        first_written = dict.fromkeys(
            id(t.var) for v in cs.vertices for f, t in v.fields.items() if f in v.codelet.writes
        )
        for key in first_written:
            s, ln, who = writes[key]
            order = np.argsort(s, kind="stable")
            s, e, who = s[order], s[order] + ln[order], who[order]
            if s.size > 1:
                reach = np.maximum.accumulate(e)[:-1]
                clash = np.flatnonzero(s[1:] < reach)
                if clash.size:
                    j = clash[0] + 1
                    raise WriteConflictError(
                        f"compute set {cs.name!r}: element {int(s[j])} of {names[key]!r} is written by more than one "
                        f"vertex (vertex ids {int(who[j - 1])} and {int(who[j])}) or twice by one"
                    )
            if key not in reads:
                continue
            rs, rl, rwho = reads[key]
            lo = np.searchsorted(e, rs, side="right")  # first write ending after the read starts
            hi = np.searchsorted(s, rs + rl, side="left")  # writes starting before the read ends
            hit = np.flatnonzero(hi > lo)
            for r in hit:
                others = who[lo[r] : hi[r]] != rwho[r]
                if others.any():
                    raise WriteConflictError(
                        f"compute set {cs.name!r}: vertex {int(rwho[r])} reads {names[key]!r} near element "
                        f"{int(rs[r])} while vertex {int(who[lo[r] : hi[r]][others][0])} writes it in the same "
                        "compute set (a race on hardware); split them into two compute sets"
                    )

    def _plan_copy(self, p: Copy) -> tuple[CopyPlan, np.ndarray]:
        """Traffic of a Copy, computed over runs of consecutive elements (one per row for row-contiguous views), and
        the exchange code it needs per tile."""
        n, dev = self.device.tiles, self.device
        bytes_in, local, regions_in, regions_out = (np.zeros(n) for _ in range(4))
        sent: dict[int, tuple[Variable, list]] = {}
        written: dict[int, tuple[Variable, list]] = {}
        for src, dst in p.pairs:
            ss, ds, lengths, so, do = self._run_pairs(src, dst)
            nbytes = lengths * src.dtype.itemsize
            remote = so != do
            bytes_in += np.bincount(do[remote], weights=nbytes[remote], minlength=n)
            local += np.bincount(do[~remote], weights=nbytes[~remote], minlength=n)
            regions_in += np.bincount(do[remote], minlength=n)
            rs, rl = ss[remote], lengths[remote]
            # a broadcast region (the same source run sent to several places) is sent once
            _, first = np.unique(rs * (src.var.size + 1) + rl, return_index=True)
            regions_out += np.bincount(so[remote][first], minlength=n)
            sent.setdefault(id(src.var), (src.var, []))[1].append((rs, rl))
            written.setdefault(id(dst.var), (dst.var, []))[1].append((ds, lengths))
        for var, items in written.values():
            starts = np.concatenate([s for s, _ in items])
            ends = np.concatenate([s + ln for s, ln in items])
            order = np.argsort(starts, kind="stable")
            if starts.size > 1 and np.any(starts[order][1:] < np.maximum.accumulate(ends[order])[:-1]):
                raise WriteConflictError(f"Copy {p.name!r}: some element of {var.name!r} is written more than once")
        bytes_out = np.zeros(n)
        for var, items in sent.values():  # a broadcast element leaves its tile once
            starts = np.concatenate([s for s, _ in items])
            ends = np.concatenate([s + ln for s, ln in items])
            m = self._mapping(var)
            covered = _covered_before(starts, ends, m.ends) - _covered_before(starts, ends, m.starts)
            bytes_out += np.bincount(m.tiles, weights=covered, minlength=n) * var.dtype.itemsize
        code = (regions_in + regions_out) * dev.exchange_code_bytes_per_region
        local_cycles = np.ceil(2 * local / dev.memory_bytes_per_cycle)  # a load and a store per byte
        return CopyPlan(bytes_in, bytes_out, local_cycles, bool(bytes_in.any())), code

    def _plan_dynamic_copy(self, p: DynamicCopy) -> list[CopyPlan]:
        """One plan per variant, each charged the slicing copy of what its source tiles send (a load and a store
        per byte); the exchange code of the largest variant."""
        plans, code = [], np.zeros(self.device.tiles)
        for v in p.variants:
            plan, v_code = self._plan_copy(v)
            plan.local_cycles = plan.local_cycles + np.ceil(2 * plan.bytes_out / self.device.memory_bytes_per_cycle)
            plans.append(plan)
            code = np.maximum(code, v_code)
        self.memory.exchange_code += code
        return plans

    def _run_pairs(self, src: Tensor, dst: Tensor):
        """(src starts, dst starts, run lengths, src tiles, dst tiles) over runs lying whole on one tile each."""
        ss, sl = runs(src)
        ds, dl = runs(dst)
        if sl != dl:
            ss, ds, sl = src.idx.reshape(-1), dst.idx.reshape(-1), 1
        ms, md = self._mapping(src.var), self._mapping(dst.var)
        so, do = ms.owner(ss, sl), md.owner(ds, sl)
        lengths = np.full(ss.size, sl, np.int64)
        split = (so < 0) | (do < 0)
        if not split.any():
            return ss, ds, lengths, so, do
        keep = ~split
        # runs that straddle tiles: cut them where either side's tile changes
        ps, pd, pl = _cut_runs(ss[split], ds[split], sl, ms, md)
        return (
            np.concatenate([ss[keep], ps]),
            np.concatenate([ds[keep], pd]),
            np.concatenate([lengths[keep], pl]),
            np.concatenate([so[keep], ms.owner(ps, pl)]),
            np.concatenate([do[keep], md.owner(pd, pl)]),
        )

    def _check_memory(self) -> None:
        total = self.memory.variables + self.memory.vertex_state + self.memory.code + self.memory.exchange_code
        over = np.flatnonzero(total > self.device.memory_per_tile)
        if not over.size:
            return
        t = int(over[np.argmax(total[over])])
        step = self._peak_step[t]  # the tensors live on the tile when its memory peaks
        live = [v for v in self.graph.variables if self.lifetimes[id(v)][0] <= step <= self.lifetimes[id(v)][1]]
        largest = sorted(((int(np.count_nonzero(v.tile == t)) * v.dtype.itemsize, v.name) for v in live), reverse=True)[
            :5
        ]
        listing = ", ".join(f"{name} {b:,} B" for b, name in largest if b)
        raise OutOfMemoryError(
            f"out of memory on tile {t}: needs {int(total[t]):,} bytes, the {self.device.name} tile has "
            f"{self.device.memory_per_tile:,} (live tensors {int(self.memory.variables[t]):,}, vertex state "
            f"{int(self.memory.vertex_state[t]):,}, code {int(self.memory.code[t]):,}, exchange code "
            f"{int(self.memory.exchange_code[t]):,}); {len(over)} tile(s) over; largest tensors there: {listing}"
        )

    def memory_map(self) -> MemoryMap:
        return MemoryMap(
            variables=self.memory.variables,
            vertex_state=self.memory.vertex_state,
            code=self.memory.code,
            exchange_code=self.memory.exchange_code,
            capacity=self.device.memory_per_tile,
        )


# ------------------------------------------------------------------------------------------------------ helpers
def _runs_key(tile: int, starts: np.ndarray, length: int) -> tuple | None:
    """A key for a field's runs on a tile (their starts by a 128-bit digest), for fields with many runs (None: few,
    cheaper to check again)."""
    if starts.size < 64:
        return None
    return (
        tile,
        length,
        starts.size,
        int(starts[0]),
        hashlib.blake2b(np.ascontiguousarray(starts), digest_size=16).digest(),
    )


def _covered_before(starts: np.ndarray, ends: np.ndarray, x: np.ndarray) -> np.ndarray:
    """How many positions below each `x` lie in the union of the intervals [starts, ends) (which may overlap)."""
    if starts.size == 0:
        return np.zeros(x.shape, np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > reach[:-1]  # an interval starting past every earlier end begins a disjoint piece
    first = np.flatnonzero(new)
    lo, hi = s[first], reach[np.append(first[1:] - 1, s.size - 1)]
    before = np.concatenate([[0], np.cumsum(hi - lo)])
    j = np.searchsorted(lo, x, side="right") - 1
    inside = np.minimum(x, hi[j]) - lo[j]
    return np.where(j < 0, 0, before[np.maximum(j, 0)] + inside)


def _cut_runs(ss: np.ndarray, ds: np.ndarray, length: int, ms: _Mapping, md: _Mapping):
    """Cut paired runs [ss, ss+length) -> [ds, ds+length) wherever either side's tile changes.

    Returns (source starts, destination starts, lengths) of the pieces, vectorised over runs.
    """
    offsets, owners = [np.zeros(ss.size, np.int64)], [np.arange(ss.size)]
    for starts, m in ((ss, ms), (ds, md)):
        lo = np.searchsorted(m.starts, starts, side="right")
        hi = np.searchsorted(m.starts, starts + length, side="left")
        count = hi - lo
        run = np.repeat(np.arange(ss.size), count)
        within = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        offsets.append(m.starts[lo[run] + within] - starts[run])
        owners.append(run)
    off, run = np.concatenate(offsets), np.concatenate(owners)
    order = np.lexsort((off, run))
    off, run = off[order], run[order]
    keep = np.ones(off.size, bool)
    keep[1:] = (off[1:] != off[:-1]) | (run[1:] != run[:-1])
    off, run = off[keep], run[keep]
    last = np.ones(off.size, bool)
    last[:-1] = run[1:] != run[:-1]
    end = np.where(last, length, np.roll(off, -1))
    return ss[run] + off, ds[run] + off, end - off


def _signature(v: Vertex) -> tuple:
    return (v.codelet, *((f, t.shape, t.dtype.str) for f, t in sorted(v.fields.items())))


def _vertex_cost(device: DeviceSpec, v: Vertex) -> tuple[float, float]:
    """(cycles, flops) of one vertex: the codelet's own cycle count if it has one, else the default estimate."""
    code = v.codelet
    shapes = {f: t.shape for f, t in v.fields.items()}
    flops = float(code.flops(**shapes)) if code.flops else float(sum(v.fields[f].size for f in code.writes))
    if code.cycles is not None:
        return float(code.cycles(device, **shapes)), flops
    nbytes = sum(t.nbytes for t in v.fields.values())
    dtype = code.compute_dtype or next(iter(v.fields.values())).dtype.name
    return math.ceil(default_vertex_cycles(device, flops, nbytes, dtype)), flops

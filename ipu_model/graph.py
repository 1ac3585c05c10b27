"""The Poplar-style graph: variables mapped onto tiles, tensor views of them, codelets, vertices and compute sets.

A Variable owns storage (a flat numpy array in its dtype) and a tile mapping (the tile of every element). A Tensor is
a view of one variable: an integer array of flat element positions with the view's shape, so slicing, reshaping,
transposing and broadcasting are numpy operations on positions and never copy data. Views made by basic indexing
are numpy views of one shared `arange`, so they cost no memory however large the variable.

A Codelet is the code of a vertex type: a function over its fields, given for a whole batch of vertices at once (a
leading vertex axis), since the engine evaluates all vertices of a compute set that share a codelet and field shapes
in one call. A Vertex is one instance of a codelet on one tile, its fields connected to tensor views.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ipu_model.device import DeviceSpec, get_device

DTYPES = ("float16", "float32", "int32", "uint32", "int16", "uint16", "int8", "uint8", "bool")
UNMAPPED = -1


class GraphError(ValueError):
    """A graph that cannot run: bad mapping, bad connection, wrong shapes. The message names the culprit."""


_ARANGES: list[np.ndarray] = [np.arange(0, dtype=np.int64)]  # every shared arange ever made (views may outlive one)


def _positions(size: int) -> np.ndarray:
    """A read-only view of 0..size-1 from one shared array, grown on demand."""
    if size > _ARANGES[-1].size:
        grown = np.arange(max(size, 2 * _ARANGES[-1].size), dtype=np.int64)
        grown.flags.writeable = False
        _ARANGES.append(grown)
    return _ARANGES[-1][:size]


def _is_arange_view(idx: np.ndarray) -> bool:
    """True if `idx` is a numpy view of a shared arange, so its memory order is its value order."""
    base = idx
    while getattr(base, "base", None) is not None:  # broadcast views hold their array behind a wrapper's .base
        base = base.base
    return any(base is a for a in _ARANGES)


class Variable:
    """Storage for one tensor: flat data in `dtype` and the tile of every element (-1 while unmapped)."""

    def __init__(self, graph: Graph, name: str, shape: tuple[int, ...], dtype: str):
        self.graph, self.name, self.shape, self.dtype = graph, name, shape, np.dtype(dtype)
        self.size = int(np.prod(shape, dtype=np.int64))
        self.data = np.zeros(self.size, dtype=self.dtype)
        self.tile = np.full(self.size, UNMAPPED, dtype=np.int16)
        self.constant = False

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, shape={self.shape}, dtype={self.dtype.name})"


class Tensor:
    """A view of a Variable: `idx` holds the flat position in the variable of every element of the view."""

    __slots__ = ("idx", "var")

    def __init__(self, var: Variable, idx: np.ndarray):
        self.var, self.idx = var, idx

    # ------------------------------------------------------------------------------------------------ shape
    @property
    def shape(self) -> tuple[int, ...]:
        return self.idx.shape

    @property
    def dtype(self) -> np.dtype:
        return self.var.dtype

    @property
    def size(self) -> int:
        return self.idx.size

    @property
    def nbytes(self) -> int:
        return self.idx.size * self.var.dtype.itemsize

    @property
    def name(self) -> str:
        return self.var.name

    def __getitem__(self, key: Any) -> Tensor:
        return Tensor(self.var, self.idx[key])

    def reshape(self, *shape: Any) -> Tensor:
        return Tensor(self.var, self.idx.reshape(*shape))

    def flatten(self) -> Tensor:
        return Tensor(self.var, self.idx.reshape(-1))

    def transpose(self, *axes: int) -> Tensor:
        return Tensor(self.var, self.idx.transpose(*axes))

    @property
    def T(self) -> Tensor:
        return self.transpose()

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        """A view that repeats elements (reading it reads each repeated element once per repeat)."""
        return Tensor(self.var, np.broadcast_to(self.idx, tuple(shape)))

    def expand_dims(self, axis: int) -> Tensor:
        return Tensor(self.var, np.expand_dims(self.idx, axis))

    # ------------------------------------------------------------------------------------------- placement
    def tiles(self) -> np.ndarray:
        """The tile of every element of the view (same shape as the view)."""
        return self.var.tile[self.idx]

    def read(self) -> np.ndarray:
        """The current values (a copy), shaped like the view."""
        return self.var.data[self.idx]

    def __repr__(self) -> str:
        return f"Tensor({self.var.name!r}, shape={self.shape}, dtype={self.dtype.name})"


def runs(t: Tensor) -> tuple[np.ndarray, int]:
    """The view as runs of consecutive positions: (start of each run, run length), in element order.

    Views whose last axis is contiguous in the variable give one run per row, so checks over them cost O(rows)
    instead of O(elements). Anything else gives runs of length 1.
    """
    idx = t.idx
    if idx.ndim == 0:
        return idx.reshape(1), 1
    n = idx.shape[-1]
    if n == 0:
        return np.zeros(0, np.int64), 1
    first = idx[..., 0].reshape(-1)
    contiguous = n == 1 or (idx.strides[-1] == idx.itemsize and _is_arange_view(idx))
    if not contiguous:
        rows = idx.reshape(-1, n)
        contiguous = bool(np.all(rows[:, 1:] - rows[:, :-1] == 1))
    if contiguous:
        return first, n
    return idx.reshape(-1), 1


@dataclass(frozen=True)
class Codelet:
    """The code of a vertex type.

    fn(**fields) -> dict of output values: every field arrives with a leading vertex axis (a batch of vertices that
    share this codelet and field shapes); inputs and in-outs are read, outputs and in-outs are written from the dict
    it returns. A random codelet also receives `rng`, a function `rng(n) -> uint64 array [batch, n]` that draws
    from each vertex's worker stream (xoroshiro128aox, seeded as the IPU seeds it), and `shapes`, the field shapes
    of one vertex (so it knows how much to draw for an output it does not read).

    With `vectorised=False`, fn is written for one vertex (fields without the vertex axis) in jax.numpy, and the
    engine runs it as jax.jit(jax.vmap(fn)) over the batch (not for random codelets).

    Cost: `flops(**shapes)` gives a vertex's arithmetic (default: one operation per output element); `cycles`, when
    given, replaces the default estimate entirely: cycles(device, **shapes) -> cycles on one worker.
    """

    name: str
    fn: Callable[..., dict[str, np.ndarray]]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    inouts: tuple[str, ...] = ()
    flops: Callable[..., float] | None = None
    cycles: Callable[..., float] | None = None
    compute_dtype: str | None = None  # dtype whose FLOP rate applies (default: the first field's dtype)
    random: bool = False
    state_bytes: int = 0  # extra vertex state beyond the field pointers
    vectorised: bool = True  # False: fn takes one vertex's fields (a JAX function) and is vmapped over the batch

    @property
    def fields(self) -> tuple[str, ...]:
        return self.inputs + self.inouts + self.outputs

    @property
    def reads(self) -> tuple[str, ...]:
        return self.inputs + self.inouts

    @property
    def writes(self) -> tuple[str, ...]:
        return self.inouts + self.outputs


def codelet(
    inputs: Iterable[str] = (), outputs: Iterable[str] = (), inouts: Iterable[str] = (), **kwargs: Any
) -> Callable[[Callable], Codelet]:
    """Decorator: `@codelet(inputs=("a", "b"), outputs=("c",))` over a batched function."""

    def wrap(fn: Callable) -> Codelet:
        return Codelet(fn.__name__, fn, tuple(inputs), tuple(outputs), tuple(inouts), **kwargs)

    return wrap


@dataclass
class Vertex:
    codelet: Codelet
    tile: int
    fields: dict[str, Tensor]
    id: int


@dataclass
class ComputeSet:
    name: str
    vertices: list[Vertex] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"ComputeSet({self.name!r}, {len(self.vertices)} vertices)"


class Graph:
    """Variables with tile mappings, and compute sets of vertices, for one device.

    `device` is a DeviceSpec, a preset name (`mk2`, `bow`, `mk1`), or a tile count (an Mk2 with that many tiles).
    """

    def __init__(self, device: DeviceSpec | str | int = "mk2"):
        if isinstance(device, str):
            device = get_device(device)
        elif isinstance(device, int | np.integer):
            device = get_device("mk2", tiles=int(device))
        self.device = device
        self.num_tiles = device.tiles
        self.variables: list[Variable] = []
        self.compute_sets: list[ComputeSet] = []
        self._names: set[str] = set()
        self._vertex_ids = itertools.count()

    def _unique(self, name: str) -> str:
        base, n = name, 1
        while name in self._names:
            n += 1
            name = f"{base}#{n}"
        self._names.add(name)
        return name

    # -------------------------------------------------------------------------------------------- variables
    def add_variable(self, shape: Sequence[int] | int, dtype: str = "float32", name: str = "var") -> Tensor:
        shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise GraphError(f"variable {name!r}: shape {shape} has a negative dimension")
        if np.dtype(dtype).name not in DTYPES:
            raise GraphError(f"variable {name!r}: dtype {dtype!r} is not supported; choose one of {', '.join(DTYPES)}")
        var = Variable(self, self._unique(name), shape, dtype)
        self.variables.append(var)
        return Tensor(var, _positions(var.size).reshape(shape))

    def add_constant(self, value: Any, dtype: str | None = None, name: str = "const", tile: int | None = None):
        """A variable initialised to `value` (counted in tile memory like any tensor); mapped to `tile` if given."""
        value = np.asarray(value, dtype=dtype)
        t = self.add_variable(value.shape, value.dtype.name, name)
        t.var.data[:] = value.reshape(-1)
        t.var.constant = True
        if tile is not None:
            self.set_tile_mapping(t, tile)
        return t

    def set_tile_mapping(self, t: Tensor, tile: int) -> None:
        if not 0 <= tile < self.num_tiles:
            raise GraphError(
                f"tile {tile} for {t.name!r} is out of range: the device has tiles 0..{self.num_tiles - 1}"
            )
        t.var.tile[t.idx] = tile

    def map_linearly(self, t: Tensor, grain: int = 1, min_per_tile: int = 1, tiles: Sequence[int] | None = None):
        """Spread the view's elements over tiles in order, in chunks of a multiple of `grain` elements.

        Like poputil::mapTensorLinearly: each tile gets ceil(n / tiles) elements rounded up to the grain, at least
        `min_per_tile`, so small tensors use fewer tiles. `tiles` restricts the tiles used (default: all).
        """
        tiles = np.arange(self.num_tiles) if tiles is None else np.asarray(tiles)
        n = t.size
        per = max(-(-n // len(tiles)), min_per_tile, 1)
        per = -(-per // grain) * grain
        owner = tiles[np.minimum(np.arange(n) // per, len(tiles) - 1)]
        t.var.tile[t.idx.reshape(-1)] = owner

    def map_blocks(self, t: Tensor, splits: Sequence[Sequence[int]], tile_of: Callable[..., int]) -> None:
        """Map a block grid: `splits[d]` are the boundaries along dim d; block (i, j) goes to tile_of(i, j)."""
        ranges = [list(itertools.pairwise(b)) for b in splits]
        for block in itertools.product(*[range(len(r)) for r in ranges]):
            key = tuple(slice(*ranges[d][i]) for d, i in enumerate(block))
            self.set_tile_mapping(t[key], tile_of(*block))

    # ----------------------------------------------------------------------------------------- compute sets
    def add_compute_set(self, name: str = "cs") -> ComputeSet:
        cs = ComputeSet(self._unique(name))
        self.compute_sets.append(cs)
        return cs

    def add_vertex(self, cs: ComputeSet, code: Codelet, tile: int, **fields: Tensor) -> Vertex:
        """Place a vertex of `code` on `tile` in `cs`, its fields connected to tensor views (checked at compile)."""
        if not 0 <= tile < self.num_tiles:
            raise GraphError(f"vertex {code.name!r}: tile {tile} is out of range 0..{self.num_tiles - 1}")
        missing = [f for f in code.fields if f not in fields]
        extra = [f for f in fields if f not in code.fields]
        if missing or extra:
            raise GraphError(
                f"vertex {code.name!r} on tile {tile}: fields {code.fields} expected, "
                f"missing {missing or 'none'}, unknown {extra or 'none'}"
            )
        for f, t in fields.items():
            if not isinstance(t, Tensor):
                raise GraphError(f"vertex {code.name!r} field {f!r} must be a Tensor, got {type(t).__name__}")
            if f in code.writes and t.var.constant:
                raise GraphError(f"vertex {code.name!r} writes field {f!r} to constant {t.name!r}")
        v = Vertex(code, int(tile), dict(fields), next(self._vertex_ids))
        cs.vertices.append(v)
        return v

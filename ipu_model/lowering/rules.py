"""The lowering's rules: one per JAX primitive, each turning an equation into ipu_model tensors and program steps.

A rule gets the Builder, the equation and the tensors of its operands, and returns the tensors of its results.
Views cost nothing (reshape, transpose, broadcast_in_dim, squeeze, slice, rev, a conversion to the same dtype);
elementwise primitives run where their output lives, six worker vertices per tile, each vertex applying the
primitive itself to its chunk (so values are JAX's); reductions and matmuls go through `ipu_model.ops`; nested
jaxprs (jit, checkpoint, custom derivatives) are inlined.

Cost (ipu_model/README.md, "Lowering JAX"): an elementwise vertex costs poplibs' estimate for the popops vertex
(costs.py); a concatenation's result is mapped like its operands, so its copy stays on tile (Poplar's concat is a
view and copies nothing: the on-tile copy is ours); a batched matmul runs each product on its own share of the
tiles, side by side (poplin's grouped matmul).
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model import ops
from ipu_model.graph import Codelet, GraphError, Tensor
from ipu_model.lowering.builder import Builder, rule
from ipu_model.lowering.costs import vertex_cycles
from ipu_model.programs import Copy, Program, side_by_side

# elementwise primitives, with the operations per element the profile counts as FLOPs (cycles are poplibs'
# estimates: costs.py)
ELEMENTWISE: dict[str, int] = {
    **dict.fromkeys(("add", "add_any", "sub", "mul", "max", "min", "neg", "abs", "sign", "floor", "ceil", "round"), 1),
    **dict.fromkeys(("shift_left", "shift_right_logical", "shift_right_arithmetic", "bitcast_convert_type"), 1),
    **dict.fromkeys(("lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "xor", "select_n", "clamp"), 1),
    **dict.fromkeys(("convert_element_type", "reduce_precision", "is_finite", "square", "integer_pow"), 1),
    **dict.fromkeys(("div", "rem", "sqrt", "rsqrt", "cbrt"), 4),
    **dict.fromkeys(("exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan"), 8),
    **dict.fromkeys(("erf", "erfc", "erf_inv", "atan2", "pow", "atan", "asin", "acos", "sinh", "cosh"), 16),
}
REDUCTIONS = {
    "reduce_sum": "add",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce_prod": "mul",
    "reduce_and": "min",
    "reduce_or": "max",
}  # fmt: skip  (and / or of booleans: their min / max)
LOGICAL = ("reduce_and", "reduce_or")
IDENTITY = ("copy", "copy_p", "stop_gradient", "optimization_barrier")


def _elementwise_codelet(b: Builder, eqn, arity: int) -> Codelet:
    """The codelet applying the equation's primitive to a chunk (one per primitive, parameters and dtypes)."""
    prim, params = eqn.primitive, dict(eqn.params)
    dtypes = tuple(np.dtype(v.aval.dtype).name for v in [*eqn.invars, *eqn.outvars])
    key = ("map", prim.name, repr(sorted(params.items(), key=lambda kv: kv[0])), dtypes)
    if key not in b.codelets:
        names = tuple(f"x{i}" for i in range(arity))
        per = ELEMENTWISE[prim.name]

        def fn(**fields):  # one vertex's chunk: the primitive itself (vmapped over the vertices by the engine)
            return {"out": prim.bind(*(fields[n] for n in names), **params)}

        in_dtype, out_dtype = dtypes[arity - 1], dtypes[-1]  # select_n's cases, not its predicate

        def cycles(device, **shapes):  # poplibs' estimate for the popops vertex (costs.py)
            return vertex_cycles(device, prim.name, params, in_dtype, out_dtype, math.prod(shapes["out"]), arity)

        b.codelets[key] = Codelet(
            prim.name,
            fn,
            inputs=names,
            outputs=("out",),
            flops=lambda **shapes: per * math.prod(shapes["out"]),
            cycles=cycles,
            vectorised=False,
        )
    return b.codelets[key]


def _reduction_check(eqn) -> str | None:
    aval = eqn.invars[0].aval
    logical = eqn.primitive.name in LOGICAL
    if (np.dtype(aval.dtype) == np.bool_) != logical:  # and / or of integers are bitwise: not lowered
        return f"{eqn.primitive.name} over {np.dtype(aval.dtype).name}"
    if any(aval.shape[d] == 0 for d in eqn.params["axes"]):
        return f"{eqn.primitive.name} over an empty axis"
    return None


def _dot_check(eqn) -> str | None:
    a, b = (np.dtype(v.aval.dtype).name for v in eqn.invars)
    if a != b or a not in ("float16", "float32"):
        return f"dot_general of {a} and {b} (the AMP multiplies float16 or float32 pairs of one dtype)"
    if 0 in (*eqn.invars[0].aval.shape, *eqn.invars[1].aval.shape):
        return "dot_general with an empty dimension"
    return None


def _broadcast(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """`t` as a view of `shape` (numpy broadcasting: a scalar, or size-1 dimensions, repeat)."""
    if t.shape == shape:
        return t
    return t.reshape((1,) * (len(shape) - len(t.shape)) + t.shape).broadcast_to(shape)


def _bring(b: Builder, v: Tensor, tiles: np.ndarray, name: str) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Flat view `v`'s elements on the tiles `tiles` names, one per element: each tile receives the distinct elements
    it needs once, into a buffer on that tile (a scalar reaches each tile once, as poplibs' broadcast ops have it,
    not once per element). Returns a view of the buffers in v's order and the (source, buffer) pair to copy."""
    src = v.idx.reshape(-1)
    key = tiles.astype(np.int64) * v.var.size + src
    unique, inverse = np.unique(key, return_inverse=True)
    buf = b.graph.add_variable((unique.size,), v.dtype.name, f"{name}/in")
    buf.var.tile[:] = unique // v.var.size
    return Tensor(buf.var, inverse.reshape(-1)), (Tensor(v.var, unique % v.var.size), buf)


@rule(*ELEMENTWISE)
def elementwise(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    name = eqn.primitive.name
    aval = eqn.outvars[0].aval
    shape = tuple(aval.shape)
    if name == "convert_element_type" and ins[0].dtype == np.dtype(aval.dtype):
        return [ins[0]]  # the same dtype: a view
    # the result is mapped like the first operand of its shape that is not a broadcast (repeats have 0 strides)
    ref = next((t for t in ins if t.shape == shape and 0 not in t.idx.strides), None)
    out = b.new(shape, aval.dtype, name, like_t=ref)
    if out.size == 0:
        return [out]
    out_flat = out.flatten()
    out_tiles = out_flat.tiles()
    local, copies = [], []
    for t in ins:  # operands mapped elsewhere, or broadcast from elsewhere, come over the exchange first
        v = _broadcast(t, shape).flatten()
        if np.array_equal(v.tiles(), out_tiles):
            local.append(v)
        else:
            view, pair = _bring(b, v, out_tiles, name)
            copies.append(pair)
            local.append(view)
    if copies:
        b.steps.append(Copy([s for s, _ in copies], [d for _, d in copies], name=f"{name}/exchange"))
    fields = {f"x{i}": f for i, f in enumerate(local)}
    b.per_worker(name, _elementwise_codelet(b, eqn, len(ins)), out_flat, out=out_flat, **fields)
    return [out]


# --------------------------------------------------------------------------------------------------------- views
@rule(*IDENTITY)
def identity(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    return list(ins)


def _plain_reshape(eqn) -> str | None:
    return None if eqn.params.get("dimensions") is None else "reshape with `dimensions` (a transpose first)"


def _default_platform(eqn) -> str | None:
    platforms = list(eqn.params["platforms"])  # the same words as the `cond`'s check (builder.py), said once
    return None if None in platforms else f"platform_dependent for {platforms} only (no default)"


@rule("platform_index", check=_default_platform)
def platform_index(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """`jax.lax.platform_dependent`'s choice: the default branch's position (the IPU is none of the platforms named);
    the choice itself is made when the lowering meets the `cond` (builder.py)."""
    return [b.literal(list(eqn.params["platforms"]).index(None), np.int32)]


@rule("reshape", check=_plain_reshape)
def reshape(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    return [ins[0].reshape(tuple(eqn.params["new_sizes"]))]


@rule("squeeze")
def squeeze(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    return [ins[0].reshape(tuple(eqn.outvars[0].aval.shape))]


@rule("expand_dims")
def expand_dims(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    return [ins[0].reshape(tuple(eqn.outvars[0].aval.shape))]


@rule("transpose")
def transpose(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    return [ins[0].transpose(*eqn.params["permutation"])]


@rule("broadcast_in_dim")
def broadcast_in_dim(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    t, shape = ins[0], tuple(eqn.params["shape"])
    placed = [1] * len(shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        placed[d] = t.shape[i]
    return [t.reshape(tuple(placed)).broadcast_to(shape)]


@rule("slice")
def slice_(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    p = eqn.params
    strides = p.get("strides") or (1,) * len(p["start_indices"])
    key = tuple(slice(a, z, s) for a, z, s in zip(p["start_indices"], p["limit_indices"], strides, strict=True))
    return [ins[0][key]]


@rule("split")
def split(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """Consecutive slices along one axis (jnp.split): views."""
    axis, at, parts = eqn.params["axis"], 0, []
    for size in eqn.params["sizes"]:
        parts.append(ins[0][(slice(None),) * axis + (slice(at, at + size),)])
        at += size
    return parts


@rule("rev")
def rev(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    dims = set(eqn.params["dimensions"])
    return [ins[0][tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(len(ins[0].shape)))]]


# ------------------------------------------------------------------------------------------------ new tensors
@rule("iota")
def iota(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    p = eqn.params
    shape, dim = tuple(p["shape"]), p["dimension"]
    line = np.arange(shape[dim], dtype=np.dtype(p["dtype"])).reshape([-1 if d == dim else 1 for d in range(len(shape))])
    return [b.constant(np.broadcast_to(line, shape).copy(), "iota")]


@rule("concatenate", "stack")
def concatenate(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """A new tensor whose every part is mapped like its operand, filled by on-tile copies (a stack: each operand
    with a new axis of size 1, then concatenated along it)."""
    if eqn.primitive.name == "stack":
        return [join(b, ins, eqn.params["axis"], "stack", new_axis=True)]
    return [join(b, ins, eqn.params["dimension"], "concatenate")]


def join(b: Builder, ins: list[Tensor], dim: int, name: str, *, new_axis: bool = False) -> Tensor:
    """The operands joined along axis `dim` (`new_axis`: stacked along a new axis there) in a new tensor whose every
    part is mapped like its operand, filled by on-tile copies."""
    if new_axis:
        ins = [t.reshape((*t.shape[:dim], 1, *t.shape[dim:])) for t in ins]
    shape = list(ins[0].shape)
    shape[dim] = sum(t.shape[dim] for t in ins)
    out = b.graph.add_variable(tuple(shape), ins[0].dtype.name, name)
    parts, at = [], 0
    for t in ins:
        key = tuple(slice(at, at + t.shape[dim]) if d == dim else slice(None) for d in range(len(t.shape)))
        b.graph.set_tile_mapping(out[key], 0)  # placeholder, replaced below element by element
        out.var.tile[out[key].idx.reshape(-1)] = t.tiles().reshape(-1)
        parts.append((t, out[key]))
        at += t.shape[dim]
    b.steps.append(Copy([s for s, _ in parts], [d for _, d in parts], name=name))
    return out


def _edge_padding(eqn) -> str | None:
    config = eqn.params["padding_config"]
    if any(lo < 0 or hi < 0 or interior for lo, hi, interior in config):
        return f"pad with negative or interior padding {config}"
    return None


@rule("pad", check=_edge_padding)
def pad(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """Non-negative edge padding without interior padding: the padding value broadcast, then the operand."""
    t, value = ins
    config = eqn.params["padding_config"]
    aval = eqn.outvars[0].aval
    out = b.new(tuple(aval.shape), aval.dtype, "pad")
    key = tuple(slice(lo, lo + n) for (lo, _, _), n in zip(config, t.shape, strict=True))
    out.var.tile[out[key].idx.reshape(-1)] = t.tiles().reshape(-1)
    b.steps.append(Copy(_broadcast(value, out.shape), out, name="pad/fill"))
    b.steps.append(Copy(t, out[key], name="pad/operand"))
    return [out]


# ------------------------------------------------------------------------------------------------- reductions
def _rows(t: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, tuple[int, ...]]:
    """`t` as [rows, reduced] (the kept dimensions first, in order), and the kept shape."""
    keep = [d for d in range(len(t.shape)) if d not in axes]
    kept = tuple(t.shape[d] for d in keep)
    length = math.prod(t.shape[d] for d in axes)
    return t.transpose(*keep, *axes).reshape(math.prod(kept), length), kept


@rule(*REDUCTIONS, check=_reduction_check)
def reduction(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    axes = tuple(eqn.params["axes"])
    aval = eqn.outvars[0].aval
    view, kept = _rows(ins[0], axes)
    if view.shape[1] == 1:
        return [view.reshape(kept)]
    prog, out = ops.reduce(b.graph, view, axis=1, op=REDUCTIONS[eqn.primitive.name],
                           out_dtype=np.dtype(aval.dtype).name, name=eqn.primitive.name)  # fmt: skip
    b.steps.append(prog)
    return [out.reshape(kept)]


def _arg_codelet(kind: str, index_dtype: str) -> Codelet:
    fn = np.argmax if kind == "argmax" else np.argmin
    return Codelet(kind, lambda a: {"out": fn(a, axis=1).astype(index_dtype)}, ("a",), ("out",),
                   flops=lambda a, out: math.prod(a))  # fmt: skip


@rule("argmax", "argmin")
def arg_reduction(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """Each result's row comes over the exchange to the result's tile, where a worker scans it (first of ties,
    as JAX)."""
    name = eqn.primitive.name
    view, kept = _rows(ins[0], tuple(eqn.params["axes"]))
    rows, length = view.shape
    index_dtype = np.dtype(eqn.params["index_dtype"]).name
    out = b.new((rows,), index_dtype, name)
    staged = b.graph.add_variable((length, rows), view.dtype.name, f"{name}/staged")
    staged.var.tile[:] = np.tile(out.tiles(), length)
    b.steps.append(Copy(view.T, staged, name=f"{name}/exchange"))
    b.per_worker(name, _arg_codelet(name, index_dtype), out, out=out, a=staged)
    return [out.reshape(kept)]


# ----------------------------------------------------------------------------------------------------- matmul
@rule("dot_general", check=_dot_check)
def dot_general(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """[batch, m, k] x [batch, k, n] views of the operands; each batch element's product through ops.matmul
    (poplin's default float32 partials) on its own share of the tiles, all side by side in one program (as poplin's
    grouped matmul); the products' results gathered into one tensor by on-tile copies."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = ins
    lfree = [d for d in range(len(lhs.shape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rhs.shape)) if d not in rc and d not in rb]
    size = lambda t, dims: math.prod(t.shape[d] for d in dims)
    nb, m, k, n = size(lhs, lb), size(lhs, lfree), size(lhs, lc), size(rhs, rfree)
    a = lhs.transpose(*lb, *lfree, *lc).reshape(nb, m, k)
    c_ = rhs.transpose(*rb, *rc, *rfree).reshape(nb, k, n)
    aval = eqn.outvars[0].aval
    out_dtype = np.dtype(aval.dtype).name
    # side by side on disjoint tiles, as poplin's grouped matmul: as many products a round as there are tiles
    results: list[Tensor] = []
    tiles = b.graph.num_tiles
    for start in range(0, nb, tiles):
        group = range(start, min(start + tiles, nb))
        per = tiles // len(group)
        programs: list[Program] = []
        for j, i in enumerate(group):
            prog, c, _ = ops.matmul(b.graph, a[i], c_[i], out_dtype=out_dtype, name="dot_general",
                                    tiles=range(j * per, (j + 1) * per))  # fmt: skip
            programs.append(prog)
            results.append(c)
        try:
            b.steps.append(side_by_side(b.graph, programs, name="dot_general"))
        except GraphError:  # plans of different structure (e.g. a reduction mapped otherwise): one after another
            b.steps.extend(programs)
    if nb == 1:
        return [results[0].reshape(tuple(aval.shape))]
    out = b.graph.add_variable((nb, m, n), out_dtype, "dot_general/out")
    out.var.tile[:] = np.concatenate([c.tiles().reshape(-1) for c in results])
    b.steps.append(Copy(results, [out[i] for i in range(nb)], name="dot_general/gather"))
    return [out.reshape(tuple(aval.shape))]

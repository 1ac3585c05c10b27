"""Elements a decode-step kernel reads, counted from its traced program rather than from a formula.

`elements_read(fn, *args)` traces `fn` (jax.make_jaxpr) and follows every argument through the program: a gather,
slice or dynamic slice of an argument reads the elements it returns; any other operation on it (a matmul, a
reduction, an elementwise op) reads the whole argument, once however many such operations there are, and such a full
read covers the gathers from the same array; reshapes, transposes and casts are views and read nothing themselves.
Inside a `scan` (a `fori_loop` of static length) the body's reads count once per iteration; a `while` loop of
unknown trip count is refused. A `jax.lax.platform_dependent` choice (a kernel with a form for one platform, a CPU
loop say) counts once, its branches required to read the same. So a kernel that claims to read S r elements of K but
reduces over the whole of V for its mean is caught: the count follows what the program does, not what it was meant
to do.

`elements_moved(fn, *args)`: what it reads from all its arguments plus what it writes (its outputs), the count a
decode method's `counted_transfer` (core.nn.decode_methods) and papers.sparq's timed kernels report.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

import jax
from jax.extend import core as jcore

VIEWS = frozenset({"reshape", "squeeze", "expand_dims", "transpose", "convert_element_type", "copy", "copy_p"})
PARTIAL = frozenset({"gather", "slice", "dynamic_slice"})
CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")  # the params under which call-like primitives keep their body


def _size(var) -> int:
    return math.prod(var.aval.shape)


def _inner(eqn):
    for name in CALLS:
        body = eqn.params.get(name)
        if body is not None:
            return body.jaxpr if hasattr(body, "jaxpr") else body
    return None


def _walk(jaxpr, tracked: dict, times: int, partial: dict[int, int], full: set[int]) -> None:
    for eqn in jaxpr.eqns:
        hits = [(i, tracked[v]) for i, v in enumerate(eqn.invars) if isinstance(v, jcore.Var) and v in tracked]
        if not hits:
            continue
        name = eqn.primitive.name
        if name in VIEWS:
            tracked[eqn.outvars[0]] = hits[0][1]
        elif name in PARTIAL and [i for i, _ in hits] == [0]:
            partial[hits[0][1]] += times * sum(_size(v) for v in eqn.outvars)
        elif name == "scan":
            body, consts, carries = eqn.params["jaxpr"].jaxpr, eqn.params["num_consts"], eqn.params["num_carry"]
            inner = {}
            for i, source in hits:
                if consts <= i < consts + carries:
                    raise ValueError(f"elements_read: argument {source} is a loop carry; cannot count its reads")
                inner[body.invars[i]] = source
            _walk(body, inner, times * int(eqn.params["length"]), partial, full)
        elif name == "cond" and eqn.params.get("branches_platforms") is not None:
            _platform_reads(eqn, hits, times, partial, full)
        elif name == "while":
            raise ValueError("elements_read: a while loop has no static trip count; use a fori_loop of fixed length")
        elif (body := _inner(eqn)) is not None:
            _walk(body, {body.invars[i]: source for i, source in hits}, times, partial, full)
        else:
            full.update(source for _, source in hits)


def _platform_reads(eqn, hits, times: int, partial: dict[int, int], full: set[int]) -> None:
    """A `jax.lax.platform_dependent` choice: one computation in a form per platform, so every branch must read the
    same elements (refused otherwise: the count would depend on where the kernel runs); they are counted once."""
    counts = []
    for branch in eqn.params["branches"]:
        body = branch.jaxpr
        p: dict[int, int] = defaultdict(int)
        f: set[int] = set()
        _walk(body, {body.invars[i - 1]: source for i, source in hits if i > 0}, times, p, f)  # operand 0: the index
        counts.append(({k: v for k, v in p.items() if k not in f}, f))
    if any(c != counts[0] for c in counts[1:]):
        raise ValueError(f"elements_read: the branches of a platform_dependent read differently: {counts}")
    for source, n in counts[0][0].items():
        partial[source] += n
    full.update(counts[0][1])


def elements_read(fn: Callable, *args) -> list[int]:
    """For each argument of `fn(*args)`, the elements the traced program reads from it (see the module docstring)."""
    closed = jax.make_jaxpr(fn)(*args)
    partial: dict[int, int] = defaultdict(int)
    full: set[int] = set()
    _walk(closed.jaxpr, {v: i for i, v in enumerate(closed.jaxpr.invars)}, 1, partial, full)
    return [_size(v) if i in full else partial[i] for i, v in enumerate(closed.jaxpr.invars)]


def elements(tree) -> int:
    """The elements of a pytree of arrays or shapes (jax.ShapeDtypeStruct): a model's parameter count, or a
    program's outputs."""
    return sum(math.prod(x.shape) for x in jax.tree.leaves(tree))


def elements_written(fn: Callable, *args) -> int:
    """The elements of `fn(*args)`'s outputs."""
    return elements(jax.eval_shape(fn, *args))


def elements_moved(fn: Callable, *args) -> int:
    """The elements `fn(*args)` reads from all its arguments plus the elements of its outputs."""
    return sum(elements_read(fn, *args)) + elements_written(fn, *args)

"""Typed PRNG keys and random bits: what a step's dropout or stochastic rounding needs.

A key array of shape S (JAX's `key<fry>`, threefry-2x32) is held as its key data, a uint32 tensor of shape S + (2,).
Its structural primitives (slice, squeeze, reshape, broadcast, transpose, ...) are views of that data: the index
map is JAX's own, the primitive applied to an array of positions. Deriving keys (random_seed, random_fold_in,
random_split) is one vertex on the tile of the first operand applying the primitive itself, so key values equal
JAX's; it is charged KEY_THREAD_CYCLES a key (an assumption: threefry-2x32's 20 rounds of add, rotate and xor on two
words in software). random_wrap and random_unwrap are views.

**random_bits draws from the IPU's own generator**, not JAX's threefry: on an IPU, random numbers come from each
worker's hardware xoroshiro128aox (the PRNG paper's), as poprand draws them, and a JAX program lowered there would
use it. So the lowered function's random bits are the simulated hardware's (the engine's per-worker streams,
seeded as the IPU seeds them) and differ from JAX's by design; everything computed from them follows exactly. The
vertex is poprand's Uniform on integers with scale 0 (raw bits), one supervisor vertex per tile over the tile's share
of the output, charged poprand's estimate (`lib/poprand/poprandCycleEstimators.cpp`, Uniform for INT with scale 0:
4 + 22 x workers + one cycle per 64 bits stored).
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model.graph import Codelet, Tensor
from ipu_model.lowering.builder import KEY_VIEW, KEY_WORDS, Builder, data_shape, is_key, rule
from ipu_model.ops import tile_ranges
from ipu_model.programs import Copy, Execute

KEY_THREAD_CYCLES = 120  # assumption: one threefry-2x32 key derivation in software, thread cycles
KEY_IMPL = "key<fry>"  # the key type lowered (JAX's default, threefry-2x32); others are refused by name


def key_problem(eqn) -> str | None:
    """Why an equation on keys cannot be lowered (a key type other than threefry's); None if it can."""
    for v in [*eqn.invars, *eqn.outvars]:
        aval = getattr(v, "aval", None)
        if is_key(aval) and str(aval.dtype) != KEY_IMPL:
            return f"{eqn.primitive.name} on {aval.dtype} keys (only {KEY_IMPL}, JAX's default threefry-2x32)"
    return None


def key_view(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """A structural primitive on one key array: the same primitive applied to the positions of its keys gives which
    key each result element is; the result is that view of the key data (free)."""
    import jax.numpy as jnp

    src = ins[0]
    keys = src.reshape((-1, KEY_WORDS))
    shape = tuple(eqn.invars[0].aval.shape)
    positions = np.asarray(eqn.primitive.bind(jnp.arange(math.prod(shape), dtype=jnp.int32).reshape(shape),
                                              **eqn.params))  # fmt: skip
    return [Tensor(keys.var, keys.idx[positions])]


KEY_VIEW.append(key_view)


def _derive_codelet(b: Builder, eqn, arity: int) -> Codelet:
    """A codelet applying a key-deriving primitive to whole operands (key data in, key data out)."""
    prim, params = eqn.primitive, dict(eqn.params)
    key_in = [is_key(v.aval) for v in eqn.invars]
    shapes_in = [tuple(v.aval.shape) for v in eqn.invars]
    out_shape = tuple(eqn.outvars[0].aval.shape)
    cache = ("key", prim.name, repr(sorted(params.items(), key=lambda kv: kv[0])), tuple(shapes_in))
    if cache not in b.codelets:
        names = tuple(f"x{i}" for i in range(arity))

        def fn(**fields):  # one vertex: the whole primitive (key data wrapped as JAX's keys, the result unwrapped)
            import jax

            args = []
            for n, k, s in zip(names, key_in, shapes_in, strict=True):
                x = fields[n].reshape((*s, KEY_WORDS) if k else s)
                args.append(jax.random.wrap_key_data(x) if k else x)
            out = jax.random.key_data(prim.bind(*args, **params))
            return {"out": out.reshape(-1)}

        keys = max(math.prod(out_shape), 1)
        b.codelets[cache] = Codelet(
            prim.name,
            fn,
            inputs=names,
            outputs=("out",),
            flops=lambda **shapes: 0.0,
            cycles=lambda device, **shapes: float(device.workers * KEY_THREAD_CYCLES * keys),
            vectorised=False,
        )
    return b.codelets[cache]


@rule("random_seed", "random_fold_in", "random_split", check=key_problem)
def derive(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """One vertex on the first operand's first tile computing the derived keys (operands brought there first)."""
    tile = int(ins[0].tiles().reshape(-1)[0]) if ins[0].size else 0
    local, copies = [], []
    for i, t in enumerate(ins):
        flat = t.flatten()
        if flat.size and np.all(flat.tiles() == tile):
            local.append(flat)
            continue
        buf = b.graph.add_variable((max(flat.size, 1),), t.dtype.name, f"{eqn.primitive.name}/in{i}")
        b.graph.set_tile_mapping(buf, tile)
        copies.append((flat, buf[: flat.size]))
        local.append(buf[: flat.size])
    if copies:
        b.steps.append(Copy([s for s, _ in copies], [d for _, d in copies], name=f"{eqn.primitive.name}/exchange"))
    out = b.graph.add_variable(data_shape(eqn.outvars[0].aval), "uint32", eqn.primitive.name)
    b.graph.set_tile_mapping(out, tile)
    cs = b.graph.add_compute_set(eqn.primitive.name)
    b.graph.add_vertex(cs, _derive_codelet(b, eqn, len(ins)), tile, out=out.flatten(),
                       **{f"x{i}": t for i, t in enumerate(local)})  # fmt: skip
    b.steps.append(Execute(cs))
    return [out]


@rule("random_wrap", "random_unwrap", check=key_problem)
def wrap(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """Key data as keys, or keys as their data: the same tensor."""
    return [ins[0]]


def _bits_codelet(b: Builder, dtype: np.dtype) -> Codelet:
    cache = ("random_bits", dtype.name)
    if cache not in b.codelets:

        def fn(rng, shapes):  # each vertex's share from its worker's hardware stream (64 bits an output)
            n = math.prod(shapes["out"])
            words = -(-n * dtype.itemsize // 8)
            raw = rng(words)  # [vertices, words] uint64
            return {"out": raw.view(np.uint8).reshape(raw.shape[0], -1)[:, : n * dtype.itemsize].view(dtype)}

        def cycles(device, **shapes):  # poprand's Uniform (INT, scale 0): a supervisor vertex (the whole tile)
            nbytes = math.prod(shapes["out"]) * dtype.itemsize
            return float(4 + 22 * device.workers + math.ceil(nbytes / 8))

        b.codelets[cache] = Codelet(
            "random_bits", fn, outputs=("out",), flops=lambda **shapes: 0.0, cycles=cycles, random=True
        )
    return b.codelets[cache]


@rule("random_bits", check=key_problem)
def random_bits(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """The IPU's hardware generator's bits (not JAX's threefry: the module's docstring), mapped by default, one
    vertex a tile."""
    aval = eqn.outvars[0].aval
    out = b.new(tuple(aval.shape), aval.dtype, "random_bits")
    if out.size == 0:
        return [out]
    flat = out.flatten()
    cs = b.graph.add_compute_set("random_bits")
    code = _bits_codelet(b, np.dtype(aval.dtype))
    for tile, positions in tile_ranges(flat).items():
        b.graph.add_vertex(cs, code, tile, out=flat[positions])
    b.steps.append(Execute(cs))
    return [out]

"""top_k on the simulated IPU as poplibs builds it: a bitonic network (`lib/popops/BitonicTopK.cpp`, `topKImpl`).

Every row's keys (cast to float32, as poplibs casts half keys) and their indices are padded to n' = 2^ceil(log2 n)
with -inf, then:
- sort: runs of 2, 4, ..., k' = 2^ceil(log2 k) are sorted, alternating descending and ascending, by passes of
  compare-and-swap at halving distances;
- merge: while a row holds more than k' active elements, each pair of runs (one descending, one ascending) keeps its
  k' larger elements (a bitonic sequence; the active count halves), which are sorted again;
- the first k of each row, descending, are the values (cast back) and the indices.
Order: a larger key first, and of equal keys the lower index, so values and indices equal `jax.lax.top_k`'s.

Every pass is one exchange that brings each compared pair onto one tile (poplibs' `rearrangeForStep`) and one compute
set of compare-and-swap vertices, charged with poplibs' estimate for `CompareAndSwapAtDistanceKeyVal` with the index
as a secondary key (`popopsCycleEstimators.cpp`, `CompareAndSwapKeyValueCycleEstimate`: per worker 45 + 30 per region
+ 25 per comparison + 6 + 24 per further outer loop; the tile's time 19 + 6 x the busiest worker's). Each vertex takes
a contiguous share of its tile's pairs (one region), so `outerLoops` = ceil(pairs / distance).
"""

from __future__ import annotations

import math

import numpy as np

from ipu_model.graph import Codelet, Tensor
from ipu_model.lowering.builder import Builder, rule
from ipu_model.lowering.costs import vertex_cycles
from ipu_model.programs import Copy

_THREAD = {"overhead": 45, "item": 30, "inner": 25, "first_outer": 6, "outer": 24}  # keys + index as secondary key


def _swap_cycles(device, pairs: int, distance: int) -> float:
    """One compare-and-swap vertex over `pairs` pairs at `distance`: its worker's thread cycles times the workers
    (the supervisor's 19 cycles are the tile's, once: charged on each vertex's share as 19 / workers)."""
    outer = math.ceil(pairs / max(distance, 1))
    thread = (_THREAD["overhead"] + _THREAD["item"] + _THREAD["inner"] * pairs + _THREAD["first_outer"]
              + _THREAD["outer"] * max(outer - 1, 0))  # fmt: skip
    return device.workers * thread + 19 / device.workers


def _greater(ka, ia, kb, ib):
    """(ka, ia) comes before (kb, ib) in descending order: a larger key, or an equal key and a lower index."""
    return (ka > kb) | ((ka == kb) & (ia < ib))


def _swap_fn(a_key, a_idx, b_key, b_idx, down):
    """Order each pair: where `down`, the greater first; else the lesser first."""
    first = _greater(a_key, a_idx, b_key, b_idx) == down
    return {
        "out_a_key": np.where(first, a_key, b_key),
        "out_a_idx": np.where(first, a_idx, b_idx),
        "out_b_key": np.where(first, b_key, a_key),
        "out_b_idx": np.where(first, b_idx, a_idx),
    }


def _keep_fn(a_key, a_idx, b_key, b_idx):
    """Of each pair keep the greater (the kept half is sorted afterwards, so no pair has an order)."""
    first = _greater(a_key, a_idx, b_key, b_idx)
    return {"out_key": np.where(first, a_key, b_key), "out_idx": np.where(first, a_idx, b_idx)}


def _codelet(kind: str, distance: int) -> Codelet:
    pairs = ("a_key", "a_idx", "b_key", "b_idx")
    cycles = lambda device, **s: _swap_cycles(device, math.prod(s["a_key"]), distance)
    if kind == "swap":
        return Codelet(f"compare_and_swap_{distance}", _swap_fn, (*pairs, "down"),
                       ("out_a_key", "out_a_idx", "out_b_key", "out_b_idx"), cycles=cycles)  # fmt: skip
    return Codelet(f"merge_keep_{distance}", _keep_fn, pairs, ("out_key", "out_idx"), cycles=cycles)


class _Network:
    """The keys and indices of every row, [rows, active], and the passes that order them."""

    def __init__(self, b: Builder, key: Tensor, idx: Tensor):
        self.b, self.key, self.idx = b, key, idx
        self.step = 0

    def _pass(self, kind: str, distance: int, name: str, down: np.ndarray | None = None) -> None:
        """One pass over pairs (i, i + distance) within blocks of 2 x distance of each row: 'swap' orders each pair
        as `down[row, pair]` says (the greater first where true); 'keep' halves the row, every pair keeping its
        greater element."""
        b, g = self.b, self.b.graph
        rows, n = self.key.shape
        blocks = n // (2 * distance)
        pos = (np.arange(blocks)[:, None] * 2 * distance + np.arange(distance)[None, :]).reshape(-1)  # pair's first
        lo = (np.arange(rows)[:, None] * n + pos[None, :]).reshape(-1)  # flat positions in [rows, n]
        hi = lo + distance
        pairs = lo.size
        # the exchange: each pair onto one tile (pairs spread linearly over the tiles), keys and indices together
        tiles = np.minimum(np.arange(pairs) // -(-pairs // g.num_tiles), g.num_tiles - 1)
        staged = {}
        for what, t in (("key", self.key), ("idx", self.idx)):
            var = g.add_variable((2, pairs), t.dtype.name, f"top_k/{name}{self.step}/{what}")
            var.var.tile[:] = np.concatenate([tiles, tiles])
            staged[what] = var
        flat_key, flat_idx = self.key.flatten(), self.idx.flatten()
        b.steps.append(Copy([flat_key[lo], flat_key[hi], flat_idx[lo], flat_idx[hi]],
                            [staged["key"][0], staged["key"][1], staged["idx"][0], staged["idx"][1]],
                            name=f"top_k/{name}{self.step}/rearrange"))  # fmt: skip
        fields = {"a_key": staged["key"][0], "a_idx": staged["idx"][0], "b_key": staged["key"][1],
                  "b_idx": staged["idx"][1]}  # fmt: skip
        shape = (2, pairs) if kind == "swap" else (pairs,)
        out_key = g.add_variable(shape, self.key.dtype.name, f"top_k/{name}{self.step}/out_key")
        out_idx = g.add_variable(shape, self.idx.dtype.name, f"top_k/{name}{self.step}/out_idx")
        out_key.var.tile[:] = np.tile(tiles, len(shape))
        out_idx.var.tile[:] = out_key.var.tile
        if kind == "swap":
            orient = b.constant(down.reshape(-1).astype(np.bool_), f"top_k/{name}{self.step}/order")
            orient.var.tile[:] = tiles
            fields.update(down=orient, out_a_key=out_key[0], out_a_idx=out_idx[0], out_b_key=out_key[1],
                          out_b_idx=out_idx[1])  # fmt: skip
        else:
            fields.update(out_key=out_key, out_idx=out_idx)
        b.per_worker(f"top_k/{name}{self.step}", _codelet(kind, distance), staged["key"][0], **fields)
        self.step += 1
        if kind == "swap":  # the ordered pairs, viewed back in row order
            inverse = np.empty(2 * pairs, np.int64)
            inverse[np.concatenate([lo, hi])] = np.arange(2 * pairs)
            self.key = Tensor(out_key.var, inverse.reshape(rows, n))
            self.idx = Tensor(out_idx.var, inverse.reshape(rows, n))
        else:  # each block of 2 x distance keeps `distance`: the kept halves in row order
            self.key = out_key.reshape(rows, n // 2)
            self.idx = out_idx.reshape(rows, n // 2)

    def sort_runs(self, run: int, descending_last: bool) -> None:
        """Sort each row's runs of `run` (bitonic sequences) by passes at run/2, run/4, ..., 1: runs alternate
        descending and ascending, the row's last merge descending where `descending_last`."""
        rows, n = self.key.shape
        d = run // 2
        while d >= 1:
            blocks = n // (2 * d)
            block_start = np.arange(blocks) * 2 * d
            run_index = block_start // run
            down = (run_index % 2 == 0) if not descending_last else np.ones(blocks, bool)
            down = np.broadcast_to(np.repeat(down, d)[None, :], (rows, blocks * d))
            self._pass("swap", d, "sort", down)
            d //= 2


def _cast(b: Builder, src: Tensor, dtype, name: str) -> Tensor:
    """`src` cast to `dtype` where it lives: one vertex per worker's share of each tile (poplibs' cast estimate,
    costs.py)."""
    out = b.new(src.shape, dtype, name, like_t=src)
    target, source = np.dtype(dtype), src.dtype.name
    cycles = lambda device, a, out: vertex_cycles(device, "convert_element_type", {}, source, target.name,
                                                  math.prod(a), 1)  # fmt: skip
    code = Codelet(f"cast_{target.name}", lambda a: {"out": a.astype(target)}, ("a",), ("out",), cycles=cycles)
    b.per_worker(name, code, out.flatten(), out=out.flatten(), a=src.flatten())
    return out


def _float_keys(eqn) -> str | None:
    dtype = np.dtype(eqn.invars[0].aval.dtype).name
    if dtype not in ("float16", "float32"):
        return f"top_k of {dtype} (poplibs' bitonic top-k is lowered for float16 and float32 keys)"
    if eqn.params.get("axis", len(eqn.invars[0].aval.shape) - 1) != len(eqn.invars[0].aval.shape) - 1:
        return "top_k over an axis other than the last"
    return None


@rule("top_k", check=_float_keys)
def top_k(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    (x,) = ins
    k = int(eqn.params["k"])
    lead, n = x.shape[:-1], x.shape[-1]
    rows = math.prod(lead)
    width = 1 << max(math.ceil(math.log2(max(n, 1))), 0)
    kk = min(1 << max(math.ceil(math.log2(max(k, 1))), 0), width)
    g = b.graph
    # the keys in float32 (half keys cast where they live, as poplibs casts them) and the indices, padded with -inf
    # to a power of two
    x2 = x.reshape(rows, n)
    keys_in = x2 if x.dtype == np.float32 else _cast(b, x2, np.float32, "top_k/keys_f32")
    key = g.add_variable((rows, width), "float32", "top_k/keys")
    idx = b.constant(np.broadcast_to(np.arange(width, dtype=np.int32), (rows, width)).copy(), "top_k/index")
    b.map_default(key)
    copies = [(keys_in, key[:, :n])]
    if width > n:
        copies.append((b.constant(np.full((rows, width - n), -np.inf, np.float32), "top_k/pad"), key[:, n:]))
    b.steps.append(Copy([s for s, _ in copies], [d for _, d in copies], name="top_k/keys"))
    net = _Network(b, key, idx)
    run = 2  # sort runs of 2 .. kk, alternating directions (the first run of each pair descending)
    while run <= kk:
        net.sort_runs(run, descending_last=(run == net.key.shape[1]))
        run *= 2
    while net.key.shape[1] > kk:  # merge: each pair of runs keeps its larger half, which is sorted again
        net._pass("keep", kk, "merge")
        if kk > 1:
            net.sort_runs(kk, descending_last=(net.key.shape[1] == kk))
    out_dtype = np.dtype(eqn.outvars[0].aval.dtype)
    values = _cast(b, net.key[:, :k], out_dtype, "top_k/values") if out_dtype != np.float32 else net.key[:, :k]
    return [values.reshape((*lead, k)), net.idx[:, :k].reshape((*lead, k))]

"""Loops of a static trip count: `jax.lax.scan` (and the `fori_loop` that lowers to one) unrolled into the program.

A scan of `length` iterations becomes its body lowered `length` times in sequence (Poplar's `Repeat` would keep one
copy of the body's code and vertices; unrolled, the program holds `length` copies: the same cycles, more vertex state
and exchange code, so a long scan may not fit where Poplar's loop would), each iteration reading the row of every
scanned operand it consumes (a view: free) and the carry the last one left; each output stacked over the iterations
is joined from the iterations' rows by on-tile copies (rules.join). Values equal JAX's: the body's rules are the same
as outside a loop. A scan longer than MAX_UNROLL iterations is refused by name (lowering it unrolled would take the
host minutes per thousand iterations).
"""

from __future__ import annotations

import numpy as np

from ipu_model.graph import Tensor
from ipu_model.lowering.builder import Builder, rule
from ipu_model.lowering.rules import join

MAX_UNROLL = 1024  # iterations of a scan the lowering unrolls


def _scan_check(eqn) -> str | None:
    n = int(eqn.params["length"])
    if n > MAX_UNROLL:
        return f"scan of {n} iterations (the lowering unrolls at most {MAX_UNROLL})"
    return None


@rule("scan", check=_scan_check)
def scan(b: Builder, eqn, ins: list[Tensor]) -> list[Tensor]:
    """The body lowered once per iteration, in order (or reversed), its carry threaded through; stacked outputs
    joined along a new leading axis."""
    p = eqn.params
    body, n = p["jaxpr"], int(p["length"])
    nc, nk = int(p["num_consts"]), int(p["num_carry"])
    consts, carry, xs = ins[:nc], list(ins[nc : nc + nk]), ins[nc + nk :]
    body_consts = [b.constant(np.asarray(c), "const") for c in body.consts]
    rows: dict[int, list[Tensor]] = {}
    for i in reversed(range(n)) if p["reverse"] else range(n):
        outs = b.lower_jaxpr(body.jaxpr, body_consts, [*consts, *carry, *(x[i] for x in xs)], lent=True)
        carry, rows[i] = list(outs[:nk]), list(outs[nk:])
    stacked = []
    for j, v in enumerate(eqn.outvars[nk:]):
        if n == 0:
            stacked.append(b.new(tuple(v.aval.shape), v.aval.dtype, "scan/empty"))
        else:
            stacked.append(join(b, [rows[i][j] for i in range(n)], 0, "scan/stack", new_axis=True))
    return [*carry, *stacked]

"""xoroshiro128aox / xoroshiro128+ in JAX, usable inside jit without 64-bit mode.

A 64-bit word is a pair (hi, lo) of uint32 arrays; a state is ((s0_hi, s0_lo), (s1_hi, s1_lo)). The stream is
bit-for-bit the one of core.random.xoroshiro (tested against it).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core.random.xoroshiro import OUTPUTS, A, B, C, as_state

Word = tuple[jax.Array, jax.Array]  # (hi, lo) uint32
State = tuple[Word, Word]


def split_words(x: np.ndarray) -> Word:
    """uint64 numpy array -> (hi, lo) uint32 arrays."""
    x = np.asarray(x, np.uint64)
    return jnp.asarray((x >> np.uint64(32)).astype(np.uint32)), jnp.asarray(
        (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    )


def join_words(word: Word) -> np.ndarray:
    hi, lo = (np.asarray(w).astype(np.uint64) for w in word)
    return (hi << np.uint64(32)) | lo


def to_jax_state(s0, s1) -> State:
    s0, s1 = as_state(s0, s1)
    return split_words(s0), split_words(s1)


def _xor(a: Word, b: Word) -> Word:
    return a[0] ^ b[0], a[1] ^ b[1]


def _and(a: Word, b: Word) -> Word:
    return a[0] & b[0], a[1] & b[1]


def _or(a: Word, b: Word) -> Word:
    return a[0] | b[0], a[1] | b[1]


def _rotl(x: Word, k: int) -> Word:
    hi, lo = x
    if k >= 32:
        hi, lo, k = lo, hi, k - 32
    if k == 0:
        return hi, lo
    k32 = np.uint32(k)
    r32 = np.uint32(32 - k)
    return (hi << k32) | (lo >> r32), (lo << k32) | (hi >> r32)


def _shl(x: Word, k: int) -> Word:
    hi, lo = x
    k32, r32 = np.uint32(k), np.uint32(32 - k)
    return (hi << k32) | (lo >> r32), lo << k32


def _add(a: Word, b: Word) -> Word:
    lo = a[1] + b[1]
    carry = (lo < a[1]).astype(jnp.uint32)
    return a[0] + b[0] + carry, lo


def output(state: State, kind: str = "aox") -> Word:
    s0, s1 = state
    if kind == "plus":
        return _add(s0, s1)
    sx, sa = _xor(s0, s1), _and(s0, s1)
    return _xor(sx, _or(_rotl(sa, 1), _rotl(sa, 2)))


def step(state: State) -> State:
    s0, s1 = state
    sx = _xor(s0, s1)
    return _xor(_xor(_rotl(s0, A), sx), _shl(sx, B)), _rotl(sx, C)


@partial(jax.jit, static_argnames=("n", "kind", "steps_major"))
def generate(state: State, n: int, kind: str = "aox", steps_major: bool = False) -> tuple[Word, State]:
    """`n` outputs per stream as (hi, lo) uint32 arrays of shape streams + (n,) (or (n,) + streams with
    `steps_major`, which saves a transpose: the fast layout for bulk generation), and the next state."""
    if kind not in OUTPUTS:
        raise ValueError(f"kind must be one of {', '.join(OUTPUTS)}, got {kind!r}")

    def body(s, _):
        return step(s), output(s, kind)

    final, (hi, lo) = lax.scan(body, state, None, length=n, unroll=min(n, 16) if n else 1)
    if steps_major:
        return (hi, lo), final
    return (jnp.moveaxis(hi, 0, -1), jnp.moveaxis(lo, 0, -1)), final

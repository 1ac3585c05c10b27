"""Streams drawn through jax.random from xoroshiro128aox keys (core.random.jax_prng), for the battery: how JAX code
derives keys (split, fold_in, split of split, the `key, sub = split(key)` chain) and one key's own lanes.

Each construction gives k keys; every key draws n / k values with `jax.random.bits(key, (n / k,), uint64)` (x64 mode
only around the draw, so that all 64 bits of each output are tested; the uint32 values JAX draws without x64 mode
are bits 32..63), and the stream interleaves them: value t of key 0, key 1, ..., key k - 1, then value t + 1. Every
bit plane and every pair of consecutive words the battery looks at then crosses from one key to the next. A table,
not a claim: the paper says nothing about JAX (papers/prng/report.py shows it beside the claims). The constructions
and their labels are papers.prng.paper's CONSTRUCTIONS (the report shows the labels without importing JAX).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from core.random import jax_prng
from papers.prng.paper import CHILDREN, CONSTRUCTIONS


def construction_keys(construction: str, seed: int) -> jax.Array:
    """The keys a construction draws from, derived from jax_prng.key(seed): shape (k,)."""
    key = jax_prng.key(seed)
    if construction == "lanes":
        return key[None]
    if construction == "split-2":
        return jax.random.split(key, 2)
    if construction == "split":
        return jax.random.split(key, CHILDREN)
    if construction == "fold-in":
        return jax.vmap(jax.random.fold_in, (None, 0))(key, jnp.arange(CHILDREN, dtype=jnp.uint32))
    if construction == "split-of-split":
        return jax.vmap(lambda k: jax.random.split(k, 32))(jax.random.split(key, 32)).reshape(-1)
    if construction == "chain":

        def step(key, _):
            key, sub = jax.random.split(key)
            return key, sub

        return jax.lax.scan(step, key, None, length=CHILDREN)[1]
    raise ValueError(f"construction must be one of {', '.join(CONSTRUCTIONS)}, got {construction!r}")


@partial(jax.jit, static_argnums=1)
def _draw(keys: jax.Array, per_key: int) -> jax.Array:
    return jax.vmap(lambda key: jax.random.bits(key, (per_key,), jnp.uint64))(keys)


def interleaved_stream(keys: jax.Array, n: int) -> np.ndarray:
    """n uint64 words: value t of every key in turn (keys [k]), each key drawing ceil(n / k) values."""
    per_key = -(-n // keys.shape[0])
    with jax.enable_x64(True):
        draws = np.asarray(_draw(keys, per_key))  # [key, value]
    return np.ascontiguousarray(draws.T).reshape(-1)[:n]


def construction_stream(construction: str, seed: int, n: int) -> np.ndarray:
    return interleaved_stream(construction_keys(construction, seed), n)

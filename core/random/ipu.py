"""IPU-style seeding and the distributions drawn from the raw 64-bit outputs.

Seeding (poplibs `setSeed`, as described publicly): every worker context of every tile starts from
    s0 = the 64-bit master seed
    s1 = ((seed_modifier ^ 0x55555555) << 32) | (((tile << 4) ^ 0xAAAAAAA0) | worker)
and discards its first 16 outputs. The public description does not say which 32-bit half of s1 holds the
modifier; we put it in the upper half, as written above. Every stream's s1 differs (tile and worker are packed
into distinct bits), so the 1472 x 6 streams of a Mk2 are distinct, though not guaranteed non-overlapping; use
`core.random.jump` for provably disjoint streams.

Distributions (bit recipes, documented so that results can be reproduced elsewhere):
    uniform float32 in [0, 1):  (x >> 40) * 2^-24      (the top 24 bits)
    uniform float64 in [0, 1):  (x >> 11) * 2^-53      (the top 53 bits)
    normal:                      Box-Muller on two float64 uniforms, u1 taken as 1 - u in (0, 1]
    Bernoulli(p):                (x >> 11) < round(p * 2^53)
    stochastic-rounding bits:    x >> 32 (the top 32 bits), for core.numerics.cast_to_format(random_bits=...)
"""

from __future__ import annotations

import numpy as np

from core.random.xoroshiro import MASK64, advance

MK2_TILES, MK2_WORKERS = 1472, 6
DISCARD = 16


def ipu_seed_state(
    seed: int, seed_modifier: int = 0, tiles: int = MK2_TILES, workers: int = MK2_WORKERS
) -> tuple[np.ndarray, np.ndarray]:
    """The generator state of every (tile, worker) after seeding: two uint64 arrays of shape (tiles, workers)."""
    if not isinstance(seed, int | np.integer) or not 0 <= int(seed) <= MASK64:
        raise ValueError(f"seed={seed!r} must be an integer with 0 <= seed < 2^64")
    if not isinstance(seed_modifier, int | np.integer) or not 0 <= int(seed_modifier) < 2**32:
        raise ValueError(f"seed_modifier={seed_modifier!r} must be an integer with 0 <= seed_modifier < 2^32")
    if tiles < 1 or tiles >= 2**28:
        raise ValueError(f"tiles={tiles} must be in [1, 2^28)")
    if not 1 <= workers <= 16:
        raise ValueError(f"workers={workers} must be in [1, 16] (the worker id has 4 bits)")
    tile = np.arange(tiles, dtype=np.uint64)[:, None]
    worker = np.arange(workers, dtype=np.uint64)[None, :]
    high = np.uint64((int(seed_modifier) ^ 0x55555555) << 32)
    low = ((tile << np.uint64(4)) ^ np.uint64(0xAAAAAAA0)) | worker
    s1 = high | low
    s0 = np.full_like(s1, np.uint64(int(seed)))
    return advance(s0, s1, DISCARD)


def uniform_float32(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, np.uint64) >> np.uint64(40)).astype(np.float64) * 2.0**-24).astype(np.float32)


def uniform_float64(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, np.uint64) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def normal(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Standard normal float64 values from two arrays of raw outputs (Box-Muller, cosine branch)."""
    u1 = 1.0 - uniform_float64(x1)  # (0, 1]: log is finite
    u2 = uniform_float64(x2)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def bernoulli(x: np.ndarray, p: float) -> np.ndarray:
    """Booleans that are True with probability p (e.g. a dropout keep-mask with p = 1 - rate)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p={p} must be in [0, 1]")
    threshold = np.uint64(round(p * 2**53))
    return (np.asarray(x, np.uint64) >> np.uint64(11)) < threshold


def rounding_bits(x: np.ndarray) -> np.ndarray:
    """uint32 random bits for stochastic rounding (the top 32 bits of each output)."""
    return (np.asarray(x, np.uint64) >> np.uint64(32)).astype(np.uint32)

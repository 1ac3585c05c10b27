"""The IPU's random number generator: xoroshiro128aox (and xoroshiro128+ for comparison), bit-exact, vectorised
over many streams, in numpy and in JAX; jumps for non-overlapping streams; IPU-style seeding; distributions.

    Xoroshiro128, generate, aox_generate, plus_generate, draw   the generators in numpy, many streams at once
    advance, jump, JUMP_2_64                                     move a stream ahead (non-overlapping streams)
    core.random.jax_xoroshiro   the same streams in JAX, inside jit, without 64-bit mode
    core.random.jax_prng        xoroshiro128aox as a jax.random implementation (typed keys, split, fold_in), passed
                                as an object: jax.random.key(seed, impl=core.random.jax_prng.xoroshiro128aox) (JAX
                                has no public way to register it by name; the module's docstring says why)
    core.random.ipu             IPU-style seeding per worker and the distributions drawn from raw outputs (uniform,
                                normal, Bernoulli, stochastic-rounding bits for core.numerics.cast_to_format)
    python -m core.random       raw output to stdout for external test batteries (dieharder)
"""

from core.random.xoroshiro import (
    JUMP_2_64,
    Xoroshiro128,
    advance,
    aox_generate,
    draw,
    generate,
    jump,
    plus_generate,
)

__all__ = ["JUMP_2_64", "Xoroshiro128", "advance", "aox_generate", "draw", "generate", "jump", "plus_generate"]

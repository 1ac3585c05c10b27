"""The IPU's random number generator: xoroshiro128aox (and xoroshiro128+ for comparison), bit-exact, vectorised
over many streams, in numpy and in JAX; jumps for non-overlapping streams; IPU-style seeding; distributions."""

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

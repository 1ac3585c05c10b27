"""Raw generator output to stdout, for external test batteries (e.g. `dieharder -g 200`):

    python -m core.random --generator aox --seed 1 [--bytes N]

Little-endian 64-bit words of one stream seeded with (s0, s1) = (seed, seed ^ 0x9E3779B97F4A7C15). Without
--bytes it writes until the reader closes the pipe.
"""

from __future__ import annotations

import argparse
import sys

from core.random.xoroshiro import MASK64, OUTPUTS, as_state

GOLDEN = 0x9E3779B97F4A7C15
CHUNK = 1 << 18  # outputs per write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generator", choices=OUTPUTS, default="aox")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bytes", type=int, default=None, help="stop after this many bytes")
    args = parser.parse_args(argv)
    if not 0 <= args.seed <= MASK64:
        parser.error(f"--seed {args.seed} must satisfy 0 <= seed < 2^64")
    if args.bytes is not None and args.bytes < 0:
        parser.error(f"--bytes {args.bytes} must be >= 0")
    from core.random.jax_xoroshiro import generate, join_words, to_jax_state  # jitted: tens of M outputs/s

    s0, s1 = as_state(args.seed, args.seed ^ GOLDEN)
    state = to_jax_state(s0.reshape(1), s1.reshape(1))
    out = sys.stdout.buffer
    remaining = args.bytes
    try:
        while remaining is None or remaining > 0:
            words, state = generate(state, CHUNK, args.generator)
            data = join_words(words)[0].astype("<u8").tobytes()
            if remaining is not None:
                data = data[:remaining]
                remaining -= len(data)
            out.write(data)
        out.flush()
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Raw generator output to stdout, for external test batteries (e.g. `dieharder -g 200`):

    python -m core.random --generator aox --seed 1 [--bytes N]

Little-endian 64-bit words of one stream seeded with (s0, s1) = (seed, seed ^ 0x9E3779B97F4A7C15). Without
--bytes it writes until the reader closes the pipe.
"""

from __future__ import annotations

import argparse
import sys

from core.random.xoroshiro import MASK64, OUTPUTS, as_state
from core.random.xoroshiro import _run as run_generator

GOLDEN = 0x9E3779B97F4A7C15
CHUNK = 1 << 16  # outputs per write


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
    s0, s1 = as_state(args.seed, args.seed ^ GOLDEN)
    # many interleaved words would need many streams; one stream, generated in chunks, keeps the output the plain
    # sequence of that stream
    out = sys.stdout.buffer
    remaining = args.bytes
    try:
        while remaining is None or remaining > 0:
            words, s0, s1 = run_generator(s0, s1, CHUNK, args.generator)
            data = words.astype("<u8").tobytes()
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

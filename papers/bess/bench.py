"""Benchmark section "bess": the sharded BESS training step against the plain single-device step (run by
scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("bess")
def bench_bess(size: str) -> list[Comparison]:
    """BESS training throughput (DistMult, width 64, 1024 triples and 64 negatives each per step, AdamW) on a synthetic
    100k-entity graph: the sharded step on 2 and 4 simulated devices against the plain single-device step (one dense
    table, no shard_map), in a process of its own with 4 simulated CPU devices; seconds per triple, with the bytes
    BESS moves per step against all-gathering the table."""
    import json
    import os
    import subprocess
    import sys

    entities, steps = by_size(size, tiny=(1_000, 1), quick=(10_000, 5), full=(100_000, 30))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    cmd = [sys.executable, "-m", "papers.bess.scaling", "--devices", "1", "2", "4"]
    cmd += ["--entities", str(entities), "--steps", str(steps)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    peer = 1 / out["single_device_triples_per_second"]
    rows = []
    for row in out["rows"]:
        if row["devices"] == 1:
            continue
        rows.append(
            Comparison(
                "bess",
                f"BESS DistMult training step, {entities:,} entities, per triple",
                f"BESS on {row['devices']} simulated devices ({row['triples_per_second']:.0f} triples/s)",
                f"single device, dense table ({1 / peer:.0f} triples/s)",
                1 / row["triples_per_second"],
                peer,
                f"bytes moved per step {row['bess_bytes_per_step']:,} (BESS) vs {row['all_gather_bytes_per_step']:,} "
                f"(all-gather the table); entity table per device {row['entity_table_bytes_per_device']:,} bytes",
            )
        )
    return rows

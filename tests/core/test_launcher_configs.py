"""configs/hydra/launcher/slurm.yaml composes into Hydra's submitit SLURM launcher, shards and all.

The plugin is part of the dev install (pyproject's [dev] extra), so it is imported, not skipped when absent: a
skipped test would leave the launcher config untested without anyone noticing."""

from __future__ import annotations

from pathlib import Path

import hydra_plugins.hydra_submitit_launcher  # noqa: F401  (a missing plugin fails the test)
from hydra import compose, initialize_config_dir

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def test_slurm_launcher_config_composes_with_shards():
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(
            "config",
            overrides=["paper=prng", "hydra/launcher=slurm", "num_shards=8", "shard=3", "hydra.launcher.partition=cpu"],
            return_hydra_config=True,
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert (launcher.timeout_min, launcher.cpus_per_task, launcher.max_num_timeout) == (240, 2, 3)
    assert launcher.partition == "cpu"
    assert (cfg.shard, cfg.num_shards) == (3, 8)

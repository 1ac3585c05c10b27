"""The Hydra device configs (configs/device/*.yaml) describe the same devices as ipu_model's presets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from core.config import ConfigError
from ipu_model import PRESETS, device_from_config

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose("config", overrides=["paper=prng", *overrides])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_yaml_matches_preset(name):
    cfg = _compose([f"device={name}"])
    assert device_from_config(cfg.device) == PRESETS[name]


def test_default_device_is_mk2_and_overridable():
    cfg = _compose(["device.tiles=46"])
    spec = device_from_config(cfg.device)
    assert spec.name == "mk2" and spec.tiles == 46


def test_bad_device_values_are_named():
    with pytest.raises(ConfigError, match=r"device\.tiles"):
        device_from_config({**_compose([]).device, "tiles": 0})
    with pytest.raises(ConfigError, match=r"device\.cores"):
        device_from_config({**_compose([]).device, "cores": 3})

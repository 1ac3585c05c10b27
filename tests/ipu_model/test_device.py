"""Device presets, derived rates and overrides (the YAML configs are checked in test_device_configs.py)."""

import dataclasses

import pytest

from core.config import ConfigError
from ipu_model import PRESETS, DeviceSpec, Graph, get_device

KIB = 1024

# (tiles, bytes per tile, clock Hz, published peak FP16 FLOP/s) from the Graphcore product briefs
PUBLISHED = {
    "mk2": (1472, 624 * KIB, 1.33e9, 250e12),
    "bow": (1472, 624 * KIB, 1.85e9, 350e12),
    "mk1": (1216, 256 * KIB, 1.6e9, 124.5e12),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_matches_published_figures(name):
    tiles, mem, clock, fp16 = PUBLISHED[name]
    d = get_device(name)
    assert (d.name, d.tiles, d.workers, d.memory_per_tile, d.clock_hz) == (name, tiles, 6, mem, clock)
    assert d.peak_flops("float16") == pytest.approx(fp16, rel=0.02)
    # FP32 is a quarter of FP16 on every generation
    assert d.peak_flops("float32") == pytest.approx(fp16 / 4, rel=0.02)
    assert d.total_memory == tiles * mem


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_conv_units_carry_the_published_flop_rates(name):
    """Each conv unit does 4 half (2 float) multiply-accumulates a cycle, so the same-type unit counts are the FLOP
    rates; float16 inputs with float32 partials (an assumption, see device.py) never have more units than half."""
    d = get_device(name)
    assert d.conv_units_per_tile("float16", "float16") * 4 * 2 == d.tile_flops_per_cycle("float16")
    assert d.conv_units_per_tile("float32", "float32") * 2 * 2 == d.tile_flops_per_cycle("float32")
    assert d.conv_units_per_tile("float16", "float32") <= d.conv_units_per_tile("float16", "float16")
    with pytest.raises(ValueError, match=r"float32\.float16"):
        d.conv_units_per_tile("float32", "float16")


def test_total_memory_in_megabytes():
    assert get_device("mk2").total_memory / 1e6 == pytest.approx(940.6, abs=0.1)  # 897 MiB: the brief's "~900 MB"
    assert get_device("mk1").total_memory / 1e6 == pytest.approx(318.8, abs=0.1)  # 304 MiB: the brief's "304 MB"


def test_integer_and_bool_arithmetic_uses_the_fp32_rate():
    d = get_device("mk2")
    assert d.tile_flops_per_cycle("int32") == d.tile_flops_per_cycle("float32") == 32
    assert d.tile_flops_per_cycle("bool") == 32
    assert d.tile_flops_per_cycle("float16") == 128


def test_unknown_flop_rate_names_the_dtype():
    d = get_device("mk2", flops_per_cycle={"float32": 32})
    with pytest.raises(ValueError, match="float16"):
        d.peak_flops("float16")


def test_derived_rates():
    d = get_device("mk2")
    assert d.host_bytes_per_cycle == pytest.approx(64e9 / 2 / 1.33e9)
    assert d.seconds(1.33e9) == pytest.approx(1.0)


def test_overrides_change_only_the_named_fields():
    d = get_device("bow", tiles=8, memory_per_tile=4096)
    ref = PRESETS["bow"]
    assert (d.tiles, d.memory_per_tile) == (8, 4096)
    for f in dataclasses.fields(DeviceSpec):
        if f.name not in ("tiles", "memory_per_tile"):
            assert getattr(d, f.name) == getattr(ref, f.name), f.name
    assert PRESETS["bow"].tiles == 1472  # the preset itself is untouched


def test_graph_accepts_a_name_a_spec_or_a_tile_count():
    assert Graph("mk1").num_tiles == 1216
    assert Graph(get_device("bow", tiles=3)).device.clock_hz == 1.85e9
    g = Graph(5)
    assert (g.num_tiles, g.device.name, g.device.clock_hz) == (5, "mk2", 1.33e9)


@pytest.mark.parametrize(
    ("name", "overrides", "match"),
    [
        ("mk2", {"tilez": 8}, "tilez"),
        ("mk2", {"tiles": 0}, "tiles"),
        ("mk2", {"tiles": 2**15}, "tiles"),
        ("mk2", {"workers": 0}, "workers"),
        ("mk2", {"workers": 17}, "workers"),
        ("mk2", {"memory_per_tile": 0}, "memory_per_tile"),
        ("mk2", {"exchange_bytes_per_cycle": 0}, "exchange_bytes_per_cycle"),
        ("mk2", {"sync_cycles": -1}, "sync_cycles"),
        ("mk2", {"flops_per_cycle": {"float16": 0}}, "float16"),
        ("mk3", {}, "mk3"),
    ],
)
def test_bad_device_raises_config_error(name, overrides, match):
    with pytest.raises(ConfigError, match=match):
        get_device(name, **overrides)

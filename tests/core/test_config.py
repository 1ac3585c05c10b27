from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf

from core.config import ConfigError, check_choice, check_range, validate_run_config, validate_section


@dataclass
class Toy:
    samples: int = 10
    lr: float = 0.1

    def __post_init__(self):
        check_range("samples", self.samples, gt=0)


BASE = {
    "seed": 0,
    "paper": {"module": "x"},
    "scale": {"name": "smoke"},
    "logger": {"name": "none", "mode": "disabled"},
}


def validate(**changes):
    return validate_run_config(OmegaConf.create({**BASE, **changes}), "toy", Toy)[0]


def test_valid_config_is_returned_typed():
    cfg = validate(toy={"samples": 3, "lr": 1})
    assert cfg.toy.lr == 1.0 and isinstance(cfg.toy.lr, float)  # coerced by the schema
    assert cfg.scale.name == "smoke"  # str enums compare equal to their names
    assert cfg.toy.samples == 3


def test_the_paper_gets_its_dataclass_instance_beside_the_shared_keys():
    typed, run = validate_run_config(OmegaConf.create({**BASE, "seed": 3, "toy": {"samples": 4}}), "toy", Toy)
    assert run.toy == Toy(samples=4, lr=0.1) and isinstance(run.toy, Toy)
    assert run.seed == 3 and run.scale.name == "smoke" and run.paper.module == "x"
    assert typed.toy.samples == 4  # the record keeps the typed DictConfig


def test_schema_defaults_fill_a_missing_section():
    assert validate().toy.samples == 10


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"toy": {"samples": 0}}, r"toy\.samples=0 is out of range: allowed values are > 0"),
        ({"toy": {"samples": "abc"}}, r"invalid value for 'toy\.samples'.*'abc'.*Integer"),
        ({"toy": {"sample": 3}}, r"unknown config key 'toy\.sample': allowed keys here are samples, lr"),
        ({"seed": -1}, r"seed=-1 is out of range: allowed values are >= 0 and < 4294967296"),
        ({"shard": 4, "num_shards": 4}, r"shard=4 is out of range: allowed values are >= 0 and < 4"),
        ({"num_shards": 0}, r"num_shards=0 is out of range: allowed values are >= 1"),
        ({"scale": {"name": "huge"}}, r"'scale\.name'.*'huge'.*smoke, default, full"),
        ({"logger": {"mode": "x"}}, r"'logger\.mode'.*offline, online, disabled"),
        ({"logger": {"modes": "x"}}, r"unknown config key 'logger\.modes': allowed keys here are name, mode"),
        (
            {"numerics": {"name": "fp16"}},
            r"unknown top-level config key\(s\) numerics: allowed are compile_cache, device, logger",
        ),
        (
            {"foo": 1},
            r"unknown top-level config key\(s\) foo: allowed are compile_cache, device, logger, num_shards",
        ),
        ({"paper": {}}, r"paper\.module is empty"),
    ],
)
def test_bad_configs_name_the_key_and_what_is_allowed(changes, message):
    with pytest.raises(ConfigError, match=message):
        validate(**changes)


def test_checks():
    check_range("x", 1.0, ge=1, le=1)
    with pytest.raises(ConfigError, match=r"x=2 is out of range: allowed values are >= 0 and < 2"):
        check_range("x", 2, ge=0, lt=2)
    check_choice("m", "a", ["a", "b"])
    with pytest.raises(ConfigError, match="m='c' is not allowed: choose one of a, b"):
        check_choice("m", "c", ["a", "b"])


def test_validate_section_returns_instance_and_typed_config():
    obj, typed = validate_section({"samples": 5}, Toy, "toy")
    assert obj == Toy(samples=5) and typed.samples == 5
    with pytest.raises(TypeError, match="must be a dataclass"):
        validate_section({}, dict, "toy")

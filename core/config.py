"""Config schemas and validation: every run's config is checked before any work starts.

Types come from dataclass schemas (OmegaConf structured configs); ranges and cross-field rules from the schemas'
`__post_init__`, using the `check_*` helpers so every message names the key, the bad value and what is allowed.
A paper may define `Config` (a dataclass) in its package; the runner validates the paper's config section with it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

T = TypeVar("T")


class ConfigError(ValueError):
    """A config key or value that is not allowed. The message names the key and what is allowed."""


def check_range(
    key: str,
    value: float,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> None:
    """Raise ConfigError unless `value` lies in the given bounds."""
    ok = (
        (ge is None or value >= ge)
        and (gt is None or value > gt)
        and (le is None or value <= le)
        and (lt is None or value < lt)
    )
    if not ok:
        parts = [f">= {ge}" if ge is not None else "", f"> {gt}" if gt is not None else ""]
        parts += [f"<= {le}" if le is not None else "", f"< {lt}" if lt is not None else ""]
        allowed = " and ".join(p for p in parts if p)
        raise ConfigError(f"{key}={value!r} is out of range: allowed values are {allowed}")


def check_choice(key: str, value: Any, choices: Iterable[Any]) -> None:
    choices = list(choices)
    if value not in choices:
        raise ConfigError(f"{key}={value!r} is not allowed: choose one of {', '.join(map(str, choices))}")


def validate_section(section: Any, schema: type[T], key: str = "") -> tuple[T, DictConfig]:
    """Check `section` (a DictConfig or dict) against dataclass `schema`.

    Returns the schema instance and the section as a typed DictConfig (values coerced to the schema's types).
    Unknown keys, wrong types and failed range checks all raise ConfigError naming the full key (`key.<field>`).
    """
    if not dataclasses.is_dataclass(schema):
        raise TypeError(f"schema for {key!r} must be a dataclass, got {schema!r}")
    if section is not None and not isinstance(section, dict | DictConfig):
        allowed = ", ".join(f.name for f in dataclasses.fields(schema))
        raise ConfigError(f"{key or 'the config'}={section!r} is not allowed: it holds the keys {allowed}")
    try:
        typed = OmegaConf.merge(OmegaConf.structured(schema), section if section is not None else {})
        obj = OmegaConf.to_object(typed)
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(f"{key}.{msg}" if key and not msg.startswith(f"{key}.") else msg) from None
    except OmegaConfBaseException as e:
        raise ConfigError(_describe_omegaconf_error(e, schema, key)) from None
    return obj, typed  # type: ignore[return-value]


def _describe_omegaconf_error(e: OmegaConfBaseException, schema: type, key: str) -> str:
    sub = str(getattr(e, "full_key", None) or getattr(e, "key", None) or "")
    full = ".".join(p for p in (key, sub) if p)
    msg = str(e).split("\n")[0]
    if "not in struct" in str(e) or ("Key '" in msg and "not in" in msg):
        allowed = ", ".join(_field_names(schema, sub))
        return f"unknown config key '{full}': allowed keys here are {allowed}"
    return f"invalid value for '{full}': {msg}"


def _field_names(schema: type, dotted: str) -> list[str]:
    """The field names of the (nested) dataclass that holds the last component of `dotted`."""
    cls = schema
    for part in dotted.split(".")[:-1]:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        nested = fields[part].default_factory if part in fields else None
        if not (callable(nested) and dataclasses.is_dataclass(nested)):
            break
        cls = nested
    return [f.name for f in dataclasses.fields(cls)]


# ---------------------------------------------------------------------------------------------- the shared schema


class Scale(enum.StrEnum):
    smoke = "smoke"  # seconds; used by the tests
    default = "default"  # minutes on a 2-core CPU
    full = "full"  # the paper's settings


class LoggerName(enum.StrEnum):
    wandb = "wandb"
    none = "none"


class LoggerMode(enum.StrEnum):
    offline = "offline"
    online = "online"
    disabled = "disabled"


@dataclass
class ScaleConfig:
    name: Scale = Scale.default
    description: str = ""


@dataclass
class LoggerConfig:
    name: LoggerName = LoggerName.wandb
    mode: LoggerMode = LoggerMode.offline
    project: str = "graphcore-repro"
    entity: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class PaperMeta:
    """Who the paper is: filled in by configs/paper/<name>.yaml."""

    module: str = ""
    title: str = ""
    reference: str = ""


# Keys that change where or how a run is recorded but not what it computes: left out of the checkpoint key (core.runner)
# and of what a comparison or a reference calls a change of settings (core.compare, core.record).
RECORD_ONLY_KEYS = ("logger", "output_root", "resume", "compile_cache", "hydra")


@dataclass
class RunConfig:
    """The keys every run has, whatever the paper. Paper sections are validated by the paper's own schema."""

    seed: int = 0
    output_root: str = "outputs"
    resume: bool = True
    # keep XLA's compiled programs in <output_root>/jax_cache (JAX's persistent compilation cache), so a repeated or
    # resumed run loads what an earlier run compiled instead of compiling it again
    compile_cache: bool = True
    # embarrassingly parallel work (dataset generation) is split into num_shards slices; a run computes slice `shard`
    shard: int = 0
    num_shards: int = 1
    paper: PaperMeta = field(default_factory=PaperMeta)
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    # the simulated IPU's spec (configs/device/*.yaml); validated by ipu_model.device_from_config where it is used,
    # since core does not depend on ipu_model
    device: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_range("seed", self.seed, ge=0, lt=2**32)
        check_range("num_shards", self.num_shards, ge=1)
        check_range("shard", self.shard, ge=0, lt=self.num_shards)
        if not self.paper.module:
            raise ConfigError("paper.module is empty: configs/paper/<name>.yaml must name the paper's package")


def run_schema(paper: str, schema: type | None) -> type[RunConfig]:
    """The dataclass of a whole run of `paper`: RunConfig's keys plus the paper's section `<paper>` (its `Config`)."""
    section = (
        (schema, field(default_factory=schema)) if schema is not None else (dict[str, Any], field(default_factory=dict))
    )
    return dataclasses.make_dataclass(f"RunConfig_{paper}", [(paper, *section)], bases=(RunConfig,))


def validate_run_config(cfg: DictConfig, paper_name: str, paper_schema: type | None) -> tuple[DictConfig, RunConfig]:
    """Validate the whole composed config: the typed config (for the run record and the checkpoint key) and the run
    object the paper gets (`run_schema`: `run.seed`, `run.<paper_name>` an instance of the paper's `Config`).

    Shared keys are checked by RunConfig, `cfg[paper_name]` by the paper's schema (if it has one). Top-level keys
    other than these are rejected, so a stray key in a paper's YAML is caught like a typo on the command line.
    """
    shared = [f.name for f in dataclasses.fields(RunConfig)]
    extra = sorted(k for k in cfg if k not in shared and k not in (paper_name, "hydra"))
    if extra:
        allowed = ", ".join(sorted([*shared, paper_name]))
        raise ConfigError(f"unknown top-level config key(s) {', '.join(extra)}: allowed are {allowed}")
    shared_obj, shared_typed = validate_section({k: cfg[k] for k in shared if k in cfg}, RunConfig)
    typed = OmegaConf.create({k: shared_typed[k] for k in shared})
    section = cfg.get(paper_name)
    if paper_schema is not None:
        paper_obj, section = validate_section(section, paper_schema, paper_name)
    else:
        paper_obj = OmegaConf.to_container(section, resolve=True) if section is not None else {}
    if section is not None:
        typed[paper_name] = section
    OmegaConf.set_struct(typed, True)
    values = {f.name: getattr(shared_obj, f.name) for f in dataclasses.fields(RunConfig)}
    return typed, run_schema(paper_name, paper_schema)(**values, **{paper_name: paper_obj})

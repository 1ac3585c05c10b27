"""The command line: `python scripts/reproduce.py paper=<name> [key=value ...] [-m]`.

Before Hydra takes over, a preflight composes the config the way Hydra will (for a sweep, once per swept value)
and validates it, so a missing or unknown paper, an unknown key or a bad value stops the run at once with one
clear line instead of a traceback, and before any work of any sweep job starts.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from core.config import ConfigError
from core.runner import REPO_ROOT, prepare, run

CONFIG_DIR = REPO_ROOT / "configs"

# Hydra flags that do not launch a run (help, info, printing the config) or that change where configs come from:
# the preflight steps aside and lets Hydra handle them.
_NON_RUN_FLAGS = (
    "help",
    "hydra_help",
    "info",
    "cfg",
    "shell_completion",
    "config_path",
    "config_name",
    "config_dir",
    "experimental_rerun",
)

_MAX_PREFLIGHT_COMPOSES = 64
SCHEMA_GROUP = "paper_schema"  # configs/config.yaml composes `optional paper_schema: ${paper}` first


def _group_options(group: str, searchpath: list[str]) -> list[str]:
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    return loader.get_group_options(group, config_name="config", overrides=searchpath)


def available_papers(config_dir: Path = CONFIG_DIR, searchpath: Sequence[str] = ()) -> list[str]:
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return _group_options("paper", list(searchpath))


def _variants(parsed: list) -> list[list[str]]:
    """Override lists to compose: all sweeps at their first value, then each further swept value in turn."""
    base, sweeps = [], []
    for o in parsed:
        if o.is_sweep_override():
            values = list(o.sweep_string_iterator())
            prefix = o.input_line.split("=", 1)[0]
            base.append(f"{prefix}={values[0]}")
            sweeps.append((len(base) - 1, prefix, values[1:]))
        else:
            base.append(o.input_line)
    out = [base]
    for i, prefix, values in sweeps:
        for v in values:
            out.append([*base[:i], f"{prefix}={v}", *base[i + 1 :]])
    return out[:_MAX_PREFLIGHT_COMPOSES]


def _chosen_papers(parsed: list) -> list[str]:
    return [
        str(name)
        for o in parsed
        if o.key_or_group == "paper"
        for name in (o.sweep_string_iterator() if o.is_sweep_override() else [o.value()])
    ]


def register_schemas(overrides: Sequence[str], config_dir: Path = CONFIG_DIR) -> list[str]:
    """Put the `Config` dataclass of every paper the overrides choose into Hydra's ConfigStore (group paper_schema),
    so that composition starts from it: the dataclass holds the defaults (a paper's YAML files hold only what
    differs), and Hydra types every value and override, `--cfg job` and `-m` included. Returns the papers
    registered; a paper that cannot be found is left to the preflight (or Hydra) to report."""
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return []
    searchpath = [o.input_line for o in parsed if o.key_or_group == "hydra.searchpath"]
    registered = []
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        for name in _chosen_papers(parsed):
            try:
                cfg = compose("config", overrides=[f"paper={name}", *searchpath])
                module = importlib.import_module(OmegaConf.select(cfg, "paper.module") or f"papers.{name}")
            except (HydraException, ImportError):
                continue
            schema = getattr(module, "Config", None)
            if dataclasses.is_dataclass(schema):
                ConfigStore.instance().store(group=SCHEMA_GROUP, name=name, node={name: schema}, package="_global_")
                registered.append(name)
    return registered


def load_config(overrides: Sequence[str], config_dir: Path = CONFIG_DIR):
    """The validated config of the run `overrides` describe, as the paper's `reproduce` gets it (`cfg.<paper>` an
    instance of its Config): for notebooks and tests, `load_config(["paper=bess", "scale=smoke"])`."""
    from hydra import compose, initialize_config_dir

    register_schemas(overrides, config_dir)
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
        paper = cfg.hydra.runtime.choices.paper
        plain = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(plain, dict)
    del plain["hydra"]
    return prepare(OmegaConf.create(plain), paper)[2]


def preflight(overrides: Sequence[str], config_dir: Path = CONFIG_DIR) -> None:
    """Raise ConfigError if the run these overrides describe would fail on its config."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return  # a syntax error: Hydra's own message points at the character
    searchpath = [o.input_line for o in parsed if o.key_or_group == "hydra.searchpath"]
    register_schemas(overrides, config_dir)
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        papers = _group_options("paper", searchpath)
        listed = ", ".join(papers) if papers else "(none yet)"
        chosen = _chosen_papers(parsed)
        if not chosen:
            raise ConfigError(f"no paper chosen: pass paper=<name> (make reproduce PAPER=<name>); papers: {listed}")
        for name in chosen:
            if name not in papers:
                raise ConfigError(f"unknown paper {name!r}: choose one of {listed}")
        for variant in _variants(parsed):
            try:
                cfg = compose("config", overrides=variant, return_hydra_config=True)
            except HydraException as e:
                raise ConfigError(_explain(e, variant, searchpath)) from None
            paper = cfg.hydra.runtime.choices.paper
            with_hydra = OmegaConf.to_container(cfg, resolve=False)
            assert isinstance(with_hydra, dict)
            del with_hydra["hydra"]
            prepare(OmegaConf.create(with_hydra), paper)  # imports the paper and validates its config


def _explain(e: Exception, variant: list[str], searchpath: list[str]) -> str:
    """Turn Hydra's composition errors into one line naming the bad key or choice and what is allowed."""
    from hydra import compose

    text = str(e)
    missing = re.search(r"Could not find '([^']+)'", text)
    if missing:
        group, _, option = missing.group(1).rpartition("/")
        if group:
            options = ", ".join(_group_options(group, searchpath)) or "(none)"
            return f"unknown {group} {option!r}: choose one of {options}"
    bad = re.search(r"Could not (?:override|append to|delete from) '([^']+)'", text)
    if bad:
        key = bad.group(1)
        parent, _, leaf = key.rpartition(".")
        others = [v for v in variant if v.split("=", 1)[0].lstrip("+~") != key]
        try:
            cfg = compose("config", overrides=others)
            node = OmegaConf.select(cfg, parent) if parent else cfg
        except Exception:
            node = None
        if isinstance(node, DictConfig) and leaf not in node:
            where = f"under '{parent}'" if parent else "at the top level"
            return f"unknown config key '{key}': allowed keys {where} are {', '.join(map(str, node.keys()))}"
    cause = e.__cause__
    full_key = getattr(cause, "full_key", None)
    if full_key and "Error merging" in text:  # a value the paper's schema cannot take (typed by its dataclass)
        return f"invalid value for '{full_key}': {str(cause).splitlines()[0]}"
    return text.split("\n")[0]


def _task(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    hc = HydraConfig.get()
    try:
        run(cfg, paper=hc.runtime.choices["paper"], run_dir=Path(hc.runtime.output_dir))
    except ConfigError as e:  # only reachable when the preflight was skipped
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: Sequence[str] | None = None) -> int:
    """The entry point of scripts/reproduce.py. Exit status: 0 ran (whatever the claims), 2 bad config."""
    import hydra
    from hydra._internal.utils import get_args_parser

    argv = list(sys.argv[1:] if argv is None else argv)
    args = get_args_parser().parse_args(argv)
    if "JAX_NUM_PROCESSES" in os.environ or "SLURM_NTASKS" in os.environ:
        from core.devices import initialize_distributed

        initialize_distributed()  # a process of a multi-process run joins the others before any JAX work
    register_schemas(args.overrides)
    if not any(getattr(args, flag, None) for flag in _NON_RUN_FLAGS):
        try:
            preflight(args.overrides)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    sys.argv = [sys.argv[0], *argv]
    hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(_task)()
    return 0

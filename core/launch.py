"""The command line: `python scripts/reproduce.py paper=<name> [key=value ...] [-m]`.

Before Hydra takes over, a preflight composes the config the way Hydra will (for a sweep, once per swept value)
and validates it, so a missing or unknown paper, an unknown key or a bad value stops the run at once with one
clear line instead of a traceback, and before any work of any sweep job starts. The preflight reads the command
line with Hydra's public override parser and checks each override itself: a config group's choice against the
group's options before composing; where Hydra then refuses the composition, each key against the config composed
from the group choices alone, and a value the schema cannot take from the OmegaConf error's key. Hydra's error text
is passed on, never parsed. `--cfg job` (and `--info`) is validated the same way before Hydra prints, so it shows
only a config a run would accept; the overrides may come before or after Hydra's flags (Hydra gets them first).

The config is validated once. A plain run's job gets the config the preflight validated (`core.runner.Validated`)
rather than validating Hydra's composition of it again. Hydra still composes it once more inside `hydra.main`, for
what Hydra owns: the run directory, the log file and the `.hydra/` record of config and overrides. Doing those
without `hydra.main` would mean building Hydra's job context from its private modules (`hydra._internal`), which
this module avoids. A sweep's jobs (`-m`, possibly on other machines through the submitit launcher) each validate
the config Hydra composed for them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException, ValidationError

from core.config import ConfigError
from core.paper import find_paper
from core.provenance import REPO_ROOT
from core.runner import Validated, prepare, run
from core.stopping import reports_interrupts

CONFIG_DIR = REPO_ROOT / "configs"
SCHEMA_GROUP = "paper_schema"  # configs/config.yaml composes `optional paper_schema: ${paper}` first

_MAX_PREFLIGHT_COMPOSES = 64

# Hydra's flags (`--hydra-help` lists them). These print something instead of running and need no config: the
# preflight steps aside and leaves the command to Hydra.
_ASIDE_SWITCHES = (("--help", "-h"), ("--hydra-help",), ("--version",), ("--shell-completion", "-sc"))
# These change where the configs come from, which the preflight does not follow: it steps aside too.
_ASIDE_OPTIONS = (
    ("--config-path", "-cp"),
    ("--config-name", "-cn"),
    ("--config-dir", "-cd"),
    ("--experimental-rerun",),
)
_INFO_CHOICES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")


@dataclass(frozen=True)
class CommandLine:
    overrides: list[str]
    multirun: bool  # -m: a sweep, one job per combination of swept values
    runs: bool  # False where a flag prints instead of running (--help, --cfg, --info, ...) or an unknown flag is given
    # --cfg or --info: print the composed config (or Hydra's information about it) instead of running; the preflight
    # validates it first, as it would a run's
    shows: bool = False
    # the command line as Hydra gets it: the overrides first, then the flags, so an override may come after a flag
    # (`--cfg job paper=prng`), which Hydra's own parser refuses; unchanged where Hydra is left to report a bad flag
    hydra_argv: tuple[str, ...] = ()


def parse_command_line(argv: Sequence[str]) -> CommandLine:
    """Split the command line into Hydra's flags and the overrides, in any order. The flags are declared as Hydra
    declares them, so each option's value is told apart from the overrides; an unknown flag or a bad use of one is
    left to Hydra to report (`runs` False, the command line passed on as it is)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--multirun", "-m", action="store_true")
    parser.add_argument("--run", "-r", action="store_true")
    parser.add_argument("--resolve", action="store_true")
    parser.add_argument("--package", "-p")
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    parser.add_argument("--info", "-i", nargs="?", const="all", choices=_INFO_CHOICES)
    for names in _ASIDE_SWITCHES:
        parser.add_argument(*names, action="store_true", dest=_aside(names[0]))
    for names in _ASIDE_OPTIONS:
        parser.add_argument(*names, dest=_aside(names[0]))
    try:
        args, unknown = parser.parse_known_intermixed_args(list(argv))
    except argparse.ArgumentError:
        return CommandLine([], multirun=False, runs=False, hydra_argv=tuple(argv))
    if unknown:
        return CommandLine(list(args.overrides), multirun=args.multirun, runs=False, hydra_argv=tuple(argv))
    aside = any(v not in (None, False) for k, v in vars(args).items() if k.startswith("aside_"))
    shows = args.cfg is not None or args.info is not None
    flags: list[str] = []
    for name, value in vars(args).items():
        if name == "overrides" or value in (None, False):
            continue
        flag = "--" + name.removeprefix("aside_").replace("_", "-")
        flags += [flag] if value is True else [flag, str(value)]
    return CommandLine(
        list(args.overrides),
        multirun=args.multirun,
        runs=not (aside or shows),
        shows=shows and not aside,
        hydra_argv=(*args.overrides, *flags),
    )


def _aside(flag: str) -> str:
    return "aside_" + flag.lstrip("-").replace("-", "_")


def _parse(overrides: Sequence[str]) -> list[Override]:
    """Hydra's parse of the overrides; a syntax error is a ConfigError naming the override, with Hydra's message."""
    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except OverrideParseException as e:
        raise ConfigError(f"cannot parse the override {e.override!r}: {e}") from None


def _searchpath(parsed: list[Override]) -> list[str]:
    return [o.input_line for o in parsed if o.key_or_group == "hydra.searchpath"]


def _group_options(group: str, searchpath: list[str]) -> list[str]:
    """The options of config group `group` (empty where `group` is not one); inside `initialize_config_dir`."""
    loader = GlobalHydra.instance().config_loader()
    return loader.get_group_options(group, config_name="config", overrides=searchpath)


def _variants(parsed: list[Override]) -> list[list[str]]:
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


def _chosen_papers(parsed: list[Override]) -> list[str]:
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
    try:
        parsed = _parse(overrides)
    except ConfigError:
        return []
    searchpath = _searchpath(parsed)
    registered = []
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        for name in _chosen_papers(parsed):
            try:
                cfg = compose("config", overrides=[f"paper={name}", *searchpath])
                schema = find_paper(OmegaConf.select(cfg, "paper.module") or f"papers.{name}").Config
            except (HydraException, ImportError, TypeError):
                continue
            if dataclasses.is_dataclass(schema):
                ConfigStore.instance().store(group=SCHEMA_GROUP, name=name, node={name: schema}, package="_global_")
                registered.append(name)
    return registered


def load_config(overrides: Sequence[str], config_dir: Path = CONFIG_DIR):
    """The validated config of the run `overrides` describe, as the paper's `run` gets it (`cfg.<paper>` an
    instance of its Config): for notebooks and tests,
    `papers.bess.PAPER.compute(load_config(["paper=bess", "scale=smoke"]), RunContext.detached())`."""
    validated = preflight(overrides, config_dir)
    if len(validated) != 1:
        raise ConfigError(f"load_config takes the overrides of one run, not a sweep: {' '.join(overrides)}")
    return validated[0].config


def preflight(overrides: Sequence[str], config_dir: Path = CONFIG_DIR) -> list[Validated]:
    """Compose and validate the run(s) these overrides describe, one per composition a sweep needs (its first
    values, then each further swept value); raise ConfigError naming the bad override and what is allowed."""
    parsed = _parse(overrides)
    searchpath = _searchpath(parsed)
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
        groups = {o.key_or_group: _group_options(o.key_or_group, searchpath) for o in parsed}
        return [_validate(_parse(variant), groups, searchpath) for variant in _variants(parsed)]


def _validate(variant: list[Override], groups: dict[str, list[str]], searchpath: list[str]) -> Validated:
    """Check one composition's group choices (`groups`: each overridden name's options, none for a key), compose
    it as Hydra will, and validate the result."""
    choices = [o for o in variant if groups[o.key_or_group]]
    for o in choices:
        options = groups[o.key_or_group]
        if not o.is_delete() and o.value() not in options:
            raise ConfigError(f"unknown {o.key_or_group} {o.value()!r}: choose one of {', '.join(options)}")
    try:
        cfg = compose("config", overrides=[o.input_line for o in variant], return_hydra_config=True)
    except HydraException as e:
        raise ConfigError(_explain(e, variant, [o.input_line for o in choices] + searchpath)) from None
    paper = cfg.hydra.runtime.choices.paper
    plain = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(plain, dict)
    del plain["hydra"]
    return prepare(OmegaConf.create(plain), paper)  # imports the paper and validates its config


def _explain(error: HydraException, variant: list[Override], choices: list[str]) -> str:
    """One line naming the override Hydra refused and what is allowed: each key is checked against the config
    composed from the group choices alone (Hydra's own message, first line, where none of them is at fault)."""
    try:
        base = compose("config", overrides=choices, return_hydra_config=True)
    except HydraException:
        base = None
    for o in variant:
        if base is not None and o.input_line not in choices:
            problem = _check_key(base, o)
            if problem:
                return problem
    cause = error.__cause__
    if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
        what = "invalid value for" if isinstance(cause, ValidationError) else "cannot change"
        return f"{what} '{cause.full_key}': {str(cause).splitlines()[0]}"
    return str(error).splitlines()[0]


def _check_key(base: DictConfig, o: Override) -> str | None:
    """What is wrong with key override `o` on the config `base`, which it has not been applied to; None if
    nothing is (as far as the config's keys can tell)."""
    parts = o.key_or_group.split(".")
    node = base
    for i, part in enumerate(parts):
        if not isinstance(node, DictConfig):
            return None
        last = i == len(parts) - 1
        if part not in node.keys():  # keys(), not `in node`, which is False for a key whose value is missing
            if o.is_add() or o.is_force_add():
                return None  # '+' and '++' add keys that do not exist yet
            key, parent = ".".join(parts[: i + 1]), ".".join(parts[:i])
            where = f"under '{parent}'" if parent else "at the top level"
            allowed = [str(k) for k in node.keys() if parent or k != "hydra"]
            return f"unknown config key '{key}': allowed keys {where} are {', '.join(allowed)}"
        if last and o.is_add():
            return f"config key '{o.key_or_group}' already exists: set it without the '+' ({o.input_line[1:]})"
        if not last:
            try:
                node = node[part]
            except OmegaConfBaseException:
                return None
    return None


def _task(cfg: DictConfig, validated: Validated | None) -> None:
    hc = HydraConfig.get()
    try:
        run(cfg, paper=hc.runtime.choices["paper"], run_dir=Path(hc.runtime.output_dir), validated=validated)
    except ConfigError as e:  # only reachable when the preflight was skipped
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


@reports_interrupts  # Ctrl-C: one line (what was kept, the command that resumes), no traceback, exit status 130
def main(argv: Sequence[str] | None = None) -> int:
    """The entry point of scripts/reproduce.py. Exit status: 0 ran (whatever the claims), 2 bad config, 130
    interrupted by Ctrl-C (143: by SIGTERM; core.stopping.Interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    line = parse_command_line(argv)
    if "JAX_NUM_PROCESSES" in os.environ or "SLURM_NTASKS" in os.environ:
        from core.devices import initialize_distributed

        initialize_distributed()  # a process of a multi-process run joins the others before any JAX work
    validated: list[Validated] = []
    if line.runs or line.shows:  # --cfg job shows only a config that a run would accept
        try:
            validated = preflight(line.overrides)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    else:
        register_schemas(line.overrides)  # --help shows the paper's defaults and types too
    job = validated[0] if len(validated) == 1 and not line.multirun else None

    def task(cfg: DictConfig) -> None:
        _task(cfg, job)

    sys.argv = [sys.argv[0], *line.hydra_argv]
    hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(task)()
    return 0

"""Every paper's settings live once: its Config dataclass holds the defaults (the default scale's), the paper's YAML
holds none of them, and a per-scale YAML holds only what differs from them. The composed config of every paper and
scale validates."""

import importlib
from pathlib import Path

import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf

from core.launch import CONFIG_DIR, load_config

PAPERS = sorted(p.stem for p in (CONFIG_DIR / "paper").glob("*.yaml"))
SCALE_FILES = sorted((CONFIG_DIR / "paper_scale").glob("*/*.yaml"))


def leaves(node, path=""):
    if isinstance(node, DictConfig):
        for k in node:
            yield from leaves(node[k], f"{path}.{k}" if path else str(k))
    else:
        yield path, node


@pytest.mark.parametrize("path", SCALE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scale_files_hold_only_what_differs_from_the_defaults(path: Path):
    paper = path.parent.name
    schema = importlib.import_module(f"papers.{paper}").Config
    defaults = OmegaConf.create({paper: OmegaConf.structured(schema)})
    scale = OmegaConf.load(path)
    repeated = []
    for key, value in leaves(scale.get(paper, OmegaConf.create({})), paper):
        default = OmegaConf.select(defaults, key, default=None)
        plain = OmegaConf.to_container(value) if isinstance(value, ListConfig) else value
        default = OmegaConf.to_container(default) if isinstance(default, ListConfig) else default
        if plain == default:
            repeated.append(f"{key}={plain!r}")
    assert not repeated, f"{path} repeats defaults of papers.{paper}.Config: {', '.join(repeated)}"


@pytest.mark.parametrize("paper", PAPERS)
def test_paper_files_hold_no_settings(paper):
    cfg = OmegaConf.load(CONFIG_DIR / "paper" / f"{paper}.yaml")
    assert set(cfg) == {"paper"}, f"configs/paper/{paper}.yaml sets {sorted(set(cfg) - {'paper'})}: put them in Config"


@pytest.mark.parametrize("scale", ["smoke", "default", "full"])
@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_and_scale_composes_and_validates(paper, scale):
    config = load_config([f"paper={paper}", f"scale={scale}"])
    schema = importlib.import_module(f"papers.{paper}").Config
    got = getattr(config, paper)
    assert isinstance(got, schema) and config.scale.name == scale
    # what the run gets is the dataclass's defaults with the scale file's values on top, merged here without Hydra
    path = CONFIG_DIR / "paper_scale" / paper / f"{scale}.yaml"
    changes = OmegaConf.load(path).get(paper, OmegaConf.create({})) if path.exists() else OmegaConf.create({})
    expected = OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(schema), changes))
    assert OmegaConf.to_container(OmegaConf.structured(got)) == expected

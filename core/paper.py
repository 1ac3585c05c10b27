"""The paper contract: three functions with one direction of data, found through one `Paper` object per package.

    run(cfg, ctx) -> Results                  all computation (training, simulation, timing); papers/<name>/run.py
    decide(cfg, results) -> Decided           every claim's statistic and verdict, a pure function of Results
                                              (numpy and scipy only: no model, no training, no JAX)
    render(cfg, results, decided) -> Report   tables, figures, notes; it never decides

`papers/<name>/__init__.py` holds `PAPER = Paper(...)`, naming each part as "module:attribute". Nothing is imported
until it is asked for, so `import papers.<name>` loads neither JAX nor the paper's modules, `make claims` and config
validation load only the config and the claim declarations, and `make redecide` loads decide and render, never run.
The same names tell core.provenance which modules each fingerprint covers: the compute fingerprint follows the
imports of `run`'s module, the decision fingerprint those of `claims`, `decide`, `render` and the ledger.

`decide` returns a `core.claims.Decided`: the measured claims (`Claim.measured`), the facts (analytic, calibration
and construction rows, never counted) and the named estimates the report's tables show (a key figure with its
interval where it has one), so that `render` only formats and `make compare` can hold a user's run against the
reference. This module imports nothing of the project: a run executes it (the compute fingerprint covers it), so it
holds only the protocol.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARTS = ("config", "claims", "results", "run", "decide", "render", "ledger", "ipu_steps")
OPTIONAL = ("ledger", "ipu_steps")  # parts a paper may leave empty


@dataclass(frozen=True)
class Paper:
    """One paper of the monorepo: its name, title and where each part of the contract lives ("module:attribute").

    config: the `Config` dataclass of its config section (imports without JAX);
    claims: `claims(cfg) -> list[Claim]`, the declarations from the config alone (imports without JAX);
    results: the Results dataclass `run` returns (core.results rebuilds it from JSON; imports without JAX);
    run, decide, render: the three functions; ledger: the module holding LEDGER (its history of claims);
    ipu_steps: `steps(cfg) -> list[ipu_model.steps.Step]`, the paper's main step at the run's sizes for the simulated
    IPU (costed apart from `run` and kept beside the record as ipu_step.json: ipu_model/steps.py).
    decision_data: data files or folders of the package (relative to it) that only the decision reads (readings of
    the paper's figures): the decision fingerprint covers them, the compute fingerprint does not.
    """

    name: str
    title: str
    config: str
    claims: str
    results: str
    run: str
    decide: str
    render: str
    ledger: str = ""
    ipu_steps: str = ""
    decision_data: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.replace("_", "").isalnum() or not self.name[0].isalpha():
            raise ValueError(f"paper name {self.name!r}: use letters, digits and '_', starting with a letter")
        for part in PARTS:
            spec = getattr(self, part)
            if part in OPTIONAL and not spec:
                continue
            module, _, attr = spec.partition(":")
            if not module or (part != "ledger" and not attr):
                raise ValueError(f"paper {self.name!r}: {part}={spec!r} is not 'module:attribute'")

    def load(self, part: str) -> Any:
        """The part named `part` (one of PARTS), imported on first use."""
        if part not in PARTS:
            raise ValueError(f"paper {self.name!r}: no part {part!r}; parts are {', '.join(PARTS)}")
        spec = getattr(self, part)
        if part == "ipu_steps" and not spec:
            return None
        if part == "ledger":
            return list(getattr(importlib.import_module(spec.partition(":")[0]), "LEDGER", [])) if spec else []
        module, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module), attr)

    def module(self, part: str) -> str:
        """The dotted name of the module holding `part`."""
        return getattr(self, part).partition(":")[0]

    def module_path(self, part: str, root: Path) -> Path | None:
        """The file of the module holding `part`, found without importing it (None where there is none)."""
        name = self.module(part)
        if not name:
            return None
        base = root.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    # the parts, loaded on first use
    @property
    def Config(self) -> type:
        return self.load("config")

    @property
    def Results(self) -> type:
        return self.load("results")

    def declare(self, cfg: Any) -> list[Any]:
        """The claims declared from the config alone."""
        return list(self.load("claims")(cfg))

    def compute(self, cfg: Any, ctx: Any) -> Any:
        return self.load("run")(cfg, ctx)

    def decide_results(self, cfg: Any, results: Any) -> Any:
        """`decide(cfg, results)` as a core.claims.Decided (a plain list of claims is taken as the claims alone)."""
        # by name, like the parts: a run imports this module, and its compute fingerprint must not cover decision code
        Decided = importlib.import_module("core.claims").Decided

        decided = self.load("decide")(cfg, results)
        if isinstance(decided, list):
            decided = Decided(decided)
        if not isinstance(decided, Decided):
            raise TypeError(f"{self.decide} returned {type(decided).__name__}, expected core.claims.Decided")
        return decided

    def render_report(self, cfg: Any, results: Any, decided: Any) -> Any:
        return self.load("render")(cfg, results, decided)

    def exports(self, name: str) -> Any:
        """For a package's module-level `__getattr__`: `papers.<name>.Config` and `.Results`, loaded on first use.
        (The functions are reached through the parts, `PAPER.load("decide")`: a package attribute named after a
        function would be shadowed by the submodule of the same name, papers.<name>.claims or .run.)"""
        if name == "Config":
            return self.load("config")
        if name == "Results":
            return self.load("results")
        raise AttributeError(f"module {self.module('config').rpartition('.')[0]!r} has no attribute {name!r}")


def find_paper(module_name: str) -> Paper:
    """The `PAPER` object of a paper's package (`papers.<name>`, or a test's toy paper)."""
    module = importlib.import_module(module_name)
    paper = getattr(module, "PAPER", None)
    if not isinstance(paper, Paper):
        raise TypeError(f"package {module_name!r} has no PAPER = core.paper.Paper(...) object")
    return paper

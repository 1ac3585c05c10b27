"""The READMEs' code is checked: every backticked dotted name under core, ipu_model or papers (`core.numerics`,
`papers.qm1b.dft.run_dft`, ...) imports or resolves, and every ```python block written as a doctest runs and prints
what the README says it prints."""

from __future__ import annotations

import doctest
import importlib
import re

import pytest

from tests.conftest import REPO_ROOT

READMES = [
    "README.md",
    *sorted(
        str(p.relative_to(REPO_ROOT))
        for top in ("configs", "core", "ipu_model", "papers", "scripts", "tests")
        for p in (REPO_ROOT / top).rglob("README.md")
    ),
]
NAME = re.compile(r"`((?:core|ipu_model|papers)(?:\.[A-Za-z_]\w*)+)")
EXAMPLE = re.compile(r"^```python\n(>>> .*?)^```$", re.MULTILINE | re.DOTALL)


def resolve(name: str):
    """The object a dotted name names: its longest importable module, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not module.startswith(e.name):  # a missing dependency, not a missing module
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def names(readme: str) -> list[str]:
    return sorted(set(NAME.findall((REPO_ROOT / readme).read_text())))


def examples(readme: str) -> list[tuple[int, str]]:
    """(line, text) of every ```python block that is a doctest."""
    text = (REPO_ROOT / readme).read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in EXAMPLE.finditer(text)]


@pytest.mark.parametrize("readme", READMES)
def test_every_code_name_resolves(readme):
    missing = []
    for name in names(readme):
        try:
            resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name}: {e}")
    assert not missing, f"{readme} names code that does not exist:\n" + "\n".join(missing)


def test_the_library_section_names_the_stable_paths():
    found = names("README.md")
    for name in ("core.numerics", "core.unit_scaling", "core.nn.attention", "core.nn.attention.sparq_attention_gqa"):
        assert name in found, name
    assert "papers.sparq.sparq_attention_gqa" not in found  # SparQ's attention lives in core.nn.attention


EXAMPLES = [(readme, line, text) for readme in READMES for line, text in examples(readme)]


@pytest.mark.parametrize(("readme", "line", "text"), EXAMPLES, ids=[f"{r}:{n}" for r, n, _ in EXAMPLES])
def test_examples_run(readme, line, text):
    test = doctest.DocTestParser().get_doctest(text, {}, f"{readme}:{line}", str(REPO_ROOT / readme), line)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)

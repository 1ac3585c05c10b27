"""House rules of the source tree, checked on every module of core, ipu_model, papers and scripts:
- no private name (leading underscore) of one of our modules is used from another module, by import or as a module
  attribute: what two modules share is public (core.numerics.bits is the example);
- the claims API has one import path: a name core.claims defines is imported from core.claims, never from
  core.report (which holds the Report);
- a module over 400 lines says why at its top ("One module over 400 lines: <why>").
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("core", "ipu_model", "papers")
TREES = (*OURS, "scripts")
MAX_LINES = 400


def _modules():
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py") if ".venv" not in p.parts)


def private_uses(path: Path) -> list[str]:
    """`from ours import _x` and `module._x` (module one of ours, imported here) in the file at `path`."""
    tree = ast.parse(path.read_text())
    modules, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                else:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_private_name_rule_sees_both_forms(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from core.numerics.cast import _cast_bits\nimport core.numerics.mx as mx\nmx._quantise(1)\n")
    assert private_uses(bad) == ["line 1: from core.numerics.cast import _cast_bits", "line 3: mx._quantise"]


def test_no_module_uses_a_private_name_of_another():
    found = {str(p.relative_to(ROOT)): uses for p in _modules() if (uses := private_uses(p))}
    assert not found, f"private names used across modules (make them public or keep them in one module): {found}"


def test_the_claims_api_is_imported_from_core_claims_only():
    import core.claims

    api = {name for name in vars(core.claims) if not name.startswith("_")}
    found = []
    for path in [*_modules(), *sorted((ROOT / "tests").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "core.report":
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if a.name in api]
    assert not found, f"claims API imported from core.report, import it from core.claims: {found}"


@pytest.mark.parametrize("path", [p for p in _modules() if len(p.read_text().splitlines()) > MAX_LINES], ids=str)
def test_a_module_over_400_lines_says_why_at_its_top(path):
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "One module over 400 lines:" in doc, f"{path.relative_to(ROOT)}: split it, or say why at its top"


LEDGERS = sorted((ROOT / "papers").glob("*/ledger.py"))


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.parent.name)
def test_a_ledger_is_data_one_entry_per_change(path):
    """No comprehension or loop builds ledger entries: each change is written out, so an entry reads as what was
    recorded and a new one is appended, never generated (core.ledger.code_changes takes its claims as a dict, one
    line a claim, and stays: its entries are a code change's, with nothing but the fingerprint to say)."""
    loops = [
        f"line {node.lineno}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp | ast.For | ast.While)
    ]
    assert not loops, f"{path.relative_to(ROOT)}: entries built by a comprehension or loop at {loops}"


def test_every_paper_enters_the_same_way():
    """`papers.<name>.PAPER` (core.paper.Paper) with each part in its module: config.py, claims.py, results.py,
    run.py, report.py, ledger.py, and `decide` in claims.py (or decide.py beside it)."""
    from core.paper import find_paper

    for package in sorted(p.parent.name for p in (ROOT / "papers").glob("*/__init__.py")):
        paper = find_paper(f"papers.{package}")
        base = f"papers.{package}"
        assert paper.name == package
        assert (paper.config, paper.claims, paper.results, paper.run, paper.render, paper.ledger) == (
            f"{base}.config:Config",
            f"{base}.claims:claims",
            f"{base}.results:Results",
            f"{base}.run:run",
            f"{base}.report:render",
            f"{base}.ledger",
        )
        assert paper.decide in (f"{base}.claims:decide", f"{base}.decide:decide")

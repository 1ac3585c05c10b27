#!/usr/bin/env python
"""Benchmarks: our implementations against a peer library, timed in the same run.

    python scripts/bench.py                         # every section, full size
    python scripts/bench.py --section NAME          # one section (repeatable)
    python scripts/bench.py --size tiny             # tiny | quick | full (--quick = --size quick)
    python scripts/bench.py --list

Writes outputs/bench/<date>.json and outputs/bench/<date>.md, and prints the markdown table. The sections live beside
the code they measure, in `core/numerics/bench.py`, `ipu_model/bench.py` and `papers/<name>/bench.py` (see
core.bench for the convention); this script finds them by listing those files and imports a module only to run one
of its sections.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bench import SECTIONS, SIZES, Comparison, Section, markdown_table  # noqa: E402

FIXED_MODULES = ("core/numerics/bench.py", "ipu_model/bench.py")  # then papers/<name>/bench.py, by name


def bench_files(root: Path = ROOT) -> list[Path]:
    """Every bench module: the core and ipu_model ones, then each paper package's bench.py in name order."""
    papers = sorted(p for p in (root / "papers").glob("*/bench.py") if (p.parent / "__init__.py").is_file())
    return [root / f for f in FIXED_MODULES if (root / f).is_file()] + papers


def declared_sections(path: Path) -> list[str]:
    """The names in the `@section("name")` decorators of a bench module, read from its source (nothing imported)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in node.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and getattr(dec.func, "id", getattr(dec.func, "attr", None)) == "section"
                and dec.args
                and isinstance(dec.args[0], ast.Constant)
                and isinstance(dec.args[0].value, str)
            ):
                names.append(dec.args[0].value)
    return names


def discover(root: Path = ROOT) -> dict[str, str]:
    """Section name -> the module that defines it, in the order of `bench_files`."""
    found: dict[str, str] = {}
    for path in bench_files(root):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for name in declared_sections(path):
            if name in found:
                raise ValueError(f"benchmark section {name!r} is declared by both {found[name]} and {module}")
            found[name] = module
    return found


def load(name: str, sections: dict[str, str] | None = None) -> Section:
    """The function of section `name`, importing its module."""
    module = (sections or discover())[name]
    importlib.import_module(module)
    if name not in SECTIONS:
        raise RuntimeError(f"{module} declares the section {name!r} but importing it registered none by that name")
    return SECTIONS[name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", action="append", help="run only this section (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    parser.add_argument("--size", choices=SIZES, help="tiny (seconds: every code path), quick (smoke) or full")
    parser.add_argument("--quick", action="store_true", help="the same as --size quick")
    parser.add_argument("--out", default="outputs/bench", help="directory for the JSON and markdown results")
    args = parser.parse_args(argv)
    if args.quick and args.size not in (None, "quick"):
        parser.error(f"--quick means --size quick, but --size {args.size} was given")
    size = "quick" if args.quick else (args.size or "full")
    sections = discover()
    if args.list:
        print("\n".join(sections) if sections else "(no sections yet)")
        return 0
    chosen = args.section or list(sections)
    unknown = [s for s in chosen if s not in sections]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(sections) or '(none yet)'}")
    if not chosen:
        print("no benchmark sections are registered yet")
        return 0
    from core.context import versions
    from core.io import atomic_write_json, atomic_write_text

    if args.size is None and not args.quick:  # the default, said once before the long work starts
        print(
            "[bench] full size (the default): from about a minute to more than ten per section on a 2-core CPU; "
            "--size quick runs a smoke of each, --size tiny every code path in seconds",
            file=sys.stderr,
            flush=True,
        )
    rows: list[Comparison] = []
    for name in chosen:
        print(f"[bench] {name} ({size}) ...", file=sys.stderr, flush=True)
        rows += load(name, sections)(size)
    table = markdown_table(rows)
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out = Path(args.out)
    atomic_write_json(
        out / f"{stamp}.json", {"rows": [r.to_dict() for r in rows], "size": size, "versions": versions()}
    )
    atomic_write_text(out / f"{stamp}.md", table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which code computed a result: a fingerprint of source trees, so stored work is reused only by the same code.

    code_fingerprint("papers/umup", "core", "ipu_model")   # 12 hex digits

The fingerprint hashes each file's path and content: Python files as their syntax trees without docstrings (so
comments, formatting and docstrings do not count, a changed line of code does), other files (vendored data,
JSON tables) byte for byte; Markdown, caches and compiled files are left out. The runner keys every checkpoint
directory by the paper's fingerprint and records it in results.json; data-generation stages that depend on fewer
modules hash a narrower set (`paper_fingerprint(paper, *paths)`).

A paper's fingerprint covers its package, the modules of core and ipu_model that it imports (followed through
their own imports, function-level imports included, with every enclosing package's `__init__`), the runner's, and
every data file under core and ipu_model: a change to a core module that the paper never imports leaves its
results current. Imports are read from the syntax tree; core and ipu_model load no module by a computed name.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = ("core", "ipu_model")
_SKIPPED_SUFFIXES = {".md", ".pyc", ".lock"}
_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def strip_docstrings(tree: ast.AST) -> ast.AST:
    """The tree without the docstrings of its module, classes and functions (what a fingerprint ignores)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _file_digest(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".py":
        try:
            tree = strip_docstrings(ast.parse(data, filename=str(path)))
            data = ast.dump(tree, annotate_fields=False, include_attributes=False).encode()
        except SyntaxError:
            pass  # hashed as bytes: it will fail loudly when imported anyway
    return hashlib.sha256(data).digest()


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.suffix not in _SKIPPED_SUFFIXES and not (_SKIPPED_DIRS & set(p.parts))
    )


def _ledger_file(path: Path) -> bool:
    """A paper's ledger.py and claims.lock.json record claims' history; they do not change what a run computes."""
    return path.name in ("ledger.py", "claims.lock.json") and path.parent.parent.name == "papers"


@functools.lru_cache(maxsize=64)
def _cached(paths: tuple[str, ...], root: str, stamp: tuple) -> str:
    h = hashlib.sha256()
    base = Path(root)
    for rel in paths:
        target = base / rel
        if not target.exists():
            raise FileNotFoundError(f"code_fingerprint: {target} does not exist")
        for f in _files(target):
            if _ledger_file(f):
                continue
            h.update(str(f.relative_to(base)).encode() + b"\0" + _file_digest(f))
    return h.hexdigest()[:12]


def _stamp(paths: tuple[str, ...], root: Path) -> tuple:
    """Modification times and sizes: a changed file invalidates the cache within one process."""
    out = []
    for rel in paths:
        for f in _files(root / rel):
            st = f.stat()
            out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(out)


def code_fingerprint(*paths: str | Path, root: Path = REPO_ROOT) -> str:
    """12 hex digits identifying the code under `paths` (files or directories, relative to `root`)."""
    if not paths:
        raise ValueError("code_fingerprint: name at least one file or directory")
    rels = tuple(sorted(str(p) for p in paths))
    return _cached(rels, str(root), _stamp(rels, root))


MACHINERY = ("core/launch.py", "core/runner.py")  # the code that starts and records every run


def _imported_names(path: Path) -> set[str]:
    """Absolute module names imported anywhere in a Python file (`from a.b import c` gives a.b and a.b.c)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _module_files(name: str, root: Path) -> list[Path]:
    """The files of a shared module and of each package enclosing it: core.nn.fp8 -> core/__init__.py,
    core/nn/__init__.py, core/nn/fp8.py (a name that is not a file, such as a function, adds nothing)."""
    parts = name.split(".")
    if parts[0] not in SHARED:
        return []
    out = []
    for i in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:i])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                out.append(candidate)
    return out


def dependencies(*paths: str | Path, root: Path = REPO_ROOT) -> tuple[str, ...]:
    """`paths` (relative to `root`), the runner, the core and ipu_model modules they import, transitively, and the
    data files under core and ipu_model: the files a fingerprint of a paper's run must cover."""
    start = [f for p in (*paths, *MACHINERY) if (root / p).exists() for f in _files(root / p)]
    seen = set(start)
    todo = [f for f in start if f.suffix == ".py"]
    while todo:
        for name in _imported_names(todo.pop()):
            for f in _module_files(name, root):
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
    data = [f for d in SHARED if (root / d).is_dir() for f in _files(root / d) if f.suffix != ".py"]
    return tuple(sorted({str(f.relative_to(root)) for f in (*seen, *data)}))


def paper_fingerprint(paper: str, *narrower: str | Path, root: Path = REPO_ROOT) -> str:
    """The code a paper's run depends on: `papers/<paper>` and what it imports of core and ipu_model
    (`dependencies`); or only `narrower` (paths relative to the repository root) for a stage that declares the
    modules it depends on."""
    return code_fingerprint(*(narrower or dependencies(f"papers/{paper}", root=root)), root=root)

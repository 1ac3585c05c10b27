"""Which code computed a result: a fingerprint of source trees, so stored work is reused only by the same code.

    code_fingerprint("papers/umup", "core", "ipu_model")   # 12 hex digits

The fingerprint hashes each file's path and content: Python files as their syntax trees without docstrings (so
comments, formatting and docstrings do not count, a changed line of code does), other files (vendored data,
JSON tables) byte for byte; Markdown, caches and compiled files are left out. The runner keys every checkpoint
directory by the paper's fingerprint (its package, core and ipu_model) and records it in results.json;
data-generation stages that depend on fewer modules hash a narrower set (`paper_fingerprint(paper, *paths)`).
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


def paper_fingerprint(paper: str, *narrower: str | Path, root: Path = REPO_ROOT) -> str:
    """The code a paper's run depends on: `papers/<paper>`, core and ipu_model; or only `narrower` (paths relative
    to the repository root) for a stage that declares the modules it depends on."""
    return code_fingerprint(*(narrower or (f"papers/{paper}", *SHARED)), root=root)

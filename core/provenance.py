"""Which code computed a result, and which code decided it: fingerprints of source files, so stored work is reused
only by the same code and a record is stale only when the code that made it changed.

    code_fingerprint("papers/umup", "core", "ipu_model")   # 12 hex digits
    compute_fingerprint(PAPER)                              # the code a paper's `run` executes
    decision_fingerprint(PAPER)                             # the code its `claims`, `decide` and `render` execute

The fingerprint hashes each file's path and content: Python files as their syntax trees without docstrings (so
comments, formatting and docstrings do not count, a changed line of code does), other files (vendored data,
JSON tables) byte for byte; Markdown, caches and compiled files are left out.

A paper has two (core.paper): the compute fingerprint covers the module of its `run` and everything that module
imports of the paper's package, core and ipu_model (followed through their own imports, function-level imports
included, with every enclosing package's `__init__`), the serialiser of its Results (core.results), the paper's
data files and those under core and ipu_model; the decision fingerprint covers the modules of `config`, `claims`,
`decide`, `render` and the ledger with what they import, and the code that assembles the record (core.record). The
runner keys every checkpoint directory by the compute fingerprint; a change to decision or rendering code only
leaves the computation current and is re-decided from the stored Results (`make redecide`). Data-generation stages
that depend on fewer modules hash a narrower set (`paper_fingerprint(paper, *paths)`). Imports are read from the
syntax tree; the packages load no module by a computed name except core.paper, which loads a paper's parts by the
names its Paper object gives (the same names these fingerprints start from), and core.claims' Decided, which it
loads by name so that a run's fingerprint does not cover the decision. Package `__init__`s that load their heavy
modules on first use (core, core.sparsity) write those imports out inside `__getattr__`, or name modules that no
run needs (core's claims API), so the follower still sees what a run can reach.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = ("core", "ipu_model")
FOLLOWED = (*SHARED, "papers")  # top-level packages whose imports a fingerprint follows
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


# the code every compute fingerprint covers beside the import closure: how Results are stored
COMPUTE_MACHINERY = ("core/results.py",)
# the code every decision fingerprint covers: how a record is decided and written
DECISION_MACHINERY = ("core/record.py",)


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


def _module_files(name: str, root: Path, follow: tuple[str, ...] = FOLLOWED) -> list[Path]:
    """The files of a module of the followed packages and of each package enclosing it: core.nn.fp8 ->
    core/__init__.py, core/nn/__init__.py, core/nn/fp8.py (a name that is not a file, such as a function, adds
    nothing)."""
    parts = name.split(".")
    if parts[0] not in follow:
        return []
    out = []
    for i in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:i])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                out.append(candidate)
    return out


def dependencies(
    *paths: str | Path,
    root: Path = REPO_ROOT,
    machinery: tuple[str, ...] = COMPUTE_MACHINERY,
    data: bool = True,
    follow: tuple[str, ...] = FOLLOWED,
) -> tuple[str, ...]:
    """`paths` (relative to `root`), `machinery`, the modules of core, ipu_model and papers they import,
    transitively, and (with `data`) the data files under core and ipu_model: the files a fingerprint of a paper's
    run must cover."""
    start = [f for p in (*paths, *machinery) if (root / p).exists() for f in _files(root / p)]
    seen = set(start)
    todo = [f for f in start if f.suffix == ".py"]
    while todo:
        for name in _imported_names(todo.pop()):
            for f in _module_files(name, root, follow):
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
    files = [f for d in SHARED if data and (root / d).is_dir() for f in _files(root / d) if f.suffix != ".py"]
    return tuple(sorted({str(f.relative_to(root)) for f in (*seen, *files)}))


def _paper_data(package: Path, root: Path, leave_out: tuple[str, ...] = ()) -> list[str]:
    """The paper's own data files (vendored tables, figure readings): every non-Python file of its package that
    a fingerprint counts, but those under `leave_out` (paths relative to the package)."""
    if not package.is_dir():
        return []
    skipped = [package / p for p in leave_out]
    return [
        str(f.relative_to(root))
        for f in _files(package)
        if f.suffix != ".py" and not _ledger_file(f) and not any(f == s or f.is_relative_to(s) for s in skipped)
    ]


def _part_paths(paper, parts: tuple[str, ...], root: Path) -> list[str]:
    out = []
    for part in parts:
        path = paper.module_path(part, root)
        if path is not None:
            out.append(str(path.relative_to(root)))
    return out


def _package(paper, root: Path) -> tuple[Path, tuple[str, ...]]:
    """The paper's package directory, and the top-level packages whose imports its fingerprints follow (core,
    ipu_model, papers, and the paper's own top-level package where it lives elsewhere, as a test's toy paper)."""
    path = paper.module_path("run", root)
    package = path.parent if path is not None else root / "papers" / paper.name
    top = paper.module("run").split(".")[0]
    return package, tuple(dict.fromkeys((*FOLLOWED, top)))


def compute_dependencies(paper, root: Path = REPO_ROOT) -> tuple[str, ...]:
    """The files a paper's compute fingerprint covers (`paper` a core.paper.Paper)."""
    package, follow = _package(paper, root)
    starts = _part_paths(paper, ("run",), root)
    data = _paper_data(package, root, tuple(getattr(paper, "decision_data", ())))
    return tuple(sorted({*dependencies(*starts, root=root, follow=follow), *data}))


def decision_dependencies(paper, root: Path = REPO_ROOT) -> tuple[str, ...]:
    """The files a paper's decision fingerprint covers: the config (the stored config is validated by it before
    deciding), claims, decide, render and the ledger, with what they import, and the record's assembly
    (core.record)."""
    package, follow = _package(paper, root)
    starts = _part_paths(paper, ("config", "claims", "decide", "render", "ledger"), root)
    deps = dependencies(*starts, root=root, machinery=DECISION_MACHINERY, data=False, follow=follow)
    return tuple(sorted({*deps, *_paper_data(package, root)}))


def _outside(paper, root: Path) -> Path | None:
    """The directory above a paper package that lives outside `root` (a test's toy paper), else None."""
    path = paper.module_path("run", root)
    if path is not None:
        return None
    import importlib.util

    spec = importlib.util.find_spec(paper.module("run"))
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"paper {paper.name!r}: module {paper.module('run')!r} not found")
    return Path(spec.origin).resolve().parent.parent


def _outside_fingerprint(paper, parts: tuple[str, ...], machinery: tuple[str, ...], home: Path, root: Path) -> str:
    """For a paper package outside the repository (under `home`): the same closure as inside it, its own modules
    hashed relative to `home` and the shared ones relative to `root`."""
    top = paper.module("run").split(".")[0]
    starts = [p for p in (paper.module_path(part, home) for part in parts) if p is not None]
    starts += [f for m in machinery if (root / m).exists() for f in _files(root / m)]
    seen = set(starts)
    todo = [f for f in starts if f.suffix == ".py"]
    while todo:
        for name in _imported_names(todo.pop()):
            for base, follow in ((home, (top,)), (root, FOLLOWED)):
                for f in _module_files(name, base, follow):
                    if f not in seen:
                        seen.add(f)
                        todo.append(f)
    own = sorted(str(f.relative_to(home)) for f in seen if f.is_relative_to(home))
    shared = sorted(str(f.relative_to(root)) for f in seen if not f.is_relative_to(home))
    return code_fingerprint(*own, root=home)[:6] + code_fingerprint(*shared, root=root)[:6]


def compute_fingerprint(paper, root: Path = REPO_ROOT) -> str:
    """12 hex digits: the code a paper's `run` executes (`compute_dependencies`)."""
    home = _outside(paper, root)
    if home is not None:
        return _outside_fingerprint(paper, ("run",), COMPUTE_MACHINERY, home, root)
    return code_fingerprint(*compute_dependencies(paper, root), root=root)


def decision_fingerprint(paper, root: Path = REPO_ROOT) -> str:
    """12 hex digits: the code that decides and renders a paper's record (`decision_dependencies`)."""
    home = _outside(paper, root)
    if home is not None:
        parts = ("config", "claims", "decide", "render", "ledger")
        return _outside_fingerprint(paper, parts, DECISION_MACHINERY, home, root)
    return code_fingerprint(*decision_dependencies(paper, root), root=root)


def paper_fingerprint(paper: str, *narrower: str | Path, root: Path = REPO_ROOT) -> str:
    """The compute fingerprint of paper `paper` (by name); or, with `narrower` (paths relative to the repository
    root), the fingerprint of only those files, for a stage that declares the modules it depends on."""
    if narrower:
        return code_fingerprint(*narrower, root=root)
    from core.paper import find_paper

    return compute_fingerprint(find_paper(f"papers.{paper}"), root=root)


def git_state(root: Path = REPO_ROOT) -> tuple[str, bool]:
    """(the checkout's short commit, whether its code differs from that commit): tracked changes and untracked files
    under the code and config directories count; outputs and the stored results do not. ("", False) outside git."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        code = [p for p in CODE_PATHS if (root / p).exists()]
        dirty = git("status", "--porcelain", "--untracked-files=normal", "--", *code)
    except (OSError, subprocess.SubprocessError):
        return "", False
    return commit, bool(dirty)


# what a run's code is made of: a change here (committed or not) is a change of the code that made a run
CODE_PATHS = ("core", "ipu_model", "papers", "configs", "scripts", "pyproject.toml", "Makefile")

"""Which code computed a result, and which code decided it: fingerprints of exactly the code that ran, so stored work
is reused only by the same code and a record is stale only when code it used changed.

    compute_fingerprint(PAPER)          # 12 hex digits: the code a paper's `run` can reach
    decision_fingerprint(PAPER)         # the code its `config`, `claims`, `decide`, `render` and ledger can reach
    callable_fingerprint(fn)            # the code `fn` can reach (a stage kept by core.memo, a claim's measure)
    code_fingerprint("core", "papers/umup")   # whole files and folders

**The form.** A fingerprint hashes tokens, not text and not syntax trees (whose dump differs between Python
versions): names, operators, numbers and strings as written, with statement ends and indentation, and without
comments, blank lines, formatting inside brackets and docstrings (`source_tokens`). The same code gives the same
fingerprint on every Python from 3.11 on (tests/core/test_provenance.py runs it under each interpreter it finds).
This module uses the standard library only.

**What is covered.** A module is cut into units: each top-level function and class (its decorators and whole body,
methods included, since a method is found through its object at run time), each name bound by top-level assignments
(every statement that binds it), and `<init>`, the module's other top-level statements (what importing it does).
From a start (a paper's `run`, a claim's measure, a memoised stage) the closure follows every name a unit uses:
names of its own module, names imported (at the top or inside a function, absolute or relative, through packages'
re-exports and their `__getattr__`), and attribute chains through imported modules (`stats.paired_relative_gap`),
across core, ipu_model and papers. Reaching a module also reaches the `<init>` of it and of its enclosing packages.
A fingerprint hashes each reached unit's name and digest (`units`), plus the data files a run reads (a paper's own
non-Python files, and those of core and ipu_model, byte for byte). So an edit to a function no path from the start
names leaves the fingerprint alone: adding MX formats to core/numerics/cast.py does not stale a paper whose run
never names them.

The closure is static, so it must hold all that runs: what the packages load by a computed name is the paper's parts
(core.paper, by the names the Paper object gives: the starts here) and core's claims API (core.report, never part of
a run). tests/core/test_provenance.py runs a paper with Python's profiler on and checks that every function of the
repository it executed is in its compute closure.

A record stores its units (`units`), so work kept from an earlier run can say which of its functions changed
(`changed_units`), and `make prune` can tell kept work made by other code without knowing what made it.

One module over 400 lines: the source's normal form, the module index, the closure walk and the fingerprints made
from them are one computation (the walk reads the index and normalises what it reaches); it is the candidate for a
split (closure walk apart from fingerprints) when it next grows.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import io
import textwrap
import tokenize
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = ("core", "ipu_model")
FOLLOWED = (*SHARED, "papers")  # top-level packages whose code a fingerprint follows
FORM = 2  # the fingerprint's form: 1 hashed ast.dump of whole import closures; 2 hashes tokens of reached units
_SKIPPED_SUFFIXES = {".md", ".pyc", ".lock"}
_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
INIT = "<init>"  # the unit of a module's top-level statements that bind no name of their own
# Modules that key, place, log or show work and compute no value a result holds (the run's context: where it keeps
# work and whether it resumes): a closure does not enter them, so a change to how progress is drawn, metrics are
# logged or work is kept leaves every result current.
NOT_COMPUTING = (
    "core.provenance",
    "core.memo",
    "core.prune",
    "core.context",
    "core.progress",
    "core.tracking",
    "core.profile",
)

# ---------------------------------------------------------------------------------------------- the source's form


def source_tokens(text: str) -> list[str]:
    """The significant tokens of Python source, in a form every Python version from 3.11 on produces alike: names,
    operators, numbers and strings as written, '\\n' for the end of a statement, '>' and '<' for an indent and a
    dedent. Comments, blank lines, line continuations and statements that are only a string (docstrings) are
    dropped; an f-string is one token, its text as written (Python 3.12 splits it into parts)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def span(a: tuple[int, int], b: tuple[int, int]) -> str:
        return text[starts[a[0] - 1] + a[1] : starts[b[0] - 1] + b[1]]

    opening = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
    closing = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
    kept: list[tuple[str, bool]] = []  # (token, is a string)
    depth, begin = 0, (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in opening:
            if depth == 0:
                begin = tok.start
            depth += 1
            continue
        if depth:
            if tok.type in closing:
                depth -= 1
                if depth == 0:
                    kept.append((span(begin, tok.end), True))
            continue
        if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
            kept.append((tok.string, False))
        elif tok.type == tokenize.STRING:
            kept.append((tok.string, True))
        elif tok.type == tokenize.NEWLINE:
            kept.append(("\n", False))
        elif tok.type == tokenize.INDENT:
            kept.append((">", False))
        elif tok.type == tokenize.DEDENT:
            kept.append(("<", False))
    out: list[str] = []
    i = 0
    while i < len(kept):
        at_start = not out or out[-1] in ("\n", ">", "<")
        if at_start and kept[i][1]:
            j = i
            while j < len(kept) and kept[j][1]:
                j += 1
            if j == len(kept) or kept[j][0] == "\n":  # a statement that is only a string: a docstring
                i = j + 1
                continue
        out.append(kept[i][0])
        i += 1
    return out


def source_digest(text: str) -> str:
    """sha256 of the source's tokens (`source_tokens`): the same on every Python version; comments, formatting and
    docstrings do not count, a changed token does. Source that does not tokenize is hashed as its text."""
    try:
        form = "\x00".join(source_tokens(text))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        form = text
    return hashlib.sha256(form.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- files


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


@functools.lru_cache(maxsize=4096)
def _file_digest_cached(path: str, mtime: int, size: int) -> str:
    p = Path(path)
    if p.suffix == ".py":
        return source_digest(p.read_text(encoding="utf-8", errors="surrogateescape"))
    return hashlib.sha256(p.read_bytes()).hexdigest()


def file_digest(path: Path) -> str:
    """A Python file's `source_digest`; any other file's bytes' sha256."""
    st = path.stat()
    return _file_digest_cached(str(path), st.st_mtime_ns, st.st_size)


def code_fingerprint(*paths: str | Path, root: Path = REPO_ROOT) -> str:
    """12 hex digits identifying the files under `paths` (files or directories, relative to `root`), whole: Python
    files by their tokens, other files byte for byte; Markdown, caches and papers' ledgers are left out."""
    if not paths:
        raise ValueError("code_fingerprint: name at least one file or directory")
    h = hashlib.sha256()
    for rel in sorted(str(p) for p in paths):
        target = root / rel
        if not target.exists():
            raise FileNotFoundError(f"code_fingerprint: {target} does not exist")
        for f in _files(target):
            if not _ledger_file(f):
                h.update(f"{f.relative_to(root)}\0{file_digest(f)}\n".encode())
    return h.hexdigest()[:12]


# ---------------------------------------------------------------------------------------------- modules as units


@dataclass
class _Module:
    """A module cut into units: each unit's digest, the dotted names it uses, and the names the module binds."""

    name: str
    package: bool
    digests: dict[str, str] = field(default_factory=dict)  # unit -> digest
    uses: dict[str, set[str]] = field(default_factory=dict)  # unit -> dotted names it uses
    local_imports: dict[str, dict[str, str]] = field(default_factory=dict)  # unit -> {alias: absolute name}
    imports: dict[str, str] = field(default_factory=dict)  # module-level {alias: absolute name}
    binds: dict[str, str] = field(default_factory=dict)  # top-level name -> the unit that binds it


def _absolute(module: str, package: bool, level: int, name: str | None) -> str:
    """The absolute module name of `from <level dots><name> import ...` written in `module`."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    base = parts if package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


def _import_aliases(node: ast.AST, module: str, package: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom):
            base = _absolute(module, package, n.level, n.module)
            for a in n.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    return out


def _uses(node: ast.AST) -> set[str]:
    """The dotted names `node` uses: `a`, `a.b.c` for attribute chains rooted at a name."""
    out: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            # a signature's annotations are never executed (the project writes `from __future__ import
            # annotations`): its defaults, decorators and body are
            args = n.args
            for d in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
                visit(d)
            for child in (*getattr(n, "decorator_list", ()), *(n.body if isinstance(n.body, list) else [n.body])):
                visit(child)
            return
        if isinstance(n, ast.Attribute):
            chain, base = [n.attr], n.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                out.add(".".join([base.id, *reversed(chain)]))
                return
            visit(base)
            return
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            out.add(n.id)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    names = []
    for t in targets:
        names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return names


@functools.lru_cache(maxsize=2048)
def _index_cached(path: str, name: str, package: bool, mtime: int, size: int) -> _Module:
    text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    mod = _Module(name, package)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        mod.digests[INIT] = source_digest(text)  # fails loudly when imported anyway
        mod.uses[INIT] = set()
        return mod
    lines = text.splitlines(keepends=True)
    pieces: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            mod.imports.update(_import_aliases(stmt, name, package))
            continue
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        segment = "".join(lines[first - 1 : stmt.end_lineno])
        names = _bound_names(stmt)
        if names and not isinstance(stmt, ast.Expr):
            unit = names[0] if len(names) == 1 or names[0] not in mod.binds else mod.binds[names[0]]
            for n in names:
                unit = mod.binds.setdefault(n, unit)
        else:
            unit = INIT
            if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Constant):
                mod.imports.update(_import_aliases(stmt, name, package))  # `if TYPE_CHECKING:` and `try:` imports
            for n in ast.walk(stmt):  # names bound inside top-level blocks belong to <init>
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    mod.binds.setdefault(n.name, INIT)
                elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    mod.binds.setdefault(n.id, INIT)
        pieces.setdefault(unit, []).append(segment)
        mod.uses.setdefault(unit, set()).update(_uses(stmt))
        local = _import_aliases(stmt, name, package) if unit != INIT else {}
        if local:
            mod.local_imports.setdefault(unit, {}).update(local)
    for unit, segments in pieces.items():
        mod.digests[unit] = source_digest("".join(segments))
    return mod


class _Finder:
    """Module names to files: core, ipu_model and papers under `root`, and any other top-level package given."""

    def __init__(self, root: Path, extra: Mapping[str, Path] | None = None):
        self.root = root
        self.tops = {t: root for t in FOLLOWED}
        self.tops.update(extra or {})

    def file(self, name: str) -> tuple[Path, bool] | None:
        if name in NOT_COMPUTING:
            return None
        parts = name.split(".")
        base_dir = self.tops.get(parts[0])
        if base_dir is None:
            return None
        base = base_dir.joinpath(*parts)
        if (base / "__init__.py").is_file():
            return base / "__init__.py", True
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py"), False
        return None

    def module(self, name: str) -> _Module | None:
        found = self.file(name)
        if found is None:
            return None
        path, package = found
        st = path.stat()
        return _index_cached(str(path), name, package, st.st_mtime_ns, st.st_size)

    def split(self, dotted: str) -> tuple[str, list[str]] | None:
        """The longest prefix of `dotted` that is a module, and the rest."""
        parts = dotted.split(".")
        if any(".".join(parts[:i]) in NOT_COMPUTING for i in range(1, len(parts) + 1)):
            return None
        for i in range(len(parts), 0, -1):
            if self.file(".".join(parts[:i])) is not None:
                return ".".join(parts[:i]), parts[i:]
        return None


class Closure:
    """The units reachable from some starts (`add`), with their digests: `units` maps 'module:unit' to digest."""

    def __init__(self, root: Path = REPO_ROOT, extra: Mapping[str, Path] | None = None):
        self.finder = _Finder(root, extra)
        self.units: dict[str, str] = {}
        self.modules: set[str] = set()
        self._todo: list[tuple[str, str]] = []
        self.via: dict[str, str] = {}  # unit -> the unit that first reached it (`why`)
        self._at = ""

    # -- starts
    def add(self, spec: str) -> Closure:
        """Add 'module:name' (a unit and what it uses), or 'module' (every unit of it)."""
        module, _, name = spec.partition(":")
        if name:
            self._absolute(f"{module}.{name}")
        else:
            self._whole(module)
        return self._run()

    def add_callable(self, fn: Callable[..., Any]) -> Closure:
        """Add the code a Python callable can reach: a function or class by its module and name; a lambda or
        nested function by its own source and the names it uses in its module; a partial by its function."""
        fn = _unwrap(fn)
        module = getattr(fn, "__module__", None) or ""
        qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "")
        if not module or self.finder.file(module) is None:
            return self
        if "<" not in qualname:
            return self.add(f"{module}:{qualname.split('.')[0]}")
        try:
            src = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            src = ""
        self.units[f"{module}:{qualname}"] = source_digest(src)
        try:
            uses = _uses(ast.parse(src))
        except SyntaxError:  # a lambda cut out of a larger expression
            code = getattr(fn, "__code__", None)
            uses = set(code.co_names) if code is not None else set()
        self._enter(module)
        for dotted in sorted(uses):
            self._use(module, None, dotted)
        return self._run()

    def why(self, unit: str) -> list[str]:
        """The path by which `unit` was reached, from its start."""
        path = [unit]
        while self.via.get(path[-1]) and len(path) < 100:
            path.append(self.via[path[-1]])
        return path[::-1]

    # -- the walk
    def _run(self) -> Closure:
        while self._todo:
            module, unit = self._todo.pop()
            self._at = f"{module}:{unit}"
            mod = self.finder.module(module)
            if mod is None:
                continue
            for dotted in sorted(mod.uses.get(unit, ())):
                self._use(module, unit, dotted)
        return self

    def _take(self, mod: _Module, unit: str, walk: bool = True) -> None:
        """Reach `unit` of `mod` and (with `walk`) what it uses."""
        key = f"{mod.name}:{unit}"
        if key not in self.units and unit in mod.digests:
            self.units[key] = mod.digests[unit]
            self.via[key] = self._at
            if walk:
                self._todo.append((mod.name, unit))

    def _enter(self, module: str) -> None:
        """Reaching a module runs its <init> and those of its enclosing packages."""
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in self.modules:
                continue
            mod = self.finder.module(name)
            if mod is not None:
                self.modules.add(name)
                self._take(mod, INIT)

    def _whole(self, module: str) -> None:
        mod = self.finder.module(module)
        if mod is None:
            return
        self._enter(module)
        for unit in mod.digests:
            self._take(mod, unit)

    def _use(self, module: str, unit: str | None, dotted: str) -> None:
        """`dotted` used in `unit` of `module`."""
        mod = self.finder.module(module)
        if mod is None:
            return
        head, _, rest = dotted.partition(".")
        aliases = {**mod.imports, **(mod.local_imports.get(unit, {}) if unit else {})}
        if unit and head in mod.local_imports.get(unit, {}):
            self._absolute(aliases[head] + ("." + rest if rest else ""))
        elif head in mod.binds:
            self._take(mod, mod.binds[head])
        elif head in aliases:
            self._absolute(aliases[head] + ("." + rest if rest else ""))

    def _absolute(self, dotted: str, depth: int = 0) -> None:
        """An absolute dotted name: a module, or a name bound in one (followed through re-exports)."""
        found = self.finder.split(dotted)
        if found is None or depth > 20:
            return
        module, rest = found
        self._enter(module)
        if not rest:
            self._whole(module)
            return
        mod = self.finder.module(module)
        assert mod is not None
        name = rest[0]
        if name in mod.binds:
            self._take(mod, mod.binds[name])
        elif name in mod.imports:  # a re-export: `from core.sparsity.formats import BlockPattern`
            self._absolute(".".join([mod.imports[name], *rest[1:]]), depth + 1)
        elif "__getattr__" in mod.binds:  # a package that loads its modules on first use: the name it resolves to
            self._take(mod, mod.binds["__getattr__"], walk=False)
            for target in mod.local_imports.get(mod.binds["__getattr__"], {}).values():
                inner = self.finder.split(target)
                if inner is None:
                    continue
                sub = self.finder.module(".".join([inner[0], *inner[1][:1]]) if inner[1] else inner[0])
                sub = sub if sub is not None else self.finder.module(inner[0])
                if sub is not None and (name in sub.binds or name in sub.imports):
                    self._absolute(".".join([sub.name, *rest]), depth + 1)


def _unwrap(fn: Any) -> Any:
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn):
            fn = fn.__func__
        elif hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        elif callable(fn) and not (inspect.isfunction(fn) or inspect.isclass(fn) or inspect.isbuiltin(fn)):
            fn = type(fn)  # a callable object: the code of its class
        else:
            return fn


def units_fingerprint(units: Mapping[str, str]) -> str:
    """12 hex digits of a set of units (and data files): their names and digests, in order."""
    text = "".join(f"{k} {v}\n" for k, v in sorted(units.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def callable_units(fn: Callable[..., Any], root: Path = REPO_ROOT) -> dict[str, str]:
    """'module:unit' -> digest of every unit `fn` can reach (see the module's docstring)."""
    return dict(Closure(root, _extra_tops(fn)).add_callable(fn).units)


def callable_fingerprint(fn: Callable[..., Any], root: Path = REPO_ROOT) -> str:
    """12 hex digits: the code `fn` can reach (`callable_units`) and the data files of core and ipu_model."""
    return units_fingerprint({**callable_units(fn, root), **shared_data(root)})


def _extra_tops(fn: Any) -> dict[str, Path]:
    """The top-level package of `fn`'s module where it is none of core, ipu_model and papers (a test's toy paper)."""
    module = getattr(_unwrap(fn), "__module__", "") or ""
    return _top_dirs([module])


def _top_dirs(modules: Iterable[str]) -> dict[str, Path]:
    import importlib.util

    out = {}
    for module in modules:
        top = module.split(".")[0]
        if not top or top in FOLLOWED or top in out:
            continue
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            out[top] = Path(next(iter(spec.submodule_search_locations))).parent
        elif spec is not None and spec.origin and spec.origin.endswith(".py"):
            out[top] = Path(spec.origin).parent  # a module of its own, as a test writes one
    return out


def current_digests(units: Iterable[str], root: Path = REPO_ROOT, extra: Mapping[str, Path] | None = None) -> dict:
    """The current digest of each 'module:unit' (None where it no longer exists; data files by their path)."""
    finder = _Finder(root, extra)
    out: dict[str, str | None] = {}
    for key in units:
        module, _, unit = key.partition(":")
        if not unit:  # a data file
            path = root / module
            out[key] = file_digest(path) if path.is_file() else None
            continue
        mod = finder.module(module)
        out[key] = None if mod is None else mod.digests.get(unit)
    return out


def changed_units(stored: Mapping[str, str], root: Path = REPO_ROOT) -> list[str]:
    """Which of the stored units (from a record, a checkpoint or a kept result) differ from the checkout's code now:
    [] when the code that made it is unchanged. Units of nested functions and lambdas are checked through the
    top-level unit holding them."""
    tops = _top_dirs(k.partition(":")[0] for k in stored if ":" in k)
    plain = {k: v for k, v in stored.items() if "<" not in k.partition(":")[2] or k.endswith(INIT)}
    now = current_digests(plain, root, tops)
    return sorted(k for k, v in plain.items() if now[k] != v)


# ---------------------------------------------------------------------------------------------- a paper's two


# the code every compute closure starts from beside `run`: how Results are stored
COMPUTE_MACHINERY = ("core.results:to_json", "core.results:from_json")
# the code every decision closure starts from: how a record is decided and written
DECISION_MACHINERY = ("core.record:decide_record",)
DECISION_PARTS = ("config", "results", "claims", "decide", "render")  # Results: how the stored record is rebuilt


def shared_data(root: Path = REPO_ROOT) -> dict[str, str]:
    """The data files under core and ipu_model (vendored tables), path -> digest: every compute fingerprint covers
    them, conservatively."""
    return {
        str(f.relative_to(root)): file_digest(f)
        for d in SHARED
        if (root / d).is_dir()
        for f in _files(root / d)
        if f.suffix != ".py"
    }


def _package(paper, root: Path) -> Path:
    path = paper.module_path("run", root)
    if path is not None:
        return path.parent
    extra = _top_dirs([paper.module("run")])
    top = paper.module("run").split(".")[0]
    return extra[top].joinpath(*paper.module("run").split(".")[:-1]) if top in extra else root / "papers" / paper.name


def paper_data(paper, root: Path = REPO_ROOT, *, decision: bool = False) -> dict[str, str]:
    """The paper's own data files (vendored tables, figure readings), name -> digest: every non-Python file of its
    package that a fingerprint counts, without those only the decision reads (`Paper.decision_data`) unless
    `decision`."""
    package = _package(paper, root)
    if not package.is_dir():
        return {}
    skipped = [] if decision else [package / p for p in getattr(paper, "decision_data", ())]
    base = root if package.is_relative_to(root) else package.parents[len(paper.module("run").split(".")) - 2]
    return {
        str(f.relative_to(base)): file_digest(f)
        for f in _files(package)
        if f.suffix != ".py" and not _ledger_file(f) and not any(f == s or f.is_relative_to(s) for s in skipped)
    }


def compute_units(paper, root: Path = REPO_ROOT) -> dict[str, str]:
    """What a paper's compute fingerprint covers: 'module:unit' -> digest of every unit its `run`, its `Config` (whose
    methods and checks the run's config object carries) and its `Results` type can reach, with how Results are
    stored (COMPUTE_MACHINERY), and its data files by path."""
    closure = Closure(root, _top_dirs([paper.module("run")]))
    for start in (paper.run, paper.config, paper.results, *COMPUTE_MACHINERY):  # what the run calls and returns
        closure.add(start)
    return {**closure.units, **paper_data(paper, root), **shared_data(root)}


def decision_units(paper, root: Path = REPO_ROOT) -> dict[str, str]:
    """What a paper's decision fingerprint covers: every unit its config, claims, decide, render and ledger can
    reach, with how a record is decided and written (DECISION_MACHINERY), and its data files."""
    closure = Closure(root, _top_dirs([paper.module("run")]))
    for part in DECISION_PARTS:
        closure.add(getattr(paper, part))
    if paper.ledger:
        closure.add(paper.module("ledger"))
    for start in DECISION_MACHINERY:
        closure.add(start)
    return {**closure.units, **paper_data(paper, root, decision=True)}


# the code every IPU-step closure starts from beside the paper's `steps`: how a step is lowered, costed and kept
IPU_STEP_MACHINERY = ("ipu_model.steps:cost_steps",)


def ipu_step_units(paper, root: Path = REPO_ROOT) -> dict[str, str]:
    """What a paper's IPU-step fingerprint covers (ipu_model/steps.py): every unit its `ipu_steps` part and the
    costing code can reach, its config's, and its data files; {} for a paper without the part."""
    if not paper.ipu_steps:
        return {}
    closure = Closure(root, _top_dirs([paper.module("ipu_steps")]))
    for start in (paper.ipu_steps, paper.config, *IPU_STEP_MACHINERY):
        closure.add(start)
    return {**closure.units, **paper_data(paper, root), **shared_data(root)}


def compute_fingerprint(paper, root: Path = REPO_ROOT) -> str:
    """12 hex digits: the code a paper's `run` can reach (`compute_units`)."""
    return units_fingerprint(compute_units(paper, root))


def decision_fingerprint(paper, root: Path = REPO_ROOT) -> str:
    """12 hex digits: the code that decides and renders a paper's record (`decision_units`)."""
    return units_fingerprint(decision_units(paper, root))


def modules_of(units: Iterable[str]) -> set[str]:
    """The modules of a set of units ('core.stats:paired_relative_gap' -> 'core.stats'); data files left out."""
    return {k.partition(":")[0] for k in units if ":" in k}


def paper_fingerprint(paper: str, root: Path = REPO_ROOT) -> str:
    """The compute fingerprint of paper `paper` (by name)."""
    from core.paper import find_paper

    return compute_fingerprint(find_paper(f"papers.{paper}"), root=root)


# ---------------------------------------------------------------------------------------------- import closures


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
    """The files of a module of the followed packages and of each package enclosing it."""
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


def dependencies(*paths: str | Path, root: Path = REPO_ROOT, follow: tuple[str, ...] = FOLLOWED) -> tuple[str, ...]:
    """The files `paths` (relative to `root`) import of core, ipu_model and papers, transitively and whole (a
    structural view: the report code must not import the decision, tests/papers/test_protocol.py)."""
    start = [f for p in paths if (root / p).exists() for f in _files(root / p)]
    seen = set(start)
    todo = [f for f in start if f.suffix == ".py"]
    while todo:
        for name in _imported_names(todo.pop()):
            for f in _module_files(name, root, follow):
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
    return tuple(sorted(str(f.relative_to(root)) for f in seen))


def git_state(root: Path = REPO_ROOT) -> tuple[str, bool]:
    """(the checkout's short commit, whether its code differs from that commit): tracked changes and untracked files
    under the code and config directories count (`modified_code`); outputs, the stored results and the documents
    (README.md files, which `make readme` and `make refresh` write) do not. ("", False) outside git."""
    import subprocess

    try:
        commit = _git(root, "rev-parse", "--short", "HEAD").strip()
        return commit, bool(modified_code(root))
    except (OSError, subprocess.SubprocessError):
        return "", False


def modified_code(root: Path = REPO_ROOT) -> list[str]:
    """The code's files that differ from the checkout's commit, untracked ones included: under CODE_PATHS, less the
    files no fingerprint reads (Markdown, bytecode, locks: _SKIPPED_SUFFIXES). Raises OSError or
    subprocess.SubprocessError where git cannot tell."""
    code = [p for p in CODE_PATHS if (root / p).exists()]
    lines = _git(root, "status", "--porcelain", "--untracked-files=normal", "--", *code).splitlines()
    paths = [line[3:].split(" -> ")[-1].strip('"') for line in lines if line.strip()]
    return [p for p in paths if Path(p).suffix not in _SKIPPED_SUFFIXES]


def _git(root: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
    ).stdout


# what a run's code is made of: a change here (committed or not) is a change of the code that made a run
CODE_PATHS = ("core", "ipu_model", "papers", "configs", "scripts", "pyproject.toml", "Makefile")

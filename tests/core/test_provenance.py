"""Results tied to the code that made them (core.provenance): fingerprints of the units a run can reach, hashed as
tokens, so that they are the same on every Python, change when code the run reaches changes, and stay when code it
never reaches changes; and a resumed run that reuses its work or recomputes accordingly."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.paper import find_paper
from core.provenance import (
    Closure,
    callable_units,
    changed_units,
    code_fingerprint,
    compute_units,
    modules_of,
    paper_fingerprint,
    source_digest,
    source_tokens,
    units_fingerprint,
)
from tests.conftest import FIXTURE_CONFIGS, REPO_ROOT, repo_copy
from tests.papers.conftest import PAPERS


def tree(tmp_path):
    pkg = tmp_path / "papers" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Demo."""\n\nSTEPS = 3  # how many\n\n\ndef f(x):\n    return x + 1\n')
    (pkg / "table.json").write_text('{"a": 1}\n')
    (pkg / "README.md").write_text("prose\n")
    return pkg


def test_a_changed_line_of_code_changes_the_fingerprint_and_prose_does_not(tmp_path):
    pkg = tree(tmp_path)
    base = code_fingerprint("papers/demo", root=tmp_path)
    assert len(base) == 12 and base == code_fingerprint("papers/demo", root=tmp_path)

    init = pkg / "__init__.py"
    original = init.read_text()
    init.write_text(original.replace("# how many", "# how many steps").replace('"""Demo."""', '"""Other."""'))
    (pkg / "README.md").write_text("other prose\n")
    (pkg / "ledger.py").write_text("LEDGER = []\n")  # a claim's history does not change what a run computes
    (pkg / "claims.lock.json").write_text("{}\n")
    assert code_fingerprint("papers/demo", root=tmp_path) == base

    init.write_text(original.replace("x + 1", "x + 2"))
    changed = code_fingerprint("papers/demo", root=tmp_path)
    assert changed != base
    init.write_text(original)
    (pkg / "table.json").write_text('{"a": 2}\n')  # vendored data counts byte for byte
    assert code_fingerprint("papers/demo", root=tmp_path) not in (base, changed)


SNIPPET = '''
"""A module docstring."""
import math  # a comment


def f(x, y=(1,
            2)):
    """A docstring."""
    "a bare string statement"
    name = f"{x!r:>{y[0]}} and {f'{y}'}"  # an f-string, nested
    return math.sqrt(x) \\
        + len(name)


class C:
    """Its docstring."""

    value = 1
'''


def test_the_token_form_drops_comments_formatting_and_docstrings_only():
    tokens = source_tokens(SNIPPET)
    assert '"""A docstring."""' not in tokens and '"a bare string statement"' not in tokens
    assert "f\"{x!r:>{y[0]}} and {f'{y}'}\"" in tokens  # one token, as written, on every version
    assert "# a comment" not in " ".join(tokens) and tokens.count(">") == tokens.count("<") == 2
    same = SNIPPET.replace("# a comment", "").replace("(1,\n            2)", "(1, 2)").replace("A docstring", "B")
    assert source_digest(same) == source_digest(SNIPPET)
    for edit in (("x!r", "x!s"), ("value = 1", "value = 2"), ("+ len", "- len"), ("    value", "    valu")):
        assert source_digest(SNIPPET.replace(*edit)) != source_digest(SNIPPET), edit
    assert source_digest("def f(:\n") == source_digest("def f(:\n")  # what does not tokenize is hashed as text


def other_pythons() -> list[str]:
    """Interpreters of other Python versions on this machine (PATH, pyenv), one per minor version."""
    found = {}
    for minor in (11, 12, 13, 14):
        if (3, minor) == sys.version_info[:2]:
            continue
        candidates = [shutil.which(f"python3.{minor}")]
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
        for c in candidates:
            if c and subprocess.run([c, "-c", "import tokenize"], capture_output=True).returncode == 0:
                found[minor] = c
                break
    return list(found.values())


FINGERPRINTS = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from core.paper import find_paper
from core.provenance import compute_fingerprint, decision_fingerprint, source_digest
out = {{p: [compute_fingerprint(find_paper("papers." + p)), decision_fingerprint(find_paper("papers." + p))]
        for p in {PAPERS!r}}}
out["snippet"] = source_digest({SNIPPET!r})
print(json.dumps(out))
"""


def test_every_papers_fingerprints_are_the_same_on_every_python():
    """Python 3.11, 3.12 and 3.13 (those this machine has) give every paper the same compute and decision
    fingerprints: the provenance module reads tokens, not ast.dump, and imports nothing outside the standard
    library (the other interpreters have no packages)."""
    pythons = other_pythons()
    if not pythons:
        pytest.skip("no Python but this one here (python3.12/3.13 on PATH or under ~/.pyenv/versions)")
    runs = [
        subprocess.Popen([py, "-I", "-c", FINGERPRINTS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for py in [sys.executable, *pythons]
    ]
    outs = []
    for py, p in zip([sys.executable, *pythons], runs, strict=True):
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, f"{py}: {stderr[-2000:]}"
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert all(o == outs[0] for o in outs[1:]), {py: o for py, o in zip([sys.executable, *pythons], outs, strict=True)}
    assert outs[0]["prng"][0] == paper_fingerprint("prng")


def test_a_paper_fingerprint_covers_the_units_its_run_reaches():
    spec = find_paper("papers.prng")
    units = compute_units(spec)
    assert paper_fingerprint("prng") == units_fingerprint(units)
    modules = modules_of(units)
    assert {"papers.prng.run", "papers.prng.battery", "core.random.xoroshiro", "core.results"} <= modules
    assert (
        not {"papers.prng.claims", "papers.prng.report", "core.runner", "core.record", "core.numerics.cast"} & modules
    )
    assert "papers.prng.run:run" in units and "core.results:to_json" in units
    assert "core/packing/data/histograms.json" in units  # every data file of core, conservatively
    assert not [u for u in units if u.startswith(("core.provenance:", "core.progress:"))]  # they compute nothing


def shared_tree(root: Path) -> Path:
    """papers/demo's run calls core.a.f through a function-level import; f uses core.sub.b.g through a module
    import, SCALE, and core.sub's re-export of core.sub.b.k; core.a.h (which uses core.c) and UNUSED are named by
    nobody; core.lazy loads core.lazy.impl on first use through __getattr__."""
    files = {
        "papers/__init__.py": "",
        "papers/demo/__init__.py": "",
        "papers/demo/run.py": "def run(cfg, ctx):\n    from core.a import f\n\n    return f() + lazy_value()\n\n\n"
        "def lazy_value():\n    from core import lazy\n\n    return lazy.triple(1)\n",
        "core/__init__.py": "",
        "core/a.py": "import numpy\nfrom core.sub import b, k\nfrom core import c\n\nSCALE = 2\nUNUSED = 5\n\n\n"
        "def f():\n    return SCALE * b.g() + k()\n\n\ndef h():\n    return c.X\n",
        "core/sub/__init__.py": "import os\n\nfrom core.sub.b import k\n\nREGISTRY = {}\n"
        "os.environ.setdefault('DEMO', '1')\n",
        "core/sub/b.py": "def g():\n    return 1\n\n\ndef k():\n    return 2\n\n\ndef unused():\n    return 3\n",
        "core/c.py": "X = 1\n",
        "core/lazy/__init__.py": "def __getattr__(name):\n    from core.lazy import impl\n\n"
        "    return getattr(impl, name)\n",
        "core/lazy/impl.py": "def triple(x):\n    return 3 * x\n\n\ndef double(x):\n    return 2 * x\n",
        "core/sub/table.json": "{}\n",
        "ipu_model/__init__.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_closure_follows_what_is_used_across_modules_and_no_more(tmp_path):
    root = shared_tree(tmp_path)

    def units():
        return Closure(root).add("papers.demo.run:run").units

    base = units()
    assert set(base) == {
        "papers.demo.run:run", "papers.demo.run:lazy_value", "core.a:f", "core.a:SCALE", "core.sub.b:g",
        "core.sub.b:k", "core.sub:<init>", "core.lazy:__getattr__", "core.lazy.impl:triple",
    }  # fmt: skip
    unchanged = [
        ("core/c.py", "X = 1\n", "X = 2\n"),  # imported by core.a, used by nobody the run reaches
        ("core/a.py", "return c.X", "return c.X + 1"),  # a function of a reached module that nothing calls
        ("core/a.py", "UNUSED = 5", "UNUSED = 6"),
        ("core/sub/__init__.py", "REGISTRY = {}", "REGISTRY = {'x': 1}"),  # bound, used by nobody
        ("core/sub/b.py", "return 3", "return 4"),
        ("core/lazy/impl.py", "2 * x", "4 * x"),
        ("core/a.py", "def f():", "# a comment\ndef f():"),
    ]
    changed = [
        ("core/sub/b.py", "return 1", "return 2"),  # through a module import
        ("core/sub/b.py", "return 2\n\n\ndef unused", "return 5\n\n\ndef unused"),  # through a re-export
        ("core/a.py", "SCALE = 2", "SCALE = 3"),  # a constant the function uses
        ("core/sub/__init__.py", "'DEMO', '1'", "'DEMO', '2'"),  # what importing the package does
        ("core/lazy/impl.py", "3 * x", "5 * x"),  # through a package's __getattr__
        ("papers/demo/run.py", "return lazy.triple(1)", "return lazy.triple(2)"),
    ]
    for rel, old, new in unchanged + changed:
        path = root / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new))
        assert (units_fingerprint(units()) == units_fingerprint(base)) == ((rel, old, new) in unchanged), (rel, old)
        now = units()
        assert changed_units(base, root=root) == sorted(k for k in base if now.get(k) != base[k])
        path.write_text(text)
    assert units() == base


def test_a_lambda_and_a_partial_are_fingerprinted_by_what_they_reach(tmp_path, monkeypatch):
    root = shared_tree(tmp_path)
    (root / "papers/demo/stage.py").write_text(
        "import functools\n\nfrom core.a import f\n\n\ndef stage(n):\n    return n * f()\n\n\n"
        "PARTIAL = functools.partial(stage, 2)\nLAMBDA = lambda: stage(3)  # noqa: E731\n"
    )
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m.split(".")[0] in ("papers", "core")]:
        monkeypatch.delitem(sys.modules, name)
    import importlib

    stage = importlib.import_module("papers.demo.stage")
    for fn in (stage.PARTIAL, stage.LAMBDA, stage.stage):
        units = callable_units(fn, root=root)
        assert {"core.a:f", "core.sub.b:g"} <= set(units), fn
        assert "core.lazy.impl:triple" not in units


# -------------------------------------------------------------------------------------------- a resumed toy run


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


@pytest.mark.slow  # ~43 s (2026-11-29): seven toy runs; make test keeps what it rests on: which edits change the
# fingerprint (test_the_closure_follows_what_is_used_across_modules_and_no_more, tests/core/test_record.py::
# test_the_two_fingerprints_follow_the_code_each_side_runs), work keyed by it (tests/core/test_memo.py::
# test_a_change_to_reached_code_recomputes_and_to_other_code_reuses) and a resumed run (tests/core/test_runner.py::
# test_a_crashed_run_resumes_from_its_checkpoint)
def test_a_resume_reuses_work_unless_code_the_run_executes_changed(tmp_path):
    """A toy run crashes after checkpointing 2 of 4 chunks, in a copy of the repository. Each copy of the crashed
    run is resumed after one edit: with none, after a change to decision code, and after a change to a core function
    the run never executes (core.numerics.mx.mx_encode) it continues from chunk 2 and its record is current; after a
    change to a core function it executes (core.train.fit) or to its own run it starts again from 0."""
    repo = repo_copy(tmp_path)
    pkg_root = tmp_path / "pkg"
    copy = pkg_root / "toy_copy"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "toy_paper", copy)
    for py in copy.glob("*.py"):  # the copy names its own parts
        py.write_text(py.read_text().replace("tests.fixtures.toy_paper", "toy_copy"))
    env = {**os.environ, "PYTHONPATH": str(pkg_root)}
    common = ["paper=toy", "paper.module=toy_copy", "toy.chunks=4", "toy.samples_per_chunk=2000", "logger=none"]

    def cli(output_root: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
        cmd = [sys.executable, str(repo / "scripts" / "reproduce.py"), *common, f"output_root={output_root}"]
        cmd.append(f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]")
        return subprocess.run(
            cmd, cwd=repo, capture_output=True, text=True, timeout=300, env={**env, **(extra_env or {})}
        )

    crashed_root = tmp_path / "crashed"
    crashed = cli(crashed_root, {"TOY_CRASH_AFTER_CHUNK": "2"})
    assert crashed.returncode != 0 and "simulated crash after chunk 2" in crashed.stderr

    edits = [
        ("same", None, 2),
        ("decision", (copy / "claims.py", "return float(4 * results", "return float(4.0 * results"), 2),
        ("a comment in executed core", (repo / "core/train.py", "    start = 0\n", "    start = 0  # from\n"), 2),
        ("unexecuted core", (repo / "core/numerics/mx.py", 'x = as_float32(x, "mx_encode")', "x = 1.0 * x"), 2),
        ("executed core", (repo / "core/train.py", "    start = 0\n", "    start = 0 * 1\n"), 0),
        ("own run", (copy / "run.py", "hits = hits.copy()", "hits = np.array(hits, copy=True)"), 0),
    ]
    estimates = []
    for name, edit, resumed_from in edits:
        out = tmp_path / name.replace(" ", "_")
        shutil.copytree(crashed_root, out, symlinks=True)
        if edit:
            replace_in(*edit)
        resumed = cli(out)
        if edit:
            replace_in(edit[0], edit[2], edit[1])
        assert resumed.returncode == 0, (name, resumed.stderr[-3000:])
        record = json.loads((out / "toy" / "latest" / "results.json").read_text())
        assert record["results"]["resumed_from_chunk"] == resumed_from, name
        assert ("computed by other code" in resumed.stdout + resumed.stderr) == (resumed_from == 0), name
        checkpoints = sorted(p.name for p in (out / "toy" / "checkpoints").iterdir())
        assert any(record["compute_fingerprint"] in c for c in checkpoints)
        estimates.append(json.loads((out / "toy" / "latest" / "claims.json").read_text())["estimates"]["pi"])
    assert len(set(estimates)) == 1


# -------------------------------------------------------------------------------------------- static covers executed


def executed_outside_closure(paper_module: str, overrides: list[str]) -> tuple[set[str], int]:
    """Run a paper's computation with a tracer on, and return the units of the repository's functions it executed
    that its compute closure does not hold (and how many functions of the repository ran). Functions called while a
    module of the repository is being imported (its top level binds names a run may not use) or by the import system
    itself, module and class bodies, and core.paper (the caller of `run`) are left out."""
    import threading

    from core.context import RunContext
    from core.launch import load_config
    from core.provenance import INIT, _Finder

    spec = find_paper(paper_module)
    cfg = load_config(overrides)
    root = str(REPO_ROOT) + os.sep
    ours = tuple(root + d + os.sep for d in ("core", "ipu_model", "papers", "tests"))
    seen: dict = {}

    def importing(frame) -> bool:
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.startswith(ours):
                return True
            frame = frame.f_back
        return False

    def tracer(frame, event, arg):
        code = frame.f_code
        if code not in seen and code.co_filename.startswith(ours):
            # the import system asks a package's __getattr__ for a submodule before importing it: not a use
            machinery = frame.f_back is not None and frame.f_back.f_code.co_name == "_handle_fromlist"
            seen[code] = machinery or importing(frame.f_back)
        return None

    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        spec.compute(cfg, RunContext.detached())
    finally:
        sys.settrace(None)
        threading.settrace(None)
    static = compute_units(spec)
    finder = _Finder(REPO_ROOT, {"tests": REPO_ROOT})
    missing, ran = set(), 0
    for code, at_import in seen.items():
        rel = code.co_filename[len(root) :]
        if at_import or code.co_name == "<module>" or not code.co_flags & 0x1:  # 0x1: CO_OPTIMIZED, a function
            continue
        module = rel.removesuffix(".py").replace(os.sep, ".").removesuffix(".__init__")
        mod = finder.module(module)
        if mod is None or module == "core.paper":
            continue
        ran += 1
        unit = mod.binds.get(code.co_qualname.split(".")[0], INIT)
        if f"{module}:{unit}" not in static:
            missing.add(f"{module}:{unit} ({code.co_qualname})")
    return missing, ran


def test_every_function_the_toy_run_executes_is_in_its_compute_closure():
    overrides = ["paper=toy", "toy.chunks=2", f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]"]
    missing, ran = executed_outside_closure("tests.fixtures.toy_paper", overrides)
    assert ran > 10 and missing == set()


@pytest.mark.slow
@pytest.mark.parametrize("paper", PAPERS)
def test_every_function_a_papers_smoke_run_executes_is_in_its_compute_closure(paper):
    """The static closure holds all that runs: a paper's smoke run, traced (slow: every paper computes)."""
    missing, ran = executed_outside_closure(f"papers.{paper}", [f"paper={paper}", "scale=smoke"])
    assert ran > 50 and missing == set()


def test_modified_code_counts_code_and_configs_but_not_the_documents_make_readme_writes(tmp_path):
    """A run's record says "modified" (and cannot become a reference) when the code differs from its commit; the
    READMEs that `make readme` and `make refresh` rewrite between two papers' runs are not code."""
    import subprocess

    from core.provenance import git_state, modified_code

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    for name, text in {"core/x.py": "X = 1\n", "papers/p/README.md": "# p\n", "configs/a.yaml": "a: 1\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x")
    assert modified_code(tmp_path) == [] and git_state(tmp_path)[1] is False
    (tmp_path / "papers/p/README.md").write_text("# p, rewritten by make readme\n")
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs/run.json").write_text("{}")
    assert modified_code(tmp_path) == [] and git_state(tmp_path)[1] is False
    (tmp_path / "papers/p/new.py").write_text("Y = 2\n")
    (tmp_path / "configs/a.yaml").write_text("a: 2\n")
    assert sorted(modified_code(tmp_path)) == ["configs/a.yaml", "papers/p/new.py"]
    assert git_state(tmp_path)[1] is True

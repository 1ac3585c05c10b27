"""Results tied to code: core.provenance's fingerprints, and a resumed run that recomputes after a change to its
computing code and reuses its work after a change to its decision code."""

from __future__ import annotations

import json
import shutil

from core.paper import find_paper
from core.provenance import code_fingerprint, compute_dependencies, dependencies, paper_fingerprint
from tests.conftest import REPO_ROOT


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


def test_a_paper_fingerprint_covers_what_its_run_imports_of_the_paper_and_of_core():
    full = paper_fingerprint("prng")
    deps = compute_dependencies(find_paper("papers.prng"))
    assert full == code_fingerprint(*deps)
    assert {"core/random/xoroshiro.py", "core/random/__init__.py", "core/__init__.py", "core/context.py"} <= set(deps)
    assert {"papers/prng/run.py", "papers/prng/battery.py", "core/results.py"} <= set(deps)
    assert not {"papers/prng/claims.py", "papers/prng/report.py", "core/runner.py", "core/record.py"} & set(deps)
    assert "core/packing/data/histograms.json" in deps  # every data file of core, conservatively
    assert "core/numerics/formats.py" not in deps  # the PRNG paper never imports the number formats
    assert paper_fingerprint("prng", "papers/prng/battery.py") != full  # a stage may declare a narrower set


def shared_tree(tmp_path):
    """papers/demo imports core.a inside a function; core.a imports core.sub.b; core.c is imported by nobody."""
    files = {
        "papers/demo/__init__.py": "def run():\n    from core.a import f\n    return f()\n",
        "core/__init__.py": "",
        "core/a.py": "import numpy\nfrom core.sub import b\n\ndef f():\n    return b.g()\n",
        "core/sub/__init__.py": "",
        "core/sub/b.py": "def g():\n    return 1\n",
        "core/c.py": "X = 1\n",
        "core/sub/table.json": "{}\n",
        "ipu_model/__init__.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_import_closure_follows_function_level_and_nested_imports(tmp_path):
    root = shared_tree(tmp_path)
    deps = dependencies("papers/demo", root=root)
    assert deps == (
        "core/__init__.py",
        "core/a.py",
        "core/sub/__init__.py",
        "core/sub/b.py",
        "core/sub/table.json",
        "papers/demo/__init__.py",
    )

    def fingerprint():
        return code_fingerprint(*dependencies("papers/demo", root=root), root=root)

    base = fingerprint()
    (root / "core/c.py").write_text("X = 2\n")  # not imported: the paper's results stay current
    assert fingerprint() == base
    (root / "core/sub/b.py").write_text("def g():\n    return 2\n")  # imported through core.a
    assert fingerprint() != base


def test_a_resumed_run_recomputes_after_a_compute_change_and_not_after_a_decision_change(cli, tmp_path):
    """A run crashes after checkpointing 2 of 4 chunks; resumed with the same code it continues from chunk 2; with
    one line of the decision code changed it still continues from chunk 2 (the computation is the same); with one
    line of the computing code changed it starts again from 0. The three resume copies of the one crashed run."""
    pkg_root = tmp_path / "pkg"
    copy = pkg_root / "toy_copy"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "toy_paper", copy)
    for py in copy.glob("*.py"):  # the copy names its own parts
        py.write_text(py.read_text().replace("tests.fixtures.toy_paper", "toy_copy"))
    env = {"PYTHONPATH": str(pkg_root)}
    common = ["paper=toy", "paper.module=toy_copy", "toy.chunks=4", "toy.samples_per_chunk=2000", "logger=none"]
    crashed_root = tmp_path / "crashed"
    crashed = cli([*common, f"output_root={crashed_root}"], env={**env, "TOY_CRASH_AFTER_CHUNK": "2"})
    assert crashed.returncode != 0 and "simulated crash after chunk 2" in crashed.stderr

    def result(root):
        return json.loads((root / "toy" / "latest" / "results.json").read_text())

    estimates = []
    for name, edit, resumed_from in (("same", None, 2), ("decision", "claims.py", 2), ("compute", "run.py", 0)):
        out = tmp_path / name
        shutil.copytree(crashed_root, out, symlinks=True)
        if edit:
            (copy / edit).write_text((copy / edit).read_text() + "\nCHANGED = 1\n")
        resumed = cli([*common, f"output_root={out}"], env=env)
        assert resumed.returncode == 0, resumed.stderr
        record = result(out)
        assert record["results"]["resumed_from_chunk"] == resumed_from, name
        assert ("computed by other code" in resumed.stdout + resumed.stderr) == (edit == "run.py"), name
        checkpoints = sorted(p.name for p in (out / "toy" / "checkpoints").iterdir())
        assert any(record["compute_fingerprint"] in c for c in checkpoints)
        estimates.append(json.loads((out / "toy" / "latest" / "claims.json").read_text())["estimates"]["pi"])
    assert estimates[0] == estimates[1] == estimates[2]

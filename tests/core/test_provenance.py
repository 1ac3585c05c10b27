"""Results tied to code: core.provenance's fingerprints, and a resumed run that recomputes after a code change."""

from __future__ import annotations

import json
import shutil

from core.provenance import code_fingerprint, dependencies, paper_fingerprint
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


def test_a_paper_fingerprint_covers_its_package_and_what_it_imports_of_core():
    full = paper_fingerprint("prng")
    deps = dependencies("papers/prng")
    assert full == code_fingerprint(*deps)
    assert {"core/random/xoroshiro.py", "core/random/__init__.py", "core/__init__.py", "core/runner.py"} <= set(deps)
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
    base = paper_fingerprint("demo", root=root)
    (root / "core/c.py").write_text("X = 2\n")  # not imported: the paper's results stay current
    assert paper_fingerprint("demo", root=root) == base
    (root / "core/sub/b.py").write_text("def g():\n    return 2\n")  # imported through core.a
    assert paper_fingerprint("demo", root=root) != base


def test_a_resumed_run_recomputes_after_a_code_change(cli, tmp_path):
    """The demonstration the issue asks for: a run crashes after checkpointing 2 of 4 chunks; resumed with the same
    code it continues from chunk 2; with one line of the paper's code changed it starts again from 0."""
    pkg_root = tmp_path / "pkg"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "toy_paper", pkg_root / "toy_copy")
    init = pkg_root / "toy_copy" / "__init__.py"
    # the config schema registered for paper=toy is the fixture's class: the copy uses the same one
    init.write_text(init.read_text() + "\nfrom tests.fixtures.toy_paper import Config  # noqa: E402, F811\n")
    env = {"PYTHONPATH": str(pkg_root)}
    common = ["paper=toy", "paper.module=toy_copy", "toy.chunks=4", "toy.samples_per_chunk=2000", "logger=none"]

    def result(root):
        return json.loads((root / "toy" / "latest" / "results.json").read_text())

    for name, edit in (("same", None), ("changed", "x")):
        out = tmp_path / name
        crashed = cli([*common, f"output_root={out}"], env={**env, "TOY_CRASH_AFTER_CHUNK": "2"})
        assert crashed.returncode != 0 and "simulated crash after chunk 2" in crashed.stderr
        if edit:
            init.write_text(init.read_text() + "\nCHANGED = 1\n")
        resumed = cli([*common, f"output_root={out}"], env=env)
        assert resumed.returncode == 0, resumed.stderr
        record = result(out)
        if edit:
            assert record["metrics"]["resumed_from_chunk"] == 0
            assert "computed by other code" in resumed.stdout + resumed.stderr
        else:
            assert record["metrics"]["resumed_from_chunk"] == 2
        checkpoints = sorted(p.name for p in (out / "toy" / "checkpoints").iterdir())
        assert record["code_fingerprint"] in checkpoints[-1] or any(
            record["code_fingerprint"] in c for c in checkpoints
        )
    assert result(tmp_path / "same")["metrics"]["pi_estimate"] == result(tmp_path / "changed")["metrics"]["pi_estimate"]

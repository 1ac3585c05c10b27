"""`python -m ipu_model`: profiles a planned matmul, checks it against numpy and writes the profile files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ipu_model.__main__ import build_parser
from tests.conftest import REPO_ROOT


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ipu_model", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


def test_matmul_profile_files(tmp_path):
    r = _cli("--tiles", "32", "--out", str(tmp_path), "matmul", "96", "80", "72", "--dtype", "float32")
    assert r.returncode == 0, r.stderr
    assert "tile grid" in r.stdout and "matmul/multiply" in r.stdout
    error = float(r.stdout.split("max relative error vs float64 ")[1].split(";")[0])
    assert error < 1e-5  # float32 accumulation of 80 products
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert profile["totals"]["cycles"] > 0 and profile["device"] == "mk2"
    assert (tmp_path / "profile.png").stat().st_size > 1000
    assert (tmp_path / "profile.txt").read_text().startswith("matmul 96x80x72 float32")


def test_bad_sizes_are_rejected():
    r = _cli("matmul", "0", "8", "8")
    assert r.returncode == 2 and "matmul sizes must be positive" in r.stderr


@pytest.mark.parametrize(
    "order",
    [
        ["--out", "{out}", "--device", "mk1", "matmul", "64", "64", "64"],  # the global options first
        ["matmul", "64", "64", "64", "--out", "{out}", "--device", "mk1"],  # after the command, as the README has it
    ],
    ids=["options-first", "options-last"],
)
def test_global_options_before_or_after_the_command(tmp_path, order):
    out = tmp_path / "profile"
    r = _cli(*(a.format(out=out) for a in order))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["profile.json", "profile.png", "profile.txt"]
    assert json.loads((out / "profile.json").read_text())["device"] == "mk1"  # not the default mk2
    assert f"wrote {out}/profile.txt" in r.stdout


@pytest.mark.parametrize(
    ("argv", "device", "tiles", "out"),
    [
        (["ops"], "mk2", None, None),  # the defaults
        (["--device", "bow", "--tiles", "46", "--out", "d", "ops"], "bow", 46, Path("d")),
        (["ops", "--device", "bow", "--tiles", "46", "--out", "d"], "bow", 46, Path("d")),
        (["--device", "bow", "ops", "--out", "d"], "bow", None, Path("d")),  # one before, one after: both stand
        (["--tiles", "8", "matmul", "2", "3", "4", "--device", "mk1"], "mk1", 8, None),
        (["--device", "bow", "ops", "--device", "mk1"], "mk1", None, None),  # given twice: the later one
    ],
)
def test_parsed_options(argv, device, tiles, out):
    args = build_parser().parse_args(argv)
    assert (args.device, args.tiles, args.out) == (device, tiles, out)


def test_bad_tiles_are_rejected():
    r = _cli("matmul", "8", "8", "8", "--tiles", "0")
    assert r.returncode == 2 and "--tiles must be a positive tile count, got 0" in r.stderr


def test_jax_command_costs_a_users_function_and_checks_it_against_jax(tmp_path):
    (tmp_path / "userfn.py").write_text(
        "import jax, jax.numpy as jnp\n"
        "def attend(q, k):\n"
        "    return jax.nn.softmax(jnp.einsum('hd,hsd->hs', q, k), axis=-1)\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "ipu_model", "jax", "userfn:attend", "--shapes", "f32[2,16]", "f32[2,40,16]",
         "--evaluate", "--tiles", "16", "--out", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert head.startswith("userfn:attend at f32[2,16] f32[2,40,16] on mk2: ") and " cycles = " in head
    assert float(head.split("largest difference from JAX ")[1]) < 1e-6
    data = json.loads((tmp_path / "out" / "profile.json").read_text())
    assert data["cost"]["fits"] and data["cost"]["primitives"]["dot_general"] == 1
    assert (tmp_path / "out" / "profile.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "args, message",
    [(["nocolon", "--shapes", "f32[2]"], "name the function as MODULE:FUNCTION"),
     (["json:nothere", "--shapes", "f32[2]"], "json has no attribute 'nothere'"),
     (["json:dumps", "--shapes", "f64[2]"], "write DTYPE[d0,d1,...] with DTYPE one of")],
)  # fmt: skip
def test_jax_command_rejects_bad_targets_and_shapes(args, message):
    r = _cli("jax", *args)
    assert r.returncode == 2 and message in r.stderr

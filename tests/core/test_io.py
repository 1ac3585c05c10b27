import json
import os
import stat

import pytest

from core.io import atomic_symlink, atomic_write, atomic_write_json, atomic_write_text


def test_atomic_write_replaces_and_leaves_no_temporaries(tmp_path):
    p = tmp_path / "sub" / "a.txt"
    atomic_write_text(p, "one")
    atomic_write_text(p, "two")
    assert p.read_text() == "two"
    assert [x.name for x in p.parent.iterdir()] == ["a.txt"]
    mode = stat.S_IMODE(p.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # not mkstemp's 0600


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "a.txt"
    atomic_write_text(p, "old")

    def explode(f):
        f.write(b"partial")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(p, explode)
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["a.txt"]


def test_json_is_strict(tmp_path):
    atomic_write_json(tmp_path / "r.json", {"a": [1, 2.5]})
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": [1, 2.5]}
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "bad.json", {"a": float("nan")})
    assert not (tmp_path / "bad.json").exists()


def test_symlink_is_relative_and_replaced(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    link = atomic_symlink(tmp_path / "run1", tmp_path / "latest")
    assert os.readlink(link) == "run1"
    atomic_symlink(tmp_path / "run2", tmp_path / "latest")
    assert os.readlink(link) == "run2" and link.resolve() == (tmp_path / "run2").resolve()

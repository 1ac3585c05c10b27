import numpy as np
import pytest

from core.checkpoint import Checkpointer, CheckpointError


def state(v=0.0):
    return {"params": {"w": np.full((2, 3), v, np.float32), "b": np.arange(3)}, "step": np.int64(7)}


def test_roundtrip_restores_values_and_dtypes(tmp_path):
    ck = Checkpointer(tmp_path)
    assert ck.latest_step() is None
    s = state(1.5)
    ck.save(10, s, metadata={"loss": 0.25})
    step, back, meta = ck.restore(state())
    assert step == 10 and meta == {"loss": 0.25}
    np.testing.assert_array_equal(back["params"]["w"], s["params"]["w"])
    assert back["params"]["w"].dtype == np.float32
    np.testing.assert_array_equal(back["params"]["b"], np.arange(3))
    back["params"]["w"][0, 0] = 2.0  # restored arrays are writable: a resumed run updates them in place


def test_keeps_the_newest_and_restores_the_latest(tmp_path):
    ck = Checkpointer(tmp_path, keep=2)
    for step in (1, 2, 3):
        ck.save(step, state(step))
    assert ck.steps() == [2, 3]
    step, back, _ = ck.restore(state())
    assert step == 3 and back["params"]["w"][0, 0] == 3
    assert ck.restore(state(), step=2)[1]["params"]["w"][0, 0] == 2


def test_temporary_files_from_a_killed_save_are_ignored(tmp_path):
    ck = Checkpointer(tmp_path)
    ck.save(1, state(1))
    (tmp_path / ".step_000000002.msgpack.abc.tmp").write_bytes(b"torn")
    assert ck.latest_step() == 1
    assert ck.restore(state())[0] == 1


def test_mismatched_structure_or_shape_is_an_error(tmp_path):
    ck = Checkpointer(tmp_path)
    ck.save(1, state())
    with pytest.raises(CheckpointError, match="shape"):
        ck.restore({"params": {"w": np.zeros((3, 3), np.float32), "b": np.arange(3)}, "step": np.int64(0)})
    with pytest.raises(CheckpointError, match="does not match"):
        ck.restore({"other": np.zeros(2)})
    with pytest.raises(CheckpointError, match="no checkpoint for step 5"):
        ck.restore(state(), step=5)
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        Checkpointer(tmp_path / "empty").restore(state())

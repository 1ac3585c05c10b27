from types import SimpleNamespace

from core.tracking import Tracker, WandbTracker, activate, active_tracker, log_metrics, make_tracker


class Recorder(Tracker):
    def __init__(self):
        self.logged = []

    def log(self, metrics, step=None, axis=None):
        self.logged.append((dict(metrics), step, axis))


def test_log_metrics_goes_to_the_active_tracker_only_inside_a_run():
    log_metrics({"loss": 1.0})  # outside a run: a no-op, not an error
    rec = Recorder()
    with activate(rec):
        assert active_tracker() is rec
        log_metrics({"loss": 0.5}, step=3)
        log_metrics({"loss": 0.4}, step=1, axis="arm")
    log_metrics({"loss": 0.25})
    assert rec.logged == [({"loss": 0.5}, 3, None), ({"loss": 0.4}, 1, "arm")]
    assert type(active_tracker()) is Tracker


def test_logger_none_and_disabled_make_no_wandb_run(tmp_path):
    for name, mode in (("none", "offline"), ("wandb", "disabled")):
        t = make_tracker(SimpleNamespace(name=name, mode=mode), run_dir=tmp_path, name="x", group="g", config={})
        assert type(t) is Tracker
    assert not (tmp_path / "wandb").exists()


class FakeRun:
    def __init__(self):
        self.calls = []

    def define_metric(self, name, step_metric=None):
        self.calls.append(("define", name, step_metric))

    def log(self, data, step=None):
        self.calls.append(("log", data, step))


def test_wandb_logs_each_axis_against_its_own_step():
    """Two loops of one run each count from step 1: each gets an axis of its own (wandb's one global step would
    drop the second loop's records as going backwards)."""
    t = object.__new__(WandbTracker)
    t._run, t._axes = FakeRun(), set()
    for axis in ("a", "b"):
        for step in (1, 2):
            t.log({"loss": 1.0 / step, "text": "x"}, step=step, axis=axis)
    t.log({"total": 3}, step=7)
    assert t._run.calls == [
        ("define", "a/step", None),
        ("define", "a/*", "a/step"),
        ("log", {"a/step": 1, "a/loss": 1.0}, None),
        ("log", {"a/step": 2, "a/loss": 0.5}, None),
        ("define", "b/step", None),
        ("define", "b/*", "b/step"),
        ("log", {"b/step": 1, "b/loss": 1.0}, None),
        ("log", {"b/step": 2, "b/loss": 0.5}, None),
        ("log", {"total": 3}, 7),
    ]

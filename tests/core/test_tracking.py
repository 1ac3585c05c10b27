from types import SimpleNamespace

from core.tracking import Tracker, activate, active_tracker, log_metrics, make_tracker


class Recorder(Tracker):
    def __init__(self):
        self.logged = []

    def log(self, metrics, step=None):
        self.logged.append((dict(metrics), step))


def test_log_metrics_goes_to_the_active_tracker_only_inside_a_run():
    log_metrics({"loss": 1.0})  # outside a run: a no-op, not an error
    rec = Recorder()
    with activate(rec):
        assert active_tracker() is rec
        log_metrics({"loss": 0.5}, step=3)
    log_metrics({"loss": 0.25})
    assert rec.logged == [({"loss": 0.5}, 3)]
    assert type(active_tracker()) is Tracker


def test_logger_none_and_disabled_make_no_wandb_run(tmp_path):
    for name, mode in (("none", "offline"), ("wandb", "disabled")):
        t = make_tracker(SimpleNamespace(name=name, mode=mode), run_dir=tmp_path, name="x", group="g", config={})
        assert type(t) is Tracker
    assert not (tmp_path / "wandb").exists()

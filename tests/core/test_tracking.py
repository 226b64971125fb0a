"""posbench/core/tracking.py: nothing is tracked by default; the logger settings are checked in one line."""

import pytest

from posbench.core.errors import PosbenchError
from posbench.core.tracking import LoggerConfig, Tracker, make_tracker


def test_logger_none_tracks_nothing_and_writes_nothing(tmp_path):
    tracker = make_tracker(LoggerConfig(), "rope_x", tmp_path, {"encoding": {"name": "rope"}})
    assert type(tracker) is Tracker
    tracker.log({"loss": 1.0}, step=3)
    tracker.log_records("perplexity", [{"variant": "rope", "ppl": 5.0}])
    tracker.log_records("task", [{"variant": "rope", "exact": 1.0}])
    tracker.finish()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cfg, message", [
    (LoggerConfig(name="tensorboard"), "unknown logger 'tensorboard'; valid: none, wandb"),
    (LoggerConfig(name="wandb", mode="cloud"), "unknown logger.mode 'cloud'; valid: offline, online, disabled"),
])
def test_bad_logger_settings_are_one_line(cfg, message):
    LoggerConfig(name="wandb").check()
    with pytest.raises(PosbenchError) as e:
        cfg.check()
    assert str(e.value) == message

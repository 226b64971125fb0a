"""posbench/core/progress.py: a bar on a terminal, plain log lines elsewhere (every tenth of the work
or every 30 seconds)."""

import sys


def test_plain_progress_every_tenth_or_every_30_seconds(caplog):
    import logging

    from posbench.core.progress import PlainProgress

    now = [0.0]
    bar = PlainProgress(range(100), total=100, desc="train rope L=64", unit="step", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="posbench"):
        for step in bar:
            now[0] += 0.1
            bar.set_postfix(loss=f"{2 - step / 100:.3f}", tok_s="1,000")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 10 and lines[0].startswith("train rope L=64: step 10/100 (10%), loss 1.910, 1,000 tokens/s, ETA 0:00:09")
    assert lines[-1] == "train rope L=64: step 100/100 (100%), loss 1.010, 1,000 tokens/s"
    caplog.clear()
    slow = PlainProgress(total=1000, desc="eval", unit="tok", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="posbench"):
        for _ in range(3):
            now[0] += 31  # under a tenth each time, but 30 s have passed
            slow.update(1)
        slow.set_description("eval rope L=128")
    assert [r.getMessage() for r in caplog.records] == [
        "eval: tokens 1/1,000 (0%), ETA 8:36:09", "eval: tokens 2/1,000 (0%), ETA 8:35:38",
        "eval: tokens 3/1,000 (0%), ETA 8:35:07",
        "eval rope L=128: starting (0% of 1,000 tokens done)"]


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere(monkeypatch):
    from tqdm.auto import tqdm

    from posbench.core.progress import PlainProgress, progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert isinstance(progress(range(3), total=3), tqdm)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert isinstance(progress(range(3), total=3), PlainProgress)
    assert isinstance(progress(range(3), total=3, enabled=False), tqdm)  # disabled: tqdm's no-op

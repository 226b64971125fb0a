"""``posbench-train`` (posbench/cli/train.py): compose, check every job, train, evaluate, write the run
directory, and one result line per run on stdout."""

import json
import logging
import sys


def test_posbench_train_trains_evaluates_and_prints_the_run_s_line(monkeypatch, capsys, tmp_path, text_corpus, cache_dir):
    from posbench.cli.train import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["posbench-train", "model=tiny", "train=smoke", "train.steps=2", "train_len=16",
                                      "eval.multiples=[1,2]", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=128",
                                      "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}"])
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level  # Hydra configures logging: put the root logger back
    try:
        main()
    finally:
        root.handlers[:], root.level = handlers, level
    (run_dir,) = (tmp_path / "runs").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["status"] == "completed" and {r["length"] for r in metrics["evaluations"]} == {16, 32}
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith(f"{run_dir.name}  completed  ppl 1x=") and line.endswith(f"(nonoverlapping)  {run_dir}")

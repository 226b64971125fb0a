"""posbench/report/tuning.py: a learning-rate grid keeps the default in the main table and tunes on
1x validation loss; a choice at the edge of the grid is named."""

import pandas as pd
import pytest

from posbench.jobs.train import run
from posbench.store.rundir import read_metrics

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=256", "data=local"]


def test_a_learning_rate_grid_keeps_the_default_in_the_main_table_and_tunes_on_1x_validation_loss(compose, tmp_path, text_corpus):
    from posbench.report.pipeline import build_report

    runs = tmp_path / "runs"
    made = {}
    for enc in ("nope", "alibi"):
        for lr in (2e-3, 2e-2):
            cfg = compose(f"encoding={enc}", f"train.lr={lr}", "+encoding.lr_mult=1.0", *BASE, "eval.multiples=[1,2]",
                          f"data.path={text_corpus}", f"runs_dir={runs}")
            made[enc, lr] = read_metrics(run(cfg))
    out = tmp_path / "rep"
    build_report(runs, out)
    main = pd.read_csv(out / "table.csv")
    tuned = pd.read_csv(out / "table_tuned.csv")
    choices = pd.read_csv(out / "tuning.csv")
    one_x = lambda m: next(r["ppl"] for r in m["evaluations"] if r["length"] == 16)  # noqa: E731
    for enc in ("nope", "alibi"):
        best_lr = min((2e-3, 2e-2), key=lambda lr: made[enc, lr]["final_val_loss"])  # on 1x validation loss only
        chosen = choices[(choices["encoding"] == enc) & choices["chosen"]]
        assert chosen["lr"].item() == pytest.approx(best_lr)
        assert main.loc[main["variant"] == enc, "1x"].item() == pytest.approx(one_x(made[enc, 2e-3]))  # the default lr
        assert tuned.loc[tuned["variant"] == enc, "1x"].item() == pytest.approx(one_x(made[enc, best_lr]))
    assert "## Tuned learning rates" in (out / "report.md").read_text()


def test_a_choice_at_the_edge_of_the_grid_is_named():
    from posbench.report.tuning import grid_edge_warning

    def grid(chosen_lr):
        return pd.DataFrame([{"encoding": enc, "model": "small", "train_len": 64, "lr": lr, "lr_mult": 1.0,
                              "val_loss": 1.0, "seeds": 1, "chosen": lr == chosen_lr[enc]}
                             for enc in ("nope", "alibi") for lr in (1e-3, 2e-3, 4e-3)])
    text = grid_edge_warning(grid({"nope": 4e-3, "alibi": 2e-3}))
    assert "1 of 2 chose the highest learning rate tried (`nope`)" in text and "alibi" not in text
    assert "lowest learning rate tried (`alibi`)" in grid_edge_warning(grid({"nope": 2e-3, "alibi": 1e-3}))
    assert grid_edge_warning(grid({"nope": 2e-3, "alibi": 2e-3})) is None  # inside the grid; one lr_mult: no edge

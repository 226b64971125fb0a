"""posbench/report/analysis/tuning.py: a learning-rate grid keeps the default in the main table and tunes on
1x validation loss; a choice at the edge of the grid is named."""

import pandas as pd
import pytest

from posbench.jobs.train import run
from posbench.store.rundir import RunDir

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=256", "data=local"]


def test_a_learning_rate_grid_keeps_the_default_in_the_main_table_and_tunes_on_1x_validation_loss(compose, tmp_path, text_corpus):
    from posbench.report.pipeline import build_report

    runs = tmp_path / "runs"
    made = {}
    for enc in ("nope", "alibi"):
        for lr in (2e-3, 2e-2):
            cfg = compose(f"encoding={enc}", f"train.lr={lr}", "+encoding.lr_mult=1.0", *BASE, "eval.multiples=[1,2]",
                          f"data.path={text_corpus}", f"runs_dir={runs}")
            made[enc, lr] = RunDir(run(cfg)).read_metrics()
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
    from posbench.report.analysis.tuning import grid_edge_warning

    def grid(chosen_lr):
        return pd.DataFrame([{"encoding": enc, "model": "small", "train_len": 64, "lr": lr, "lr_mult": 1.0,
                              "val_loss": 1.0, "seeds": 1, "chosen": lr == chosen_lr[enc]}
                             for enc in ("nope", "alibi") for lr in (1e-3, 2e-3, 4e-3)])
    text = grid_edge_warning(grid({"nope": 4e-3, "alibi": 2e-3}))
    assert "1 of 2 chose the highest learning rate tried (`nope`)" in text and "alibi" not in text
    assert "lowest learning rate tried (`alibi`)" in grid_edge_warning(grid({"nope": 2e-3, "alibi": 1e-3}))
    assert grid_edge_warning(grid({"nope": 2e-3, "alibi": 2e-3})) is None  # inside the grid; one lr_mult: no edge


def grid_losses(losses):
    """{(encoding, lr): [val_loss per seed]} -> decide's input."""
    return pd.DataFrame([{"encoding": e, "model": "small", "train_len": 64, "lr": lr, "lr_mult": 1.0, "seed": s, "val_loss": v}
                         for (e, lr), values in losses.items() for s, v in enumerate(values)])


def test_a_rate_is_chosen_on_evidence_and_a_tie_goes_to_the_common_rate():
    """The best rate is chosen only where it beats the others by 2 seed SDs; a margin inside the seeds' spread
    (NoPE's 0.0016 nats against a seed SD of ~0.035 in the budget study) gives the common rate; a tie between
    two rates that are not the common one says "train both"; one seed chooses nothing on evidence."""
    from posbench.report.analysis.tuning import decide

    clear = grid_losses({("a", 2e-3): [1.50, 1.52], ("a", 4e-3): [1.40, 1.42]})  # 0.10 apart, SD 0.014
    tie = grid_losses({("b", 2e-3): [1.50, 1.56], ("b", 4e-3): [1.48, 1.55]})  # 0.015 apart, SD 0.046
    other = grid_losses({("c", 2e-3): [1.70, 1.72], ("c", 4e-3): [1.50, 1.54], ("c", 8e-3): [1.51, 1.55]})
    single = grid_losses({("d", 2e-3): [1.50], ("d", 4e-3): [1.40]})
    d = decide(pd.concat([clear, tie, other, single])).set_index(["encoding", "lr"])
    assert d.loc[("a", 4e-3), "chosen"] and d.loc[("a", 4e-3), "decision"].startswith("best by 7.1 seed SDs")
    assert d.loc[("b", 2e-3), "chosen"] and not d.loc[("b", 4e-3), "chosen"]  # the common rate, though 4e-3 was lower
    assert "the common setting (the best, lr 0.004" in d.loc[("b", 2e-3), "decision"]
    assert d.loc[("c", 4e-3), "chosen"] and d.loc[("c", 4e-3), "decision"].startswith("tied: lr 0.004 and 0.008")
    assert d.loc[("d", 4e-3), "chosen"] and "not read on evidence" in d.loc[("d", 4e-3), "decision"]


def test_one_setting_whose_seeds_disagree_does_not_decide_for_the_others():
    """The map's tiny grid for T5: at the highest rate one seed did not train (2.50 against 1.80); the seed SD
    is the median setting's, so the best rate, 0.02 nats ahead where every other setting's seeds agree within
    0.01, is chosen (the mean of the variances would make the SD 0.17, every setting "within 2 SDs" of the best,
    and give the common rate 2e-3, worse by 0.36)."""
    from posbench.report.analysis.tuning import decide

    losses = {2e-3: [2.00, 2.02], 4e-3: [1.80, 1.81], 8e-3: [1.66, 1.67], 1.6e-2: [1.64, 1.65], 3.2e-2: [1.80, 2.50]}
    d = decide(grid_losses({("t5", lr): v for lr, v in losses.items()})).set_index("lr")
    assert d["seed_sd"].iloc[0] == pytest.approx(0.00707, abs=1e-4)
    assert d.loc[1.6e-2, "chosen"] and d.loc[1.6e-2, "decision"].startswith("best by 2.8 seed SDs")
    assert d["chosen"].sum() == 1

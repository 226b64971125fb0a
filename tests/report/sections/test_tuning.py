"""The tuning section (posbench/report/sections/tuning.py): a learning-rate grid's chosen settings and
the table at them, beside the main table's default."""

from types import SimpleNamespace

import pandas as pd

from posbench.report.sections.tuning import Tuning
from tests.helpers import run_section


def test_the_tuned_table_and_every_setting_s_loss_are_written(sweep_context, tmp_path):
    assert not Tuning().applies(sweep_context)  # one learning rate: nothing was tuned
    choices = pd.DataFrame([{"encoding": enc, "model": "tiny", "train_len": 16, "lr": lr, "lr_mult": 1.0,
                             "val_loss": 1.0 + lr, "seeds": 2, "chosen": lr == 2e-3}
                            for enc in ("rope", "alibi") for lr in (1e-3, 2e-3, 4e-3)])
    ctx = SimpleNamespace(has_lm=True, tuned=sweep_context.table, choices=choices)
    assert Tuning().applies(ctx)
    md, written = run_section(Tuning, ctx, tmp_path)
    assert sorted(written) == ["table_tuned.csv", "tuning.csv"] and md.startswith("## Tuned learning rates")
    assert pd.read_csv(tmp_path / "tuning.csv")["chosen"].sum() == 2

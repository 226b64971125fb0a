"""The attention section (posbench/report/sections/attention.py): how far and how spread attention is at
each length, from runs evaluated with ``eval.attention_stats``."""

import pandas as pd

from posbench.report.sections.attention import Attention
from tests.helpers import run_section


def test_runs_with_attention_statistics_get_the_table_and_the_figure(sweep_context, compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.report.context import ReportContext

    assert not Attention().applies(sweep_context)  # the shared sweep records no attention statistics
    run(compose("encoding=alibi", "model=tiny", "train=smoke", "train.steps=2", "train_len=16", "eval.multiples=[1,2]",
                "eval.protocols=[nonoverlapping]", "eval.scored_tokens=128", "eval.attention_stats=true", "data=local",
                f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}"))
    ctx = ReportContext.load(tmp_path / "runs", sweep_context.options)
    assert Attention().applies(ctx)
    md, written = run_section(Attention, ctx, tmp_path)
    assert sorted(written) == ["attention.csv", "attention.png"] and md.startswith("## Attention: how far and how spread")
    stats = pd.read_csv(tmp_path / "attention.csv")
    assert set(stats["length"]) == {16, 32} and stats["mean_distance"].notna().all()

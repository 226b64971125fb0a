"""The three measures side by side (posbench/report/sections/measures.py), end to end: a tiny sweep of three
encodings x two seeds, each an LM run scored beside its window control (keeping per-token losses) and a
passkey run of the same model and train_len, gives a report with the section and both of its files; a rebuild from its records (no per-token
losses) keeps them as they were."""

import pandas as pd

from posbench.jobs.train import run
from posbench.report.pipeline import build_report
from posbench.report.sections.measures import CORRELATIONS, MEASURES, ROWS

ENCODINGS = ("alibi", "nope", "rope")
COMMON = ["model=tiny", "train=smoke", "train_len=32", "eval.multiples=[1,2,4]", "data=local", "threads=1"]


def test_a_sweep_with_both_kinds_of_runs_gets_the_section(compose, tmp_path, text_corpus):
    runs = tmp_path / "runs"
    for encoding in ENCODINGS:
        for seed in (0, 1):
            common = [f"encoding={encoding}", f"seed={seed}", *COMMON, f"data.path={text_corpus}", f"runs_dir={runs}"]
            run(compose(*common, "eval.protocols=[nonoverlapping]", "eval.variants=[local]"))
            run(compose(*common, "task=passkey", "task.eval_examples=8"))
    md = build_report(runs, tmp_path / "report").read_text()
    assert "## The three measures side by side" in md
    rows = pd.read_csv(tmp_path / "report" / ROWS.name)
    assert sorted(rows["row"]) == list(ENCODINGS) and (rows["lm_seeds"] == 2).all() and (rows["task_seeds"] == 2).all()
    assert rows[[*MEASURES]].notna().all().all()
    pairs = pd.read_csv(tmp_path / "report" / CORRELATIONS.name)
    assert len(pairs) == 3 and (pairs["rows"] == 3).all() and (pairs["seeds"] == 2).all()
    section = md.split("## The three measures side by side")[1].split("\n## ")[0]
    assert all(w in ("agree", "disagree", "cannot be told with 2 seeds") for w in pairs["word"])
    assert "**passkey**, nonoverlapping, tiny, train_len 32" in section
    print(section)
    from posbench.cli.report import main

    main([str(tmp_path / "report"), "--rebuild", "--out", str(tmp_path / "rebuilt")])
    rebuilt = (tmp_path / "rebuilt" / "report.md").read_text().split("## The three measures side by side")[1]
    assert "Made by the committed report" in rebuilt.split("\n## ")[0]
    for name in (ROWS.name, CORRELATIONS.name):
        assert (tmp_path / "rebuilt" / name).read_bytes() == (tmp_path / "report" / name).read_bytes()

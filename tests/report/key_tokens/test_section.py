"""The key-token section (posbench/report/key_tokens/section.py), end to end: a tiny run scored with
its window control (``eval.variants=[local]``) keeps both passes' per-token losses, and its report
shows the section; without those files the report has no such section and leaves none of its files."""

import numpy as np

from posbench.jobs.train import run
from posbench.report.pipeline import build_report
from posbench.report.key_tokens.section import FIGURE, TABLE, KeyTokens
from posbench.store.rundir import TOKEN_LOSSES, RunDir, token_loss_keys

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2,4]", "eval.protocols=[nonoverlapping]",
        "eval.scored_tokens=256", "data=local"]


def test_a_run_scored_beside_its_window_control_gets_the_key_token_section(compose, tmp_path, text_corpus):
    runs = tmp_path / "runs"
    cfg = compose("encoding=rope", *BASE, "eval.variants=[local]", f"data.path={text_corpus}", f"runs_dir={runs}")
    run(cfg)
    kept = RunDir(cfg.run_dir).read_token_losses()
    for L in (16, 32, 64):
        loss, doc, pos = token_loss_keys("rope", "nonoverlapping", L)
        control = token_loss_keys("rope+swaL", "nonoverlapping", L)[0]
        assert {loss, doc, pos, control} <= set(kept) and len(kept[loss]) == len(kept[control]) == 256
        assert np.array_equal(kept[loss][kept[pos] < 16], kept[control][kept[pos] < 16])  # the same keys up to train_len
    md = build_report(runs, tmp_path / "report").read_text()
    section = md.split(f"## {KeyTokens.title}")[1].split("\n## ")[0]
    assert "LSD = loss(window) - loss(full) > alpha" in section and "| rope  " in section and "| 4x " in section
    assert (tmp_path / "report" / TABLE.name).exists() and (tmp_path / "report" / FIGURE.name).exists()
    # the same runs without the per-token file: no section, and its files do not outlive their data
    (cfg.run_dir / TOKEN_LOSSES).unlink()
    md = build_report(runs, tmp_path / "report").read_text()
    assert KeyTokens.title not in md and not (tmp_path / "report" / TABLE.name).exists()
    assert not (tmp_path / "report" / FIGURE.name).exists()


def test_without_a_window_control_nothing_is_kept(compose, tmp_path, text_corpus):
    cfg = compose("encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    run(cfg)
    assert not (cfg.run_dir / TOKEN_LOSSES).exists()


def test_the_papers_own_thresholds_from_the_command_line(compose, tmp_path, text_corpus):
    from posbench.cli.report import main

    runs = tmp_path / "runs"
    run(compose("encoding=alibi", *BASE, "eval.variants=[local]", f"data.path={text_corpus}", f"runs_dir={runs}"))
    main([str(runs), "--out", str(tmp_path / "paper"), "--key-tokens", "paper"])
    assert "LSD > 2 and LCL > -2 nats per token (Fang et al.'s numbers)" in (tmp_path / "paper" / "report.md").read_text()
    main([str(runs), "--out", str(tmp_path / "bytes")])
    assert "LSD > 0.51 and LCL > -0.51 nats per byte" in (tmp_path / "bytes" / "report.md").read_text()

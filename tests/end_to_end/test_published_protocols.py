"""scripts/published_protocols.py: one run scored under posbench's and the published protocols, one
markdown table; bad input is one line and writes nothing."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import cli, write_text_corpus

ROOT = Path(__file__).parents[2]
SCRIPT = str(ROOT / "scripts" / "published_protocols.py")


@pytest.fixture(scope="module")
def many_docs_run(tmp_path_factory, cache_dir):
    """A tiny RoPE run on a corpus of many short documents: its validation split holds a published text
    (whole documents from S0 that end a window before the split's end), which the shared sweep's does not."""
    root = tmp_path_factory.mktemp("published")
    corpus = write_text_corpus(root / "docs", n_docs=400, words_per_doc=60)
    cli("posbench.cli.train", "encoding=rope", "model=tiny", "train=smoke", "train_len=16", "data=local",
        f"data.path={corpus}", f"runs_dir={root / 'runs'}", "eval.multiples=[1,2]", "eval.protocols=[nonoverlapping]",
        "eval.scored_tokens=512")
    return next((root / "runs").glob("rope_*"))


def test_the_table_has_every_protocol_and_the_numbers_the_protocols_imply(many_docs_run, tmp_path):
    run = many_docs_run
    out, csv = tmp_path / "protocols.md", tmp_path / "protocols.csv"
    proc = subprocess.run([sys.executable, SCRIPT, str(run), "--out", str(out), "--csv", str(csv), "--multiples", "1,2",
                           "--published-docs", "3"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    for name in ("nonoverlapping", "sliding", "streaming", "lm_eval_rolling", "hf_strided", "lceg_starts", "yarn_truncated"):
        assert f"| `{name}` |" in text, name
    assert "word_perplexity" in text and "mean of per-document ppl" in text
    rows = pd.read_csv(csv).set_index(["protocol", "multiple"])
    assert len(rows) == 14
    # every token of the text once (transformers, lm-eval), the same at every length; LCEG several times; YaRN more at 2x
    for name in ("hf_strided", "lm_eval_rolling", "nonoverlapping"):
        assert rows.loc[(name, 1.0), "tokens"] == rows.loc[(name, 1.0), "distinct"] == rows.loc[(name, 2.0), "tokens"]
    assert rows.loc[("lceg_starts", 2.0), "tokens"] > rows.loc[("lceg_starts", 2.0), "distinct"]
    assert rows.loc[("yarn_truncated", 2.0), "tokens"] > rows.loc[("yarn_truncated", 1.0), "tokens"]
    # at 1x the sink + window row evicts nothing (its cache holds train_len keys): it is the plain sliding number
    assert rows.loc[("streaming", 1.0), "loss"] == pytest.approx(rows.loc[("sliding", 1.0), "loss"], rel=1e-5)
    assert rows.loc[("streaming", 2.0), "loss"] != pytest.approx(rows.loc[("sliding", 2.0), "loss"], rel=1e-5)
    assert rows.loc[("sliding", 1.0), "token_set"] == rows.loc[("nonoverlapping", 1.0), "token_set"]
    assert rows.loc[("hf_strided", 1.0), "token_set"] != rows.loc[("lm_eval_rolling", 1.0), "token_set"]
    again = tmp_path / "again.md"  # the table again from the saved values, no model run
    proc = subprocess.run([sys.executable, SCRIPT, "--values", str(csv), "--out", str(again)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert again.read_text() == text


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "protocols.md"
    for argv in ([str(tmp_path / "none"), "--out", str(out)], [str(tmp_path), "--out", str(out), "--multiples", "1,x"],
                 [str(tmp_path), "--out", str(out)], ["--values", str(tmp_path / "none.csv"), "--out", str(out)],
                 ["--out", str(out)]):
        proc = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("published_protocols: error: ")
    assert not out.exists()

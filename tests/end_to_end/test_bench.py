"""The benchmark command runs end to end and writes its tables (its numbers are not asserted)."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow
def test_bench_writes_ratios_for_each_encoding_and_the_reference(tmp_path):
    cmd = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--model", "tiny", "--train-len", "16", "--batch", "4",
           "--steps", "2", "--eval-tokens", "512", "--encodings", "nope,alibi,learned", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    df = pd.read_csv(tmp_path / "bench.csv").set_index("encoding")
    assert list(df.index) == ["reference_gpt", "nope", "alibi", "learned"]
    assert df.loc["reference_gpt", "train_vs_reference"] == 1.0 and df.loc["nope", "eval_16x_time_vs_nope"] == 1.0
    assert (df["train_tok_s"] > 0).all() and (df["mfu"] > 0).all()
    assert pd.isna(df.loc["learned", "eval_16x_s"])  # not defined past its table: not timed
    assert df.loc["alibi", "eval_16x_peak_mb"] > 0
    assert "Command: `python scripts/bench.py" in (tmp_path / "bench.md").read_text()


def test_bench_rejects_an_unknown_encoding(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--encodings", "ropee", "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown encoding 'ropee'" in proc.stderr
    assert not (tmp_path / "bench.csv").exists()


@pytest.mark.slow
def test_bench_adds_rows_for_layer_patterns(tmp_path):
    """--hybrids: conf/hybrid/ presets (recurrent and hybrid models) as rows beside the encodings."""
    cmd = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--model", "tiny", "--train-len", "16", "--batch", "4",
           "--steps", "2", "--rounds", "1", "--eval-tokens", "512", "--encodings", "nope", "--hybrids", "gdn,samba",
           "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    df = pd.read_csv(tmp_path / "bench.csv").set_index("encoding")
    assert list(df.index) == ["reference_gpt", "nope", "+hybrid=gdn", "+hybrid=samba"]
    assert (df["train_tok_s"] > 0).all() and (df["eval_16x_s"] > 0).all()
    assert df.loc["+hybrid=gdn", "params"] != df.loc["nope", "params"]  # the pattern's layers, not attention


def test_bench_rejects_an_unknown_hybrid_preset(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--hybrids", "gdm", "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown hybrid preset 'gdm'" in proc.stderr
    assert not (tmp_path / "bench.csv").exists()


def test_bench_profile_lists_the_costliest_operators_of_each_row(tmp_path):
    """scripts/bench_profile.py: per encoding (nope added) a table of operators by share of self CPU time,
    for a 16x pass and for training steps; the shares of a table are a ranking of positive parts."""
    out = tmp_path / "profiles.md"
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_profile.py"), "--encodings", "alibi", "--model", "tiny",
           "--train-len", "16", "--batch", "2", "--steps", "1", "--eval-tokens", "256", "--top", "3", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    assert text.count("## ") == 2 and "## nope" in text and "## alibi" in text
    shares = [float(line.split("|")[2].strip().rstrip("%")) for line in text.splitlines() if line.startswith("| `")]
    assert len(shares) == 2 * 2 * 3 and all(0 < s <= 100 for s in shares)
    assert "Command: `python scripts/bench_profile.py" in text


def test_bench_profile_rejects_an_unknown_encoding(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_profile.py"), "--encodings", "ropee",
                           "--out", str(tmp_path / "p.md")], capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown encoding 'ropee'" in proc.stderr
    assert not (tmp_path / "p.md").exists()


@pytest.mark.slow  # four evaluation processes (~40 s)
def test_a_row_whose_training_fails_is_left_empty_and_the_others_are_measured(tmp_path):
    """On a lent GPU one compiler error must not lose the other rows' minutes (the GPU study's first rerun lost all)."""
    code = f"""
import sys
sys.path[:0] = [{str(ROOT / 'scripts')!r}, {str(ROOT)!r}]
import bench
real = bench.train_throughput
def flaky(name, *args, **kwargs):
    if name == "alibi":
        raise RuntimeError("the compiler said no\\nand more")
    return real(name, *args, **kwargs)
bench.train_throughput = flaky
bench.main(["--model", "tiny", "--train-len", "16", "--batch", "4", "--steps", "2", "--rounds", "1",
            "--eval-tokens", "256", "--encodings", "nope,alibi", "--out", {str(tmp_path)!r}])
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    df = pd.read_csv(tmp_path / "bench.csv").set_index("encoding")
    assert df.loc["nope", "train_tok_s"] > 0 and df.loc["nope", "eval_16x_s"] > 0
    assert pd.isna(df.loc["alibi", "train_tok_s"]) and pd.isna(df.loc["alibi", "eval_16x_s"])
    assert "Training failed, row left empty: `alibi` (RuntimeError: the compiler said no)" in (tmp_path / "bench.md").read_text()

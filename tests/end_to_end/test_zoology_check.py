"""scripts/zoology_check.py: the Zoology-semantics MQAR generator it compares posbench against asks each
key once after the pairs and labels exactly the query positions with that key's value; a few steps of the
comparison run end to end."""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from zoology_check import IGNORE, zoology_mqar  # noqa: E402


def test_each_query_is_labelled_with_its_key_s_value_and_nothing_else_is():
    inputs, labels = zoology_mqar(vocab_size=64, num_examples=50, input_seq_len=64, seed=3, num_kv_pairs=4)
    assert inputs.shape == labels.shape == (50, 64)
    for x, y in zip(inputs.tolist(), labels.tolist()):
        pairs = dict(zip(x[0:8:2], x[1:8:2]))
        assert len(pairs) == 4 and all(1 <= k < 32 <= v < 64 for k, v in pairs.items())
        asked = [i for i, label in enumerate(y) if label != IGNORE]
        assert len(asked) == 4 and all(i >= 8 and (i - 8) % 2 == 0 for i in asked)
        assert sorted(x[i] for i in asked) == sorted(pairs) and all(y[i] == pairs[x[i]] for i in asked)


def test_a_few_steps_of_the_comparison_run():
    proc = subprocess.run([sys.executable, str(Path(__file__).parents[2] / "scripts" / "zoology_check.py"),
                           "--data", "posbench", "--model", "posbench", "--init", "torch", "--shape", "64,2,2",
                           "--encoding", "rope", "--examples", "0", "--steps", "4"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "test acc" in proc.stdout

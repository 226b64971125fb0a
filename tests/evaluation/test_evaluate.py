"""posbench/evaluation/evaluate.py: the inputs of the attention diagnostics, and the log lines of a
run's scores."""

import logging

import numpy as np
import torch

from posbench.evaluation.evaluate import attention_inputs, log_records, log_task_records
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.windows import first_scored
from posbench.tasks import LM, build_task
from posbench.evaluation.resolved import ResolvedEval


def test_a_language_model_s_attention_is_measured_on_consecutive_windows_from_the_first_scored_token():
    cfg = EvalConfig()
    val = (np.arange(5000) % 251).astype(np.uint8)
    x = attention_inputs(ResolvedEval(cfg, 16, task=build_task(LM), text=val), 32, 3)
    start = first_scored(cfg, 16)
    assert x.shape == (3, 32)
    assert torch.equal(x.flatten(), torch.from_numpy(val[start:start + 96].astype(np.int64)))


def test_each_row_and_protocol_is_one_log_line(caplog):
    records = [{"variant": "rope", "protocol": "sliding", "multiple": 1.0, "ppl": 5.123},
               {"variant": "rope", "protocol": "sliding", "multiple": 2.0, "ppl": None},
               {"variant": "rope+yarn@2x", "protocol": "sliding", "multiple": 2.0, "ppl": 7.0}]
    tasks = [{"variant": "rope", "task": "passkey", "multiple": 1.0, "exact": e} for e in (1.0, 0.5)]
    with caplog.at_level(logging.INFO, logger="posbench"):
        log_records(records)
        log_task_records(tasks, "exact")
    assert [r.getMessage() for r in caplog.records] == [
        "rope sliding ppl: 1x=5.12, 2x=n/d", "rope+yarn@2x sliding ppl: 2x=7.00", "rope passkey exact: 1x=0.75"]

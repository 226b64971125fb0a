"""posbench/jobs/summary.py: posbench-train's stdout, one line per run whatever happened to it."""

from pathlib import Path

from posbench.evaluation.plan import record_key
from posbench.jobs.summary import summary_line


def record(variant, protocol, multiple, ppl, **extra):
    return {"variant": variant, "protocol": protocol, "length": int(16 * multiple), "multiple": multiple, "ppl": ppl,
            "token_set": "t", **extra}


def test_a_completed_run_shows_its_own_row_at_the_shortest_and_longest_multiple_of_the_first_protocol():
    records = [record("rope", "nonoverlapping", 1.0, 4.213), record("rope", "nonoverlapping", 2.0, 6.0),
               record("rope", "nonoverlapping", 4.0, 9.871), record("rope", "sliding", 1.0, 4.0),
               record("rope+yarn@4x", "nonoverlapping", 4.0, 5.0, row={"variants": [{"variant": "rope_scaling"}]})]
    asked = {record_key("perplexity", r) for r in records}
    line = summary_line("rope_x", Path("runs/rope_x"), {"status": "completed", "evaluations": records}, asked,
                        ["nonoverlapping", "sliding"])
    assert line == "rope_x  completed  ppl 1x=4.21 4x=9.87 (nonoverlapping)  runs/rope_x"
    assert "(sliding)" in summary_line("rope_x", Path("r"), {"status": "completed", "evaluations": records}, asked,
                                       ["sliding"])


def test_a_run_without_scores_says_why():
    def line(metrics):
        return summary_line("rope_x", Path("runs/rope_x"), metrics, set(), ["nonoverlapping"])

    assert line(None) == ("rope_x  not finished (another process is working on it, or it was interrupted)  "
                          "runs/rope_x")
    assert line({"status": "diverged", "train_steps": 7}) == "rope_x  diverged at step 7  runs/rope_x"
    assert line({"status": "completed", "evaluations": [], "evaluation_error": "out of memory"}) == (
        "rope_x  completed  not evaluated (out of memory); run the command again to evaluate  runs/rope_x")
    assert line({"status": "failed", "error": "disk full"}) == "rope_x  failed  disk full  runs/rope_x"

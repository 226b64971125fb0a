"""posbench/jobs/evaluate.py: posbench-eval's settings are the run's own unless the command line gives them."""

from posbench.jobs.evaluate import NOT_FROM_RUN, with_run_defaults


def test_the_run_s_eval_settings_are_the_defaults_and_the_command_line_wins():
    asked = {"multiples": [1, 2, 4, 32], "protocols": ["nonoverlapping", "sliding"], "scored_tokens": None,
             "batch_tokens": 4096, "during_training": [], "bca": ["xpos"], "attention_stats": False}
    run = {"multiples": [1, 2], "protocols": ["nonoverlapping"], "scored_tokens": 256, "batch_tokens": 65536,
           "during_training": [0.5, 1.0], "bca": ["xpos"]}  # an older run: no attention_stats key
    used, taken = with_run_defaults(asked, run, given={"multiples"})
    assert used == {**asked, "protocols": ["nonoverlapping"], "scored_tokens": 256}
    assert taken == {"protocols": ["nonoverlapping"], "scored_tokens": 256}  # what differs from conf/eval: said in the log
    assert set(NOT_FROM_RUN) == {"batch_tokens", "during_training"}
    used, taken = with_run_defaults(asked, run, given={"multiples", "protocols"})
    assert used["protocols"] == ["nonoverlapping", "sliding"] and "protocols" not in taken

"""``posbench-eval`` (posbench/cli/evaluate.py): a request is checked against the run it names; a variant
setting that adds no row to the run is refused before anything is scored."""

import pytest

from posbench.core.errors import PosbenchError


def test_posbench_eval_refuses_a_variant_setting_that_gives_the_run_no_row(compose, trained_run):
    from posbench.cli.config import to_eval_request
    from posbench.cli.evaluate import _check

    _check([to_eval_request(compose(f"run_dir={trained_run}", "eval.multiples=[1,4]", config_name="evaluate"))])
    request = to_eval_request(compose(f"run_dir={trained_run}", "eval.rope_scaling=[yarn]", config_name="evaluate"))
    with pytest.raises(PosbenchError, match=r"eval.rope_scaling=\[yarn\] adds no row for encoding alibi"):
        _check([request])  # the shared sweep's run is an ALiBi model

"""``posbench-eval``: score a finished run again, e.g. at longer lengths or with other variants.

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16]

The request is checked against the run it names with the same checks posbench-train applies to
its evaluation settings (posbench.spec.RunSpec.check_evaluation), and a variant setting that adds
no row to the run (eval.rope_scaling on a run without rotary frequencies) is refused."""

from pathlib import Path

from posbench.cli.app import hydra_app
from posbench.cli.config import to_eval_request
from posbench.jobs.corpora import check_runs_corpora
from posbench.jobs.evaluate import run
from posbench.spec import check_variant_rows


def _check(requests) -> None:
    """Every request was checked when it was converted; here, what needs the runs' corpora and
    what involves the runs together: each run is scored on the corpus it was trained on (or
    refused, saying what changed), and every variant setting asked for gives a row."""
    specs = [r.run_spec() for r in requests]
    check_variant_rows(specs)
    check_runs_corpora([(Path(r.run_dir).expanduser(), spec.data) for r, spec in zip(requests, specs)])


main = hydra_app("evaluate", to_eval_request, run, _check)

if __name__ == "__main__":  # python -m: the console script's handlers (a SIGTERM is one line and 143)
    from posbench.core.errors import note_interrupts

    note_interrupts()
    main()

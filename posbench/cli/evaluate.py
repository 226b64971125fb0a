"""``posbench-eval``: score a finished run again, e.g. at longer lengths or with other variants.

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16]

The request is checked against the run it names with the same checks posbench-train applies to
its evaluation settings (posbench.spec.RunSpec.check_evaluation)."""

from posbench.cli import hydra_app
from posbench.config import to_eval_request
from posbench.evaluate import run


def _check(requests) -> None:
    """Every request was checked when it was converted; nothing more before scoring."""


main = hydra_app("evaluate", to_eval_request, run, _check)

if __name__ == "__main__":
    main()

"""``posbench-eval``: score a finished run again, e.g. at longer lengths or with other variants.

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16]
    posbench-eval run_dir=runs/quick eval.multiples=[1,2,4,8,16,32]     # every completed run below the folder

A folder that is not a run but holds runs is a sweep (``-m``, one job per completed run below it, in
order), each job adding only the records its run lacks: the same command resumes where it stopped.

The request is checked against the run it names with the same checks posbench-train applies to
its evaluation settings (posbench.spec.RunSpec.check_evaluation), and a variant setting that adds
no row to the run (eval.rope_scaling on a run without rotary frequencies) is refused."""

import sys
from pathlib import Path

from posbench.cli.app import hydra_app
from posbench.cli.config import to_eval_request
from posbench.jobs.corpora import check_runs_corpora
from posbench.core.errors import user_errors
from posbench.jobs.evaluate import run
from posbench.store.rundir import CONFIG, METRICS, RunDir, find_runs
from posbench.spec import check_variant_rows


def _check(requests) -> None:
    """Every request was checked when it was converted; here, what needs the runs' corpora and
    what involves the runs together: each run is scored on the corpus it was trained on (or
    refused, saying what changed), and every variant setting asked for gives a row."""
    specs = [r.run_spec() for r in requests]
    check_variant_rows(specs)
    check_runs_corpora([(r.folder(), spec.data) for r, spec in zip(requests, specs)])


def expanded(argv: list[str]) -> list[str]:
    """``argv`` with ``run_dir=FOLDER`` (a folder holding runs, itself none) as a sweep over its completed
    runs: ``-m run_dir='a','b',...`` (each path quoted for Hydra's parser); anything else as given."""
    found = [i for i, a in enumerate(argv) if a.startswith("run_dir=")]
    if len(found) != 1:
        return argv
    folder = Path(argv[found[0]].partition("=")[2]).expanduser()
    if not folder.is_dir() or (folder / METRICS).exists() or (folder / CONFIG).exists():
        return argv  # a run (finished or not: the request's own check says which)
    # a Hugging Face checkpoint's run (posbench-eval-hf) beside posbench's own is left to posbench-eval-hf
    runs = [d.path for d in map(RunDir, find_runs(folder)) if d.is_complete() and not d.is_checkpoint_run()]
    if not runs:
        return argv  # no run below it either: the request's check refuses it in one line
    quoted = ",".join("'" + str(d).replace("\\", "\\\\").replace("'", "\\'") + "'" for d in runs)
    rest = argv[:found[0]] + argv[found[0] + 1:]
    return (["-m"] if not {"-m", "--multirun"} & set(rest) else []) + rest + [f"run_dir={quoted}"]


_main = hydra_app("evaluate", to_eval_request, run, _check)


def main() -> None:
    with user_errors():
        sys.argv[1:] = expanded(sys.argv[1:])
    _main()

if __name__ == "__main__":  # python -m: the console script's handlers (a SIGTERM is one line and 143)
    from posbench.core.errors import note_interrupts

    note_interrupts()
    main()

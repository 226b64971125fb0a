"""Tables, plots and a readable report from run directories: ``posbench-report RUNS_DIR [--out DIR]``.

Reads every ``metrics.json`` below RUNS_DIR (the report never trains or evaluates) and writes,
into DIR (default RUNS_DIR/report):

    report.md, report.html  the report; the HTML is self-contained (images embedded, no network)
    table.csv/.md/.tex      per protocol x encoding x model x train_len, over seeds: mean perplexity
                            at each multiple with std, 95% interval, paired test against the best,
                            the longest multiple's ratio to 1x and the extrapolation length
    runs.csv                the same summary metrics for every single run (before averaging seeds)
    pairs.csv               every pair of encodings in a panel: perplexity ratio and paired p-value
    evaluations.csv         every record: run x variant x protocol x length
    convergence.csv         every run's budget and the fall of its 1x validation loss over the last doubling
    ppl_vs_length.png, per_position.png, ratio_heatmap.png, training_curves.png
    during_training.png/.csv  with eval.during_training: 1x perplexity and ratio against training tokens
    extension.png/.csv      with extension runs: perplexity at the target length against fine-tuning steps
    tasks.csv, task_records.csv, task_accuracy.png, task_<task>.png
                            with task runs: accuracy per length, effective context length, heatmaps
    attention.csv, attention.png  with eval.attention_stats: attention distance and entropy per length
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from posbench.errors import user_errors
from posbench.report import budget, tasks
from posbench.report.pipeline import DEFAULT_TOLERANCE, FIGURES, OPTIONAL_FIGURES, build_report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="posbench-report", description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path, help="folder with run directories (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUNS_DIR/report)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="extrapolation length: perplexity within this fraction of 1x (default 0.05)")
    parser.add_argument("--improving", type=float, default=budget.DEFAULT_IMPROVING,
                        help="flag runs whose 1x validation loss fell by more than this fraction over their last "
                             "doubling of steps (default 0.02)")
    parser.add_argument("--spread", type=float, default=budget.DEFAULT_SPREAD,
                        help="warn when compared encodings' 1x perplexities differ by more than this fraction (default 0.1)")
    parser.add_argument("--threshold", type=float, default=tasks.DEFAULT_THRESHOLD,
                        help="tasks: effective context length keeps accuracy at or above this fraction (default 0.8)")
    parser.add_argument("--protocols", default=None,
                        help="comma-separated evaluation protocols to report (default: every one found)")
    parser.add_argument("--wandb", action="store_true", help="also log the tables and figures to a wandb run (logger settings from WANDB_* variables; offline by default)")
    args = parser.parse_args(argv)
    with user_errors():
        out = args.out or args.runs_dir / "report"
        protocols = [p for p in args.protocols.split(",") if p] if args.protocols else None
        report = build_report(args.runs_dir, out, args.tolerance, protocols, args.improving, args.spread, args.threshold)
        if args.wandb:
            from posbench.tracking import log_report

            log_report(out, {**FIGURES, **OPTIONAL_FIGURES})
    print(f"report written to {report} and {report.with_suffix('.html')}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Steps or tokenizer? Every subword row of a committed tokenizers report beside both byte partners, from
committed reports' records:

    python scripts/tokenizer_partners.py results/tokenizers results/tokenizers_steps

The first folder holds the byte arm at its own budget (equal training bytes) and the subword arm; the
others hold more runs of the same configurations at other step counts (the byte arm at the subword arm's
steps: equal steps). Their ``evaluations.csv.gz`` are read together (each record with its run's steps,
``budget_steps``), and the report's own table is printed (posbench/report/analysis/tokenizers.py
``partners_table``: the verdict's statistic of each partner with its interval and class, and the contrast
split into a steps part and a tokenizer part, paired by seed). The records of a subword token set keep
only their token sum, so its text resampling weights the documents equally (report/records/committed.py
``token_sets``): its intervals are approximate. Exit 1 with one line where no subword row has both
partners.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from posbench.report.records.committed import read_evaluations, token_sets
from posbench.report.analysis.tokenizers import partners_table

TOLERANCE = 0.05


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", help="committed reports whose records are read together")
    args = parser.parse_args(argv)
    evals = pd.concat([read_evaluations(f)[0] for f in args.folders], ignore_index=True)
    evals = evals.drop_duplicates(["run_id", "variant", "protocol", "length", "token_set"])
    table = partners_table(evals, token_sets(evals), TOLERANCE)
    if table.empty:
        print(f"tokenizer_partners: no subword row of {', '.join(map(str, args.folders))} has a byte partner at its "
              "own steps and at another budget", file=sys.stderr)
        return 1
    print(table.drop(columns=["protocol", "model", "train_len"]).to_markdown(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""results/index.html and the table in results/README.md, from the committed reports' own tables
(posbench/report/index.py says what a cell is):

    python scripts/results_index.py [results]

scripts/rebuild_reports.sh ends with it, so that the index follows the reports it links."""

from __future__ import annotations

import argparse
from pathlib import Path

from posbench.core.errors import user_errors
from posbench.report.index import write_index


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, nargs="?", default=Path("results"))
    args = ap.parse_args(argv)
    with user_errors():
        page, readme = write_index(args.root)
    print(f"results_index: {page} and the table in {readme} written")


if __name__ == "__main__":
    main()

"""Each run's recorded parameter count into a committed report's convergence.csv, from the study's
records file (posbench-records), for reports written before convergence.csv kept it:

    python scripts/recorded_params.py results/map results/map/records/lines.parquet
    python scripts/recorded_params.py results/map/t5_sqrt results/map/records/t5_sqrt_lines.parquet

A report rebuilt from its records (``posbench-report FOLDER --rebuild``) reads each run's count there;
where a report has none it estimates the count from the run's settings (posbench/report/analysis/points.py,
approx_params: within 10%), which moved the map's size axis by up to one point in the second decimal.
Refused, with nothing written, where a run of the report is not in the records.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from posbench.store.records import read_records
from posbench.store.rundir import METRICS


def counts(records: list[Path]) -> dict[str, int]:
    out = {}
    for path in records:
        for named in read_records(path).values():
            if METRICS in named:
                m = json.loads(named[METRICS])
                if m.get("params") is not None:
                    out[str(m["run_id"])] = int(m["params"])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a committed report's folder (with convergence.csv)")
    ap.add_argument("records", type=Path, nargs="+", help="the records files of its runs")
    args = ap.parse_args(argv)
    path = args.report / "convergence.csv"
    if not path.is_file():
        sys.exit(f"recorded_params: {path} does not exist; give a committed report's folder")
    conv, known = pd.read_csv(path), counts(args.records)
    if missing := sorted(set(conv["run_id"]) - set(known)):
        sys.exit(f"recorded_params: {len(missing)} runs of {path} are not in the records (e.g. {missing[0]}); nothing written")
    conv["params"] = [known[r] for r in conv["run_id"]]
    conv.to_csv(path, index=False)
    print(f"recorded_params: {len(conv)} runs' parameter counts written into {path}")


if __name__ == "__main__":
    main()

"""Runs not in the table: diverged, failed, unevaluated, unfinished and unreadable runs, in one
table, so that a run missing from the numbers is never missing silently."""

from __future__ import annotations

import numbers
from pathlib import Path

import pandas as pd

from posbench.report.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Section
from posbench.results import find_incomplete, read_config

COLUMNS = ["run_id", "status", "encoding", "train_len", "seed"]


def incomplete_row(run_dir: Path) -> dict:
    """What an unfinished run is, from the resolved config it wrote when it started."""
    try:
        cfg = read_config(run_dir)
        known = {"encoding": cfg.encoding.name, "train_len": cfg.train_len, "seed": cfg.seed}
    except Exception:  # noqa: BLE001 - a config torn or edited by hand: still list the folder
        known = {}
    return {"run_id": run_dir.name, "status": "incomplete", **known}


def _whole(v) -> str:
    """32, not 32.0: a column with a gap (an unreadable run has no train_len) turns to floats."""
    if v is None or (isinstance(v, numbers.Real) and pd.isna(v)):
        return ""
    return str(int(v)) if isinstance(v, numbers.Real) and float(v).is_integer() else str(v)


def rows(ctx) -> pd.DataFrame:
    runs = ctx.runs
    other = runs[runs["status"] != "completed"][COLUMNS]
    unevaluated = ctx.unevaluated[[c for c in COLUMNS if c != "status"]]
    if not unevaluated.empty:
        other = pd.concat([other, unevaluated.assign(status="trained, not evaluated (run the command again to evaluate)")],
                          ignore_index=True)
    unfinished = pd.DataFrame([incomplete_row(p) for p in find_incomplete(ctx.runs_dir)])
    unreadable = pd.DataFrame([{"run_id": Path(s["run_dir"]).name, "status": f"unreadable: {s['reason']}"}
                               for s in ctx.skipped])
    parts = [t for t in (other, unfinished, unreadable) if not t.empty]
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    for col in ("train_len", "seed"):
        if col in table:
            table[col] = table[col].map(_whole)
    return table.fillna("")


@SECTIONS.register("not_in_tables")
class NotInTables(Section):
    order = 100

    def applies(self, ctx) -> bool:
        return not ctx.derived("not_in_tables", lambda: rows(ctx)).empty

    def build(self, ctx, out) -> list:
        return [Heading("Runs not in the table"),
                Para("Diverged or failed runs, incomplete ones (started, no metrics yet: running or killed; "
                     "re-running the sweep resumes them) and unreadable ones (a file missing or corrupt). None of "
                     "their numbers are in the tables above."),
                Table(ctx.derived("not_in_tables", lambda: rows(ctx)))]

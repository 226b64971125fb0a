"""Runs not in the table: diverged, failed, unevaluated, unfinished and unreadable runs, in one
table, so that a run missing from the numbers is never missing silently."""

from __future__ import annotations

import numbers
from pathlib import Path

import pandas as pd

from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Section
from posbench.store.rundir import RunDir, find_incomplete

COLUMNS = ["run_id", "status", "encoding", "train_len", "seed"]


def incomplete_row(run_dir: Path) -> dict:
    """What an unfinished run is, from the resolved config it wrote when it started."""
    try:
        cfg = RunDir(run_dir).read_config()
        known = {"encoding": cfg.encoding.name, "train_len": cfg.train_len, "seed": cfg.seed}
    except Exception:  # noqa: BLE001 - a config torn or edited by hand: still list the folder
        known = {}
    return {"run_id": run_dir.name, "status": "incomplete", **known}


NOT_EVALUATED = "trained, not evaluated (run the command again to evaluate)"


def elsewhere_label(run_dir: str, left_out: pd.DataFrame) -> str:
    """A run whose records are all on a token set this report does not compare (``left_out``: its
    rows of the records not compared): evaluated, so "run the command again" would only skip it.
    Another corpus's set (its name starts with the corpus hash) cannot be scored on this corpus's;
    the same corpus's, under other evaluation settings, can."""
    scored, compared = str(left_out["token_set"].iloc[0]), str(left_out["compared_set"].iloc[0])
    if token_set_corpus(scored) != token_set_corpus(compared):
        return (f"evaluated on another corpus's token set ({scored}); trained on other text, it cannot be scored on "
                "this one: report it with the runs of its corpus")
    return (f"evaluated on another token set ({scored}); to score it on this one ({compared}): posbench-eval "
            f"run_dir={run_dir} with the eval.* settings of the other runs")


def token_set_corpus(token_set: str) -> str:
    """The corpus hash a token set's name starts with (after a subword run's ``<tokenizer>:``, report/records/load.py)."""
    parts = token_set.split(":")
    first = next((i for i, part in enumerate(parts) if "[" in part), 1)  # the part naming the scored text
    return parts[max(first - 1, 0)]


def _whole(v) -> str:
    """32, not 32.0: a column with a gap (an unreadable run has no train_len) turns to floats."""
    if v is None or (isinstance(v, numbers.Real) and pd.isna(v)):
        return ""
    return str(int(v)) if isinstance(v, numbers.Real) and float(v).is_integer() else str(v)


def left_out_runs(ctx) -> pd.DataFrame:
    runs = ctx.runs
    other = runs[runs["status"] != "completed"][COLUMNS]
    unevaluated = ctx.unevaluated[[c for c in COLUMNS if c != "status"] + ["run_dir"]]
    if not unevaluated.empty:
        labels = [elsewhere_label(r.run_dir, ctx.left_out[ctx.left_out["run_id"] == r.run_id]) if not ctx.left_out.empty
                  and (ctx.left_out["run_id"] == r.run_id).any() else NOT_EVALUATED for r in unevaluated.itertuples()]
        other = pd.concat([other, unevaluated.drop(columns="run_dir").assign(status=labels)], ignore_index=True)
    unfinished = pd.DataFrame([incomplete_row(p) for d in ctx.runs_dirs for p in find_incomplete(d)])
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
        return not ctx.derived("not_in_tables", lambda: left_out_runs(ctx)).empty

    def build(self, ctx, out) -> list:
        return [Heading("Runs not in the table"),
                Para("Diverged or failed runs, incomplete ones (started, no metrics yet: running or killed; "
                     "re-running the sweep resumes them) and unreadable ones (a file missing or corrupt). None of "
                     "their numbers are in the tables above."),
                Table(ctx.derived("not_in_tables", lambda: left_out_runs(ctx)))]

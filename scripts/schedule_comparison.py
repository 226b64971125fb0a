"""Cosine against warmup-stable-decay at an equal budget (issue 36: which schedule the budget study uses),
from two committed reports of the same configurations:

    python scripts/schedule_comparison.py results/budget_cosine results/budget [--steps 1200]

The first folder is a report of cosine runs of ``--steps`` steps (``table.csv``, ``convergence.csv``);
the second a budget sweep's report whose ``budgets.csv`` holds the WSD branch of the same budget.
Prints a Markdown table, one line per row both hold: 1x perplexity and the longest multiple's ratio
to 1x under each schedule [95% intervals over text and seeds, as the reports give them], the
verdicts, and whether the 1x intervals overlap (where they do, the seeds there are cannot tell the
schedules apart at 1x). Exit 1 with one line where the folders do not hold that budget.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

KEYS = ["protocol", "variant", "model", "train_len"]


def _cell(row: pd.Series, col: str) -> str:
    return f"{row[col]:.2f} [{row[f'{col}_lo']:.2f}, {row[f'{col}_hi']:.2f}]"


def comparison(cosine: pd.DataFrame, wsd: pd.DataFrame, ratio: str) -> pd.DataFrame:
    """One row per (protocol, variant, model, train_len) both tables hold, unwindowed rows only."""
    both = cosine[~cosine["windowed"]].merge(wsd[~wsd["windowed"]], on=KEYS, suffixes=("", " wsd"))
    cols = ["seeds", "1x", "1x_lo", "1x_hi", ratio, f"{ratio}_lo", f"{ratio}_hi", "verdict"]
    rows = []
    for _, r in both.iterrows():
        c, w = r[cols], pd.Series({k: r[f"{k} wsd"] for k in cols})
        overlap = c["1x_lo"] <= w["1x_hi"] and w["1x_lo"] <= c["1x_hi"]
        rows.append({"row": r["variant"], "seeds": f"{int(c['seeds'])} / {int(w['seeds'])}",
                     "1x cosine": _cell(c, "1x"), "1x wsd": _cell(w, "1x"),
                     f"{ratio} cosine": f"{_cell(c, ratio)} {c['verdict']}",
                     f"{ratio} wsd": f"{_cell(w, ratio)} {w['verdict']}",
                     "1x intervals": "overlap" if overlap else ("cosine lower" if c["1x"] < w["1x"] else "wsd lower")})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cosine", type=Path, help="a report folder of cosine runs of --steps steps")
    parser.add_argument("budget", type=Path, help="a budget sweep's report folder (budgets.csv)")
    parser.add_argument("--steps", type=int, default=1200, help="the budget compared (default 1200)")
    args = parser.parse_args(argv)
    steps = pd.read_csv(args.cosine / "convergence.csv")["steps"].unique()
    if list(steps) != [args.steps]:
        sys.exit(f"schedule_comparison: {args.cosine} holds runs of {sorted(int(s) for s in steps)} steps, not only {args.steps}")
    cosine, budgets = pd.read_csv(args.cosine / "table.csv"), pd.read_csv(args.budget / "budgets.csv")
    wsd = budgets[budgets["budget_steps"] == args.steps]
    if wsd.empty:
        sys.exit(f"schedule_comparison: {args.budget / 'budgets.csv'} has no budget of {args.steps} steps; "
                 f"it has {sorted(int(s) for s in budgets['budget_steps'].unique())}")
    ratio = next(c for c in cosine.columns if c.endswith("x/1x") and not c.endswith(("_lo", "_hi")))
    table = comparison(cosine, wsd, ratio)
    if table.empty:
        sys.exit(f"schedule_comparison: {args.cosine} and {args.budget} hold no row in common")
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()

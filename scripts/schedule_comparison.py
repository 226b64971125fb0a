"""Cosine against warmup-stable-decay at an equal budget (issue 36: which schedule the budget study uses),
from two committed reports of the same configurations:

    python scripts/schedule_comparison.py results/budget_cosine results/budget [--steps 1200]

The first folder is a report of cosine runs of ``--steps`` steps; the second a budget sweep's report,
whose records at that budget are the WSD branches. Both read ``evaluations.csv`` (each seed's
per-document losses). Runs of one seed start from the same weights and read the same batches under
either schedule, so the two are paired by seed, and both were scored on the same documents: per row
both hold (unwindowed), the perplexity ratio cosine / WSD at 1x and at the longest multiple with its
95% interval over seeds and text, and the p-value of "the same", by the report's own statistics
(posbench/report/bootstrap.py: ``pair_ratio_stats``, ``compare``); beside them each schedule's 1x
perplexity and longest-multiple ratio to 1x. Prints a Markdown table; exit 1 with one line where the
folders do not hold that budget or no row in common.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from posbench.report.bootstrap import (
    cell_replicates,
    compare,
    pair_ratio_stats,
    panel_text,
    ppl_stats,
    ratio_stats,
)
from posbench.report.committed import read_evaluations
from posbench.report.stats import format_p

KEYS = ["protocol", "variant", "model", "train_len"]


def _cell(v: tuple[float, float, float], fmt: str = ".2f") -> str:
    return f"{v[0]:{fmt}} [{v[1]:{fmt}}, {v[2]:{fmt}}]"


def comparison(cosine: pd.DataFrame, wsd: pd.DataFrame, token_sets: dict) -> pd.DataFrame:
    """One line per (protocol, variant, model, train_len) both record sets hold, unwindowed rows only."""
    out = []
    cosine, wsd = cosine[~cosine["windowed"]], wsd[~wsd["windowed"]]
    for key, a in cosine.groupby(KEYS):
        b = wsd.set_index(KEYS).loc[[key]].reset_index() if key in set(wsd.groupby(KEYS).groups) else None
        if b is None:
            continue
        ms = sorted(set(a["multiple"]) & set(b["multiple"]))
        doc_tokens, draws = panel_text(pd.concat([a, b]), token_sets)
        ca, cb = (cell_replicates(g[g["multiple"].isin(ms)], ms, doc_tokens, draws) for g in (a, b))
        first, last = 0, len(ms) - 1
        name = f"{ms[last]:g}x/1x"
        out.append({
            "row": key[1], "seeds": len(set(ca.seeds) & set(cb.seeds)),
            "1x cosine": _cell(ppl_stats(ca, first)), "1x wsd": _cell(ppl_stats(cb, first)),
            "cosine / wsd at 1x": _cell(pair_ratio_stats(ca, cb, first), ".3f"), "p (1x)": format_p(compare(ca, cb, first).p),
            f"{name} cosine": _cell(ratio_stats(ca, last)), f"{name} wsd": _cell(ratio_stats(cb, last)),
            f"cosine / wsd at {ms[last]:g}x": _cell(pair_ratio_stats(ca, cb, last), ".3f"),
            f"p ({ms[last]:g}x)": format_p(compare(ca, cb, last).p)})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cosine", type=Path, help="a report folder of cosine runs of --steps steps")
    parser.add_argument("budget", type=Path, help="a budget sweep's report folder")
    parser.add_argument("--steps", type=int, default=1200, help="the budget compared (default 1200)")
    args = parser.parse_args(argv)
    cosine, cos_sets, _ = read_evaluations(args.cosine)
    steps = sorted(int(s) for s in pd.read_csv(args.cosine / "convergence.csv")["steps"].unique())
    if steps != [args.steps]:
        sys.exit(f"schedule_comparison: {args.cosine} holds runs of {steps} steps, not only {args.steps}")
    budget, sets, _ = read_evaluations(args.budget)
    have = sorted(int(s) for s in budget["budget_steps"].dropna().unique()) if "budget_steps" in budget else []
    if args.steps not in have:
        sys.exit(f"schedule_comparison: {args.budget / 'evaluations.csv'} has no budget of {args.steps} steps; it has {have}")
    table = comparison(cosine, budget[budget["budget_steps"] == args.steps], {**cos_sets, **sets})
    if table.empty:
        sys.exit(f"schedule_comparison: {args.cosine} and {args.budget} hold no row in common")
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()

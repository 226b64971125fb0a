"""Cosine against warmup-stable-decay at an equal budget (which schedule the budget study uses),
from two committed reports of the same configurations:

    python scripts/schedule_comparison.py results/budget_cosine results/budget [--steps 1200]

The first folder is a report of cosine runs of ``--steps`` steps; the second a budget sweep's report,
whose records at that budget are the WSD branches. Both read ``evaluations.csv.gz`` (each seed's
per-document losses). Runs of one seed start from the same weights and read the same batches under
either schedule, so the two are paired by seed, and both were scored on the same documents: per row
both hold (unwindowed), the perplexity ratio cosine / WSD at 1x, and the ratio of their
longest-multiple-to-1x ratios, each with its 95% interval over seeds and text and the p-value of "the
same", by the report's own statistics (posbench/report/analysis/bootstrap.py: ``pair_ratio_stats``,
``compare``), and that p-value Holm-adjusted over the rows compared (each of the two questions, at 1x
and of the ratio, is a pre-declared family of one test per row); beside them each schedule's 1x
perplexity and longest-multiple ratio to 1x. Prints a
Markdown table; exit 1 with one line where the folders do not hold that budget, hold no row in common,
or hold records that cannot be paired (other token sets, no 1x, a seed's record twice).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from posbench.report.analysis.bootstrap import (
    CellReplicates,
    cell_replicates,
    compare,
    holm,
    pair_ratio_stats,
    panel_text,
    ppl_stats,
    ratio_stats,
)
from posbench.report.records.committed import read_evaluations
from posbench.report.analysis.headline import with_interval
from posbench.report.analysis.stats import format_p

KEYS = ["protocol", "variant", "model", "train_len"]


def _cell(v: tuple[float, float, float], digits: int = 2) -> str:
    return with_interval(*v, digits=digits)


def _ratio_cell(c: CellReplicates, k: int) -> CellReplicates:
    """The cell of the ratio ppl(index k) / ppl(1x), per seed and on each draw, as a cell of one length."""
    reps = None if c.replicates is None else (c.replicates[:, :, k] - c.replicates[:, :, 0])[:, :, None]
    return replace(c, observed=(c.observed[:, k] - c.observed[:, 0])[:, None], replicates=reps)


def _paired(a: CellReplicates, b: CellReplicates, k: int) -> tuple[str, float]:
    return _cell(pair_ratio_stats(a, b, k), 3), compare(a, b, k).p


def comparison(cosine: pd.DataFrame, wsd: pd.DataFrame, token_sets: dict) -> pd.DataFrame:
    """One line per (protocol, variant, model, train_len) both record sets hold, unwindowed rows only,
    at 1x and the longest multiple both hold. SystemExit with one line where the records cannot be
    paired: not on one and the same token set, no 1x, or a seed's record twice."""
    cosine, wsd = cosine[~cosine["windowed"]], wsd[~wsd["windowed"]]
    ms = sorted(set(cosine["multiple"]) & set(wsd["multiple"]))
    if 1.0 not in ms or len(ms) < 2:
        sys.exit(f"schedule_comparison: the two folders share the multiples {ms}; 1x and a longer one are needed")
    ms = [1.0, ms[-1]]
    out, wsd_rows = [], dict(list(wsd.groupby(KEYS)))
    for key, a in cosine.groupby(KEYS):
        if key not in wsd_rows:
            continue
        a, b = a[a["multiple"].isin(ms)], wsd_rows[key][wsd_rows[key]["multiple"].isin(ms)]
        for g in (a, b):
            if g.duplicated(["seed", "multiple"]).any():
                sys.exit(f"schedule_comparison: {key[1]} has two records of one seed and length; give one budget's runs")
        sets = set(a["token_set"]) | set(b["token_set"])
        if len(sets) != 1 or next(iter(sets)) not in token_sets:
            sys.exit(f"schedule_comparison: {key[1]}'s records are on the token sets {sorted(map(str, sets))}, not on one "
                     "with per-document losses: the schedules must be scored on the same documents to be paired")
        doc_tokens, draws = panel_text(pd.concat([a, b]), token_sets)
        ca, cb = (cell_replicates(g, ms, doc_tokens, draws) for g in (a, b))
        ratio = f"{ms[1]:g}x/1x"
        at_1x, p_1x = _paired(ca, cb, 0)
        at_long, p_long = _paired(_ratio_cell(ca, 1), _ratio_cell(cb, 1), 0)
        out.append({
            "row": key[1], "seeds": len(set(ca.seeds) & set(cb.seeds)),
            "1x cosine": _cell(ppl_stats(ca, 0)), "1x wsd": _cell(ppl_stats(cb, 0)),
            "cosine / wsd at 1x": at_1x, "p (1x)": p_1x,
            f"{ratio} cosine": _cell(ratio_stats(ca, 1)), f"{ratio} wsd": _cell(ratio_stats(cb, 1)),
            f"{ratio}: cosine / wsd": at_long, f"p ({ratio})": p_long})
    table = pd.DataFrame(out)
    for p in [c for c in table.columns if c.startswith("p (")]:  # one family per question, over the rows
        table.insert(table.columns.get_loc(p) + 1, f"Holm {p}", [format_p(q) for q in holm(table[p].tolist())])
        table[p] = table[p].map(format_p)
    return table


def _steps(evals: pd.DataFrame) -> list[int]:
    return sorted(int(s) for s in evals["budget_steps"].dropna().unique()) if "budget_steps" in evals else []


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cosine", type=Path, help="a report folder of cosine runs of --steps steps")
    parser.add_argument("budget", type=Path, help="a budget sweep's report folder")
    parser.add_argument("--steps", type=int, default=1200, help="the budget compared (default 1200)")
    args = parser.parse_args(argv)
    cosine, cos_sets, _ = read_evaluations(args.cosine)
    if _steps(cosine) != [args.steps]:
        sys.exit(f"schedule_comparison: {args.cosine} holds runs of {_steps(cosine)} steps, not only {args.steps}")
    budget, sets, _ = read_evaluations(args.budget)
    if args.steps not in _steps(budget):
        sys.exit(f"schedule_comparison: {args.budget / 'evaluations.csv.gz'} has no budget of {args.steps} steps; "
                 f"it has {_steps(budget)}")
    table = comparison(cosine, budget[budget["budget_steps"] == args.steps], {**cos_sets, **sets})
    if table.empty:
        sys.exit(f"schedule_comparison: {args.cosine} and {args.budget} hold no row in common")
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()

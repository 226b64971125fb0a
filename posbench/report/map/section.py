"""The map's report section (posbench/report/map/): where the runs span more than one training length, model size,
corpus or tokenizer, each encoding's verdict at every point, the change of its statistic along each
axis tested (paired by seed where the points share seeds), and one word per encoding and axis:
holds across the axis, changes, or cannot be told. The training budget is an axis too, read from the
budget section's trend at each point."""

from __future__ import annotations

import pandas as pd

from posbench.report.budget import sweep
from posbench.report.drawing.document import Heading, Image, Para, Table
from posbench.report.headline import with_interval
from posbench.report.map import points as P
from posbench.report.map import words as W
from posbench.report.map.figure import has_baseline, plot_axis
from posbench.report.section import SECTIONS, Output, Section

BUDGET_AXIS = "budget"


def map_frames(ctx) -> dict:
    """points, changes (every axis), words; computed once per report (ctx.derived)."""
    def compute():
        pts = P.points(ctx.table, P.with_params(ctx.completed, ctx.configs), ctx.ratio_column)
        axes = P.spanned(pts)
        if not axes:
            return {"points": pts, "axes": [], "changes": pd.DataFrame(), "words": pd.DataFrame()}
        # the statistic's parts and the 1x perplexity's, from one pass over the panels' draws, once for every axis
        parts, base = sweep.row_parts_and_levels(ctx.evals, ctx.token_sets, multiple=ctx.multiple)
        changes = {a: P.axis_changes(ctx.evals, pts, a, ctx.token_sets, multiple=ctx.multiple, parts=parts, base_parts=base)
                   for a in axes}
        rows = []
        for a in axes:
            keys, order = P.line_keys(a), P.order_key(pts, a)
            for key, line in pts.groupby(keys):
                if line[a].nunique() < 2:
                    continue
                line = line.iloc[sorted(range(len(line)), key=lambda i: order(line[a].iloc[i]))]
                ch = changes[a]
                mine = ch[(ch[keys] == pd.Series(key, index=keys)).all(axis=1)] if not ch.empty else ch
                word, detail = W.word(line, mine, a, a in P.NUMERIC)
                held = ", ".join(f"{k} {v}" for k, v in zip(keys, key) if k not in ("protocol", "variant")
                                 and v not in (P.DEFAULT_CORPUS, P.PLAIN))
                rows.append({"protocol": key[0], "variant": key[1], "axis": a, "along": held, "word": word,
                             "rests on": detail})
        if ctx.has_budgets and not ctx.budget_trends.empty:
            for (protocol, variant), g in ctx.budget_trends.groupby(["protocol", "variant"]):
                if variant not in set(pts["variant"]):
                    continue  # a window control: its row's verdict is the one mapped
                last_p = g["last p"] if "last p" in g else [float("nan")] * len(g)
                word, detail = W.budget_word([(f"{m} L{t}", tr, p) for m, t, tr, p
                                              in zip(g["model"], g["train_len"], g["trend"], last_p)])
                rows.append({"protocol": protocol, "variant": variant, "axis": BUDGET_AXIS, "along": "each point's budgets",
                             "word": word, "rests on": detail})
        words = pd.DataFrame(rows).sort_values(["protocol", "variant", "axis"], kind="stable").reset_index(drop=True)
        return {"points": pts, "axes": axes, "changes": pd.concat(changes.values(), ignore_index=True), "words": words}
    return ctx.derived("map", compute)


def _with_interval(r, col: str, digits: int) -> str:
    """``r[col]`` with its 95% interval (headline.with_interval); "n/e" where not evaluated."""
    return with_interval(r.get(col), r.get(f"{col}_lo"), r.get(f"{col}_hi"), digits) or "n/e"


@SECTIONS.register("map")
class Map(Section):
    order = 43  # after the budget axis (42): the budget is one of the map's axes
    files = (Output("map_points.csv", "each row's verdict and its statistic at every point of the map, with its "
                                      "1x perplexity"),
             Output("map_changes.csv", "the verdict statistic's change between consecutive points of each axis (and "
                                       "over the whole axis), with its intervals, paired by seed where the points share seeds, "
                                       "and the 1x perplexity's change over the same step (base_change)"),
             Output("map_words.csv", "per encoding and axis: holds across the axis, changes, or cannot be told, and why"),
             Output("map_<axis>.png", "the verdict statistic against one axis, one line per encoding with its 95% band, "
                                                "and below it the 1x perplexity (not along the tokenizer)"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.ratio_column is not None and bool(map_frames(ctx)["axes"])

    def build(self, ctx, out) -> list:
        f = map_frames(ctx)
        pts, words = f["points"], f["words"]
        out.csv("map_points.csv", P.shown(pts))
        out.csv("map_changes.csv", P.shown(f["changes"]))
        out.csv("map_words.csv", words)
        blocks = [Heading("The map: verdicts across training length, size, corpus and tokenizer"),
                  Para("Each encoding's verdict at every point the runs span (at each row's largest budget), read on "
                       "equal context where the row has a window control (`basis`: equal context) and from its "
                       f"{ctx.ratio_column} ratio otherwise (on unequal context), with the statistic [95% interval] and the "
                       "perplexity at 1x beside it (per token of the point's tokenizer; a ratio can fall because its baseline "
                       "rose, so each step's words name the 1x change, tested alike, except between tokenizers). "
                       "Along each axis (the other settings held) the statistic's change between consecutive points, and "
                       "over the whole axis, is tested per doubling of the training length or of the parameters (per step "
                       "between corpora and tokenizers), paired by seed where the points share seeds, else unpaired; a "
                       f"change needs {W.MIN_SEEDS} seeds or more at both points. The words: **holds across the axis** where "
                       f"the class is the same and decided at every point and every step is bounded within "
                       f"+-{W.MARGIN:.0%} over the step by an equivalence test (TOST: its 90% interval inside); **changes** where a "
                       "step's (or the whole axis') test rejects no change at 5% after Holm's adjustment over the axis' tests "
                       "of that encoding (where, which way: *rises* means the longer context costs more, extrapolation "
                       "worsens); **cannot be told** otherwise, with the reason. The budget axis reads the budget "
                       "section's trend at each point: holds where every point's is stable, changes where one is moving "
                       "or its ratio moving, its test Holm-adjusted over the points."),
                  Para("What the intervals cannot promise: where one scored document carries a difference, a draw of "
                       "text that misses it has a shifted mean and a small variance, and at 5 seeds the interval then "
                       "covers in about 81-88% of trials rather than 95% (simulated on the committed records' structure, "
                       "posbench/report/analysis/bootstrap.py). A change whose sign leaving one document out turns says *one scored document "
                       "decides its sign*; between points on different text (two lengths' segments, two corpora) the "
                       "text term's degrees of freedom are both texts'.")]
        shown = pts.assign(**{
            "statistic": [_with_interval(r, "stat", 3) for _, r in pts.iterrows()],
            "params": [f"{p / 1e6:.2f}M" if pd.notna(p) else "" for p in pts["params"]],
            "1x ppl": [_with_interval(r, "ppl_1x", 2) for _, r in pts.iterrows()]})
        cols = ["protocol", "variant", P.SIZE, "params", P.CORPUS, P.TOKENIZER] + \
            ([P.ROPE_BASE] if (pts[P.ROPE_BASE] != P.NO_BASE).any() else []) + [P.TRAIN_LEN] + \
            [c for c in [P.PATTERN] if c in P.shown(pts)] + \
            ([sweep.BUDGET] if sweep.BUDGET in shown else []) + ["seeds", "label", "basis", "statistic", "1x ppl"]
        if ctx.has_budgets and not ctx.budget_trends.empty:
            trend = {(r["protocol"], r["variant"], r["model"], r["train_len"]): r["trend"] for _, r in ctx.budget_trends.iterrows()}
            shown["budget trend"] = [trend.get((r["protocol"], r["variant"], r["model"], r["train_len"]), "")
                                     for _, r in shown.iterrows()]
            cols.append("budget trend")
        shown = shown[cols].sort_values(["protocol", "variant", P.SIZE, P.CORPUS, P.TOKENIZER, P.TRAIN_LEN], kind="stable")
        blocks += [Table(shown.rename(columns={"label": "verdict"}).reset_index(drop=True)),
                   Table(words[["protocol", "variant", "axis", "along", "word", "rests on"]])]
        for a in f["axes"]:
            name = f"map_{a}.png"
            out.figure(name, plot_axis, pts, a, ctx.options.tolerance)
            below = "; below, the same points' perplexity at 1x" if has_baseline(pts, a) else ""
            blocks.append(Image(name, f"the verdict statistic against {P.AXIS_NAMES[a]}, one line per encoding with its "
                                      f"95% band; dotted: the classes' borders{below}"))
        return blocks

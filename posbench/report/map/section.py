"""The map's report section (posbench/report/map/): where the runs span more than one training length, model size,
corpus or tokenizer, each encoding's verdict at every point, the change of its statistic along each
axis tested (paired by seed where the points share seeds), and one word per encoding and axis:
holds across the axis, changes, or cannot be told. The training budget is an axis too, read from the
budget section's trend at each point."""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.analysis import sweep
from posbench.report.drawing.document import Bullets, Heading, Image, Para, Table
from posbench.report.drawing.style import row_order
from posbench.report.analysis.headline import verdict_css, with_interval
from posbench.report.analysis import points as P
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
        parts, base = sweep.parts_of(ctx)
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
                       "rose, so each step's words name the 1x change, tested alike, except between tokenizers)."),
                  # the tests and their words apart: as one paragraph with the above it ran to 2,000 characters
                  Para("Along each axis (the other settings held) the statistic's change between consecutive points, and "
                       "over the whole axis, is tested per doubling of the training length or of the parameters (per step "
                       "between corpora and tokenizers), paired by seed where the points share seeds, else unpaired; a "
                       f"change needs {W.MIN_SEEDS} seeds or more at both points."),
                  Bullets([f"**holds across the axis** where "
                           f"the class is the same and decided at every point and every step is bounded within "
                           f"+-{W.MARGIN:.0%} over the step by an equivalence test (TOST: its 90% interval inside);",
                           "**changes** where a "
                           "step's (or the whole axis') test rejects no change at 5% after Holm's adjustment over the axis' tests "
                           "of that encoding (where, which way: *rises* means the longer context costs more, extrapolation "
                           "worsens);",
                           "**cannot be told** otherwise, with the reason.",
                           "The budget axis reads the budget "
                           "section's trend at each point: holds where every point's is stable, changes where one is moving "
                           "or its ratio moving, its test Holm-adjusted over the points."], lead="The words:"),
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


def point_label(p) -> str:
    """A point's column name in the map table: its size and train_len, then whatever else it does not share
    with the house's centre (corpus, tokenizer, RoPE base, layer pattern)."""
    parts = [str(p[P.SIZE]), str(int(p[P.TRAIN_LEN]))]
    if p.get(P.CORPUS) not in (None, P.DEFAULT_CORPUS):
        parts.append(str(p[P.CORPUS]))
    if p.get(P.TOKENIZER) not in (None, "byte"):
        parts.append(str(p[P.TOKENIZER]))
    if p.get(P.ROPE_BASE) not in (None, P.NO_BASE):
        parts.append(f"base {p[P.ROPE_BASE]}")
    if p.get(P.PATTERN) not in (None, P.PLAIN):
        parts.append(str(p[P.PATTERN]))
    return " ".join(parts)


def answer_table(pts: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The map as one table (the answer a map report opens with): one row per encoding, one column per
    point (the first protocol; points ordered by size's parameters, then corpus, tokenizer, base, train_len),
    each cell the verdict with its statistic [95%] and the 1x perplexity beside it; and the cells' verdict
    classes (``v-<class>``: their colours in the HTML)."""
    pts = pts[pts["protocol"] == pts["protocol"].iloc[0]].copy()
    sizes = P.size_order(pts)
    pts["column"] = [point_label(p) for _, p in pts.iterrows()]
    corpus, tokenizer = P.order_key(pts, P.CORPUS), P.order_key(pts, P.TOKENIZER)  # the house's first

    def place(p) -> tuple:
        size = sizes.get(p[P.SIZE], math.inf)
        base = p.get(P.ROPE_BASE, P.NO_BASE)
        return (size if size == size else math.inf, corpus(p[P.CORPUS]), tokenizer(p[P.TOKENIZER]),
                -1.0 if base == P.NO_BASE else float(base), int(p[P.TRAIN_LEN]))
    columns = list(dict.fromkeys(p["column"] for _, p in sorted(pts.iterrows(), key=lambda ip: place(ip[1]))))
    variants = sorted(pts["variant"].unique(), key=row_order)
    text = pd.DataFrame("", index=variants, columns=columns)
    classes = pd.DataFrame("", index=variants, columns=columns)
    for _, p in pts.iterrows():
        stat = with_interval(p.get("stat"), p.get("stat_lo"), p.get("stat_hi"), 2) or "n/e"
        base = f"; 1x {p['ppl_1x']:.2f}" if pd.notna(p.get("ppl_1x")) else ""
        word = str(p.get("label") or p["verdict"]).split(" (")[0]  # "flat, local", its gloss is the headline's
        text.at[p["variant"], p["column"]] = f"{word} {stat}{base}"
        classes.at[p["variant"], p["column"]] = verdict_css(p["verdict"])
    return text.rename_axis("encoding").reset_index(), classes.rename_axis("encoding").reset_index().assign(encoding="")


@SECTIONS.register("map_answer")
class MapAnswer(Section):
    order = 3  # the answer first: before the headline (5), which lists every panel's rows one by one

    def applies(self, ctx) -> bool:
        return Map().applies(ctx)

    def build(self, ctx, out) -> list:
        shown, classes = answer_table(map_frames(ctx)["points"])
        return [Heading("The map at a glance"),
                Table(shown, css="headline", cell_class=classes),
                Para("Each encoding's verdict at every point the runs span (at each row's largest budget): the verdict "
                     "statistic [95% interval] (on equal context where the row has a window control, else "
                     f"{ctx.ratio_column}) and the perplexity at 1x; the colour is the verdict's class. Along each axis "
                     "whether it holds, changes or cannot be told: section The map, below.")]

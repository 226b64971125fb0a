"""The headline tables that open a report: one row per encoding (per variant where the report compares
variants) with its verdict, the numbers that support it and the budget it was read at.

Display only: every number is read from the main table (posbench/report/analysis/tables.py), the task table
(posbench/report/analysis/task_frames.py) or the runs' convergence (posbench/report/analysis/convergence.py) and printed with the
same precision as there; nothing is computed here that those do not already state. Each builder
returns (shown, keys, row classes): the text cells, the numbers the HTML sorts them by, and a CSS
class per row (``control`` for a chance row)."""

from __future__ import annotations

import pandas as pd

from posbench.evaluation.protocols import PROTOCOLS
from posbench.report.records.rows import parse_row_name
from posbench.report.records.load import base_of
from posbench.report.analysis.tables import NOT_DEFINED, NOT_EVALUATED

NOTES = {NOT_DEFINED: "not defined", NOT_EVALUATED: "not evaluated"}

# a verdict sorts from best to worst; a flat row that uses far context before one that is local
VERDICT_ORDER = ("flat, uses far context", "flat", "flat, far-context use undecided", "flat, local", "mild", "undecided",
                 "broken")


def verdict_rank(label: str) -> float:
    word = str(label)
    if word in VERDICT_ORDER:
        return float(VERDICT_ORDER.index(word))
    if word.startswith("flat, local"):
        return float(VERDICT_ORDER.index("flat, local"))
    head = word.split(",")[0]
    return float(VERDICT_ORDER.index(head)) + 0.5 if head in VERDICT_ORDER else float(len(VERDICT_ORDER))


RANK_OVER_LENGTHS = "rank over lengths"  # by mean log-perplexity; the summary's "rank at 1x" is another
CLASS_ORDER = ("flat", "mild", "undecided", "broken")  # then n/a: no verdict


def verdict_css(verdict_class: str) -> str:
    """The CSS class that colours a cell by its verdict class (page.py: ``v-flat`` ...); "" for none."""
    return f"v-{verdict_class}" if verdict_class in CLASS_ORDER else ""


def verdict_class_order(label: str) -> int:
    """Where a verdict's class sorts in the headline: flat, mild, undecided, broken, then none."""
    head = str(label).split(",")[0]
    return CLASS_ORDER.index(head) if head in CLASS_ORDER else len(CLASS_ORDER)


def _label(r: pd.Series, ratio: str | None) -> str:
    """A row's verdict as the headline shows it; without a ratio, why there is none."""
    if not ratio:
        return ""
    longest = ratio.split("/")[0]
    if pd.isna(r[ratio]):  # no ratio, no verdict: say why
        return NOTES.get(r.get(f"{longest}_note") or "n/e", "no verdict") + f" at {longest}"
    return r.get("label") or r.get("verdict") or ""


def with_interval(mean, lo, hi, digits: int = 2, scale: float = 1.0) -> str:
    if pd.isna(mean):
        return ""
    text = f"{scale * mean:.{digits}f}"
    return text + (f" [{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]" if pd.notna(lo) and pd.notna(hi) else "")


def budgets(conv: pd.DataFrame, keys: list[str]) -> dict[tuple, tuple[str, float]]:
    """Per ``keys`` (encoding, model, train_len, ...): the steps and tokens the runs trained for, as
    text ("600 steps, 1.23M tokens") and the tokens to sort by."""
    out = {}
    if conv is None or conv.empty:
        return out
    for key, g in conv.groupby(keys):
        steps = sorted(set(g["steps"].dropna().astype(int)))
        tokens = g["train_tokens"].dropna()
        text = "/".join(str(s) for s in steps) + " steps"
        if len(tokens):
            text += f", {tokens_text(tokens.mean())} tokens"
        out[key if isinstance(key, tuple) else (key,)] = (text, float(tokens.mean()) if len(tokens) else float("nan"))
    return out


def tokens_text(n: float) -> str:
    """1228800 -> "1.23M" (as the budget section prints it); a budget under 0.1M in full: "2,560"."""
    return f"{n / 1e6:.2f}M" if n >= 1e5 else f"{n:,.0f}"


def panel_label(rows: pd.DataFrame, keys: list[str]):
    """(column name, row -> its panel in few words), naming only what differs between the panels
    ("protocol": "sliding"; "panel": "small, L=128"): the column must stay narrow on a phone. None
    with one panel (no column)."""
    varying = [k for k in keys if rows[k].nunique() > 1]
    if not varying:
        return None
    return (varying[0] if len(varying) == 1 else "panel",
            lambda r: ", ".join(f"L={int(r[k])}" if k == "train_len" else str(r[k]) for k in varying))


def _panel_order(table: pd.DataFrame) -> pd.Series:
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    return table["protocol"].map(lambda p: order.get(p, 99))


def verdict_cells(shown: pd.DataFrame) -> pd.DataFrame:
    """A headline's cell classes (drawing/document.py ``Table.cell_class``): each ``verdict`` cell's
    class (``verdict_css`` of its word before the comma: "flat, local" is flat; "not defined at 16x"
    none), the colours the map's "at a glance" table gives its verdicts; every other cell none."""
    classes = pd.DataFrame("", index=shown.index, columns=shown.columns)
    if "verdict" in shown:
        classes["verdict"] = [verdict_css(str(v).split(",")[0].strip()) for v in shown["verdict"]]
    return classes


def lm_headline(table: pd.DataFrame, conv: pd.DataFrame, windowed: bool = False, trends: pd.DataFrame | None = None):
    """The language models' headline: the unwindowed rows (``windowed``: the windowed controls), grouped
    by panel (model, train_len, protocol), each panel's rows by verdict class then rank (mean
    log-perplexity over the lengths), with the panel named in the first column where the report has
    several. ``trends`` (posbench/report/analysis/sweep.py, a sweep of several budgets):
    each row's trend beside its budget, the largest (``conv`` holds the runs of the largest budgets)."""
    ratio = next((c for c in table.columns if c.endswith("/1x")), None)
    is_windowed = table["windowed"].fillna(False).astype(bool) if "windowed" in table else pd.Series(False, index=table.index)
    rows = table[is_windowed == windowed].assign(_p=_panel_order)
    # the answer first: a panel's rows by verdict class, then by rank over lengths within a class (an undecided
    # row with a low mean log-perplexity is not listed above a flat one)
    rows = rows.assign(_v=[verdict_class_order(_label(r, ratio)) for _, r in rows.iterrows()])
    # a model label that names a RoPE base (small|base=500) sorts by the base's number, not its text
    bases = rows["model"].map(lambda m: base_of(m))
    rows = rows.assign(_m=[b[0] for b in bases], _b=[b[1] if b[1] is not None else -1.0 for b in bases])
    rows = rows.sort_values(["_m", "_b", "train_len", "_p", "_v", "rank_mean_log_ppl", "variant"], na_position="last")
    panel_of = panel_label(rows, ["protocol", "model", "train_len"])
    has_far = "far_gain" in rows and rows["far_gain"].notna().any()
    has_equal = "equal_ctx" in rows and rows["equal_ctx"].notna().any()
    budget = budgets(conv, ["encoding", "model", "train_len"])
    trend_of = None if trends is None or trends.empty else {
        (t["protocol"], t["variant"], t["model"], t["train_len"]): t["trend"] for _, t in trends.iterrows()}
    shown, keys = [], []
    for _, r in rows.iterrows():
        # the panel first: the rows are grouped by it, and a reader finds a panel before its encodings
        s, k = ({panel_of[0]: panel_of[1](r)} if panel_of else {}), {}
        s["encoding"] = r["variant"]
        if ratio:
            label, longest = _label(r, ratio), ratio.split("/")[0]
            s["verdict"], k["verdict"] = label, verdict_rank(label)
            s[f"{ratio} [95%]"] = (with_interval(r[ratio], r[f"{ratio}_lo"], r[f"{ratio}_hi"]) if pd.notna(r[ratio])
                                   else r.get(f"{longest}_note") or "n/e")
            k[f"{ratio} [95%]"] = r[ratio]
            if has_equal:  # the statistic the verdict was read from, beside the descriptive ratio
                s[f"{longest} on equal context [95%]"] = (with_interval(r["equal_ctx"], r["equal_ctx_lo"], r["equal_ctx_hi"])
                                                          if pd.notna(r.get("equal_ctx")) else "no window control")
                k[f"{longest} on equal context [95%]"] = r.get("equal_ctx")
        if "1x" in r:  # a sweep evaluated only at longer multiples has no 1x column
            s["1x perplexity [95%]"], k["1x perplexity [95%]"] = with_interval(r["1x"], r["1x_lo"], r["1x_hi"]), r["1x"]
        if "rank_mean_log_ppl" in r:
            s[RANK_OVER_LENGTHS] = "" if pd.isna(r["rank_mean_log_ppl"]) else str(int(r["rank_mean_log_ppl"]))
            k[RANK_OVER_LENGTHS] = r["rank_mean_log_ppl"]
        if has_far:
            s["window / full"] = with_interval(r["far_gain"], r["far_gain_lo"], r["far_gain_hi"], 3)
            k["window / full"] = r["far_gain"]
        text, tokens = budget.get((parse_row_name(r["variant"]).encoding, r["model"], r["train_len"]), ("", float("nan")))
        s["budget"], k["budget"] = text, tokens
        if trend_of is not None:
            s["trend"] = k["trend"] = trend_of.get((r["protocol"], r["variant"], r["model"], r["train_len"]), "")
        shown.append(s)
        keys.append(k)
    return pd.DataFrame(shown), pd.DataFrame(keys), [""] * len(shown)


def task_headline(table: pd.DataFrame, conv: pd.DataFrame):
    """The tasks' headline: per task, model and train_len its rows by accuracy beyond train_len (best
    first), then the chance row (the score without retrieving) to read them against."""
    cols = sorted([c for c in table.columns if c.endswith("x") and c[:-1].replace(".", "").isdigit()], key=lambda c: float(c[:-1]))
    longest = cols[-1]
    panel_of = panel_label(table, ["model", "train_len"])
    budget = budgets(conv, ["task", "encoding", "model", "train_len"])
    shown, keys, classes = [], [], []
    at_1x, at_long = "1x accuracy % [95%]", f"{longest} accuracy % [95%]"
    for (task, model, train_len), g in table.groupby(["task", "model", "train_len"], sort=True):
        for _, r in g.sort_values("beyond train_len", ascending=False).iterrows():
            text, tokens = budget.get((task, parse_row_name(r["variant"]).encoding, model, train_len), ("", float("nan")))
            shown.append({"task": task, "encoding": r["variant"], **({panel_of[0]: panel_of[1](r)} if panel_of else {}),
                          at_1x: with_interval(r.get("1x"), r.get("1x_lo"), r.get("1x_hi"), 0, 100),
                          at_long: with_interval(r[longest], r[f"{longest}_lo"], r[f"{longest}_hi"], 0, 100),
                          "beyond train_len %": "" if pd.isna(r["beyond train_len"]) else f"{100 * r['beyond train_len']:.0f}",
                          "effective length": str(int(r["effective length"])), "budget": text})
            keys.append({at_1x: r.get("1x"), at_long: r[longest], "beyond train_len %": r["beyond train_len"],
                         "effective length": r["effective length"], "budget": tokens})
            classes.append("")
        chance = g["chance"].dropna()
        if len(chance):
            c = f"{100 * chance.mean():.0f}"
            shown.append({"task": task, "encoding": "chance (no retrieval)", **({panel_of[0]: panel_of[1](g.iloc[0])} if panel_of else {}),
                          at_1x: c, at_long: c, "beyond train_len %": c, "effective length": "", "budget": ""})
            keys.append({at_1x: chance.mean(), at_long: chance.mean(), "beyond train_len %": chance.mean()})
            classes.append("control")
    return pd.DataFrame(shown), pd.DataFrame(keys), classes

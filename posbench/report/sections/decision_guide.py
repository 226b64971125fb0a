"""Which RoPE context extension to use: for RoPE models trained at L and each target m x L, every method
and factor the runs hold (zero-shot evaluation rows ``rope+<scaling>``, training-free extenders
``rope+rerope``..., and extension runs ``rope+<method>@<s>x+ft<steps>`` after each number of fine-tuning
steps) against perplexity at 1x and at the target, each the mean over seeds with its 95% t-interval.

The targets are the extension runs' targets and the longest evaluated multiple. A sentence names the
best choice at a target only where its interval lies wholly below the runner-up's ("separated"); else it
says there is no significant difference between them (and with one seed, that there is no interval).
Built on the report context's comparable records (one token set per panel), nothing else read.
"""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.stats import ci95_halfwidth
from posbench.report.style import parse_row

ENCODING = "rope"
COLUMNS = ["model", "train_len", "target", "method", "factor", "steps", "seeds", "ppl_1x", "ppl_1x_ci95",
           "ppl_target", "ppl_target_ci95", "row"]


def _describe(row: str) -> tuple[str, str, int | None]:
    """(method, factor, fine-tuning steps; None: zero-shot at evaluation) of a RoPE row's name."""
    parsed = parse_row(row)
    if parsed.extension is not None:
        ext = parsed.extension
        return ("continued (none)" if ext.method == "plain" else ext.method), f"{ext.factor:g}x", ext.steps
    rest = row[len(ENCODING):].lstrip("+")
    if not rest:
        return "plain RoPE", "", None
    method, _, factor = rest.partition("@")
    return method, factor, None


def guide_frame(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, train_len, target, RoPE row): means and 95% half-widths over seeds."""
    if evals.empty:
        return pd.DataFrame(columns=COLUMNS)
    rope = evals[(evals["encoding"] == ENCODING) & evals["ppl"].notna()]
    # one protocol (non-overlapping where there is one): two protocols' numbers are not averaged together
    protocols = sorted(rope["protocol"].unique(), key=lambda p: (p != "nonoverlapping", p))
    rope = rope[rope["protocol"] == protocols[0]] if protocols else rope
    plain_attention = [parse_row(str(v)).window is None and parse_row(str(v)).temperature is None for v in rope["variant"]]
    rope = rope.loc[pd.Series(plain_attention, index=rope.index, dtype=bool)]
    out = []
    for (model, L), panel in rope.groupby(["model", "train_len"]):
        targets = {int(round(ext.factor * L)) for v in panel["variant"].unique()
                   if (ext := parse_row(str(v)).extension) is not None}
        longest = int(panel["length"].max())
        targets |= {longest} if longest > L else set()
        for target in sorted(targets):
            for row, sub in panel.groupby("variant"):
                method, factor, steps = _describe(str(row))
                ext = parse_row(str(row)).extension
                if ext is not None and int(round(ext.factor * L)) != target:
                    continue  # a fine-tune for another target
                at_1x = sub[sub["length"] == L].groupby("seed")["ppl"].mean()
                at_t = sub[sub["length"] == target].groupby("seed")["ppl"].mean()
                if at_t.empty:
                    continue
                out.append({"model": model, "train_len": int(L), "target": f"{target // L:g}x" if target % L == 0 else str(target),
                            "method": method, "factor": factor, "steps": "zero-shot" if steps is None else steps,
                            "seeds": int(len(at_t)), "ppl_1x": at_1x.mean() if len(at_1x) else math.nan,
                            "ppl_1x_ci95": ci95_halfwidth(at_1x.values), "ppl_target": at_t.mean(),
                            "ppl_target_ci95": ci95_halfwidth(at_t.values), "row": row})
    frame = pd.DataFrame(out, columns=COLUMNS)
    return frame.sort_values(["model", "train_len", "target", "ppl_target"]).reset_index(drop=True)


def verdict(panel: pd.DataFrame) -> str:
    """The sentence of one (model, train_len, target): the best row where its interval lies below every
    other's, else 'no significant difference'."""
    ranked = panel.sort_values("ppl_target")
    best = ranked.iloc[0]
    if len(ranked) == 1:
        return f"only {best['row']} was evaluated at this target."
    second = ranked.iloc[1]
    if math.isnan(best["ppl_target_ci95"]) or math.isnan(second["ppl_target_ci95"]):
        return (f"lowest mean: {best['row']} ({best['ppl_target']:.2f}); one seed, so no interval and no verdict: "
                "no significant difference can be claimed.")
    if best["ppl_target"] + best["ppl_target_ci95"] < second["ppl_target"] - second["ppl_target_ci95"]:
        return (f"best choice: **{best['row']}** ({best['ppl_target']:.2f} ± {best['ppl_target_ci95']:.2f}); its 95% "
                f"interval lies below the runner-up's, {second['row']} ({second['ppl_target']:.2f} ± "
                f"{second['ppl_target_ci95']:.2f}).")
    tied = [r for _, r in ranked.iloc[1:].iterrows()
            if r["ppl_target"] - r["ppl_target_ci95"] <= best["ppl_target"] + best["ppl_target_ci95"]]
    names = ", ".join(r["row"] for r in tied[:4]) + (f" and {len(tied) - 4} more" if len(tied) > 4 else "")
    return (f"no significant difference between {best['row']} ({best['ppl_target']:.2f} ± "
            f"{best['ppl_target_ci95']:.2f}, the lowest mean) and {names}: their 95% intervals overlap.")


def _cell(mean: float, ci: float) -> str:
    if math.isnan(mean):
        return "n/e"
    return f"{mean:.2f}" if math.isnan(ci) else f"{mean:.2f} ± {ci:.2f}"


@SECTIONS.register("decision_guide")
class DecisionGuide(Section):
    order = 55  # after context extension by fine-tuning (50)
    files = (Output("decision_guide.csv", "RoPE context extension: each method, factor and fine-tuning step count "
                                          "against perplexity at 1x and at each target, with 95% intervals"),)

    def applies(self, ctx) -> bool:
        frame = ctx.derived("decision_guide", lambda: guide_frame(ctx.evals))
        return ctx.has_lm and not frame.empty and frame["row"].nunique() > 1

    def build(self, ctx, out) -> list:
        frame = ctx.derived("decision_guide", lambda: guide_frame(ctx.evals))
        out.csv("decision_guide.csv", frame)
        blocks = [Heading("Decision guide: extending a RoPE model"),
                  Para("For RoPE models trained at `train_len` and each target length (the extension runs' targets and "
                       "the longest evaluated multiple): every method and factor, zero-shot (evaluation rows: RoPE "
                       "scalings, training-free extenders) and after each number of fine-tuning steps (extension runs), "
                       "with perplexity at 1x and at the target, mean ± 95% t-interval over seeds. A best choice is "
                       "named only where its interval lies below the runner-up's (`decision_guide.csv`).")]
        for (model, L, target), panel in frame.groupby(["model", "train_len", "target"], sort=False):
            shown = pd.DataFrame({"method": panel["method"], "factor": panel["factor"], "fine-tune steps": panel["steps"],
                                  "1x": [_cell(m, c) for m, c in zip(panel["ppl_1x"], panel["ppl_1x_ci95"])],
                                  target: [_cell(m, c) for m, c in zip(panel["ppl_target"], panel["ppl_target_ci95"])],
                                  "seeds": panel["seeds"]})
            blocks += [Heading(f"{model}, trained at {L}, target {target}", level=3),
                       Para(f"At {target}: {verdict(panel)}"), Table(shown.reset_index(drop=True))]
        return blocks

"""Which RoPE context extension to use: for RoPE models trained at L and each target m x L, every method
and factor the runs hold (zero-shot evaluation rows ``rope+<scaling>``, training-free extenders
``rope+rerope``..., and extension runs ``rope+<method>@<s>x+ft<steps>`` after each number of fine-tuning
steps) against perplexity at 1x and at the target: the geometric mean over seeds with its 95% interval
over text and seeds, as the main table (posbench/report/analysis/bootstrap.py: Student's t on the per-seed values
with the documents' variance added; rows of the same weights are compared over documents, rows of
other weights, such as fine-tunes, over seeds).

The targets are the extension runs' targets and the longest evaluated multiple. A fine-tune appears at
its own target and at every longer one it was evaluated at (its factor says which target it was tuned
for); the control (the parent continued at train_len) at every target. At each target every row is
compared with the lowest mean (the bootstrap p-value of the difference of mean log-perplexities,
Holm-corrected over the target's comparisons). A sentence names the best choice only where every
comparison is significant; else it names the rows that are not significantly different from it (and
with one seed and no per-document losses, says there is no interval). Records without per-document
losses fall back to seeds alone (t-intervals, paired t-tests), as in the main table.
Built on the report context's comparable records (one token set per panel), nothing else read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from posbench.report.analysis import bootstrap
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.stats import ALPHA, format_p, p_phrase
from posbench.report.records.rows import parse_row_name
from posbench.report.analysis.tables import interval_kind, row_caveats

ENCODING = "rope"
COLUMNS = ["model", "train_len", "target", "method", "factor", "steps", "seeds", "interval", "ppl_1x", "ppl_1x_lo",
           "ppl_1x_hi", "ppl_target", "ppl_target_lo", "ppl_target_hi", "p_vs_best", "p_holm", "test", "unresolved", "row"]


def _describe(row: str) -> tuple[str, str, int | None]:
    """(method, factor, fine-tuning steps; None: zero-shot at evaluation) of a RoPE row's name."""
    parsed = parse_row_name(row)
    if parsed.extension is not None:
        ext = parsed.extension
        if ext.method == "plain":  # fine-tuned without a scaling: at the target, or the control at train_len
            method = "control: continued at train_len" if ext.factor == 1 else "plain (no scaling)"
        else:
            method = ext.method
        return method, f"{ext.factor:g}x", ext.steps
    rest = row[len(ENCODING):].lstrip("+")
    if not rest:
        return "plain RoPE", "", None
    method, _, factor = rest.partition("@")
    return method, factor, None


def _rope_rows(evals: pd.DataFrame) -> pd.DataFrame:
    """RoPE's records on one protocol (non-overlapping where there is one: two protocols' numbers are not
    averaged together), without evaluation-time windows and temperatures (not extension methods)."""
    rope = evals[(evals["encoding"] == ENCODING) & evals["ppl"].notna()]
    protocols = sorted(rope["protocol"].unique(), key=lambda p: (p != "nonoverlapping", p))
    rope = rope[rope["protocol"] == protocols[0]] if protocols else rope
    plain = [parse_row_name(str(v)).window is None and parse_row_name(str(v)).temperature is None for v in rope["variant"]]
    keep = pd.Series(plain, index=rope.index, dtype=bool)
    if "windowed" in rope:  # what the record says of its row: every window variant (+bca, +swaL, ...)
        keep &= ~rope["windowed"].fillna(False).astype(bool)
    return rope.loc[keep]


def guide_frame(evals: pd.DataFrame, token_sets: dict | None = None,
                replicates: int = bootstrap.REPLICATES) -> pd.DataFrame:
    """One row per (model, train_len, target, RoPE row): mean perplexities over seeds at 1x and at the
    target with their 95% intervals, and the comparison with the target's lowest mean.
    ``token_sets``: each token set's ``doc_tokens`` (without them: intervals over seeds alone)."""
    if evals.empty:
        return pd.DataFrame(columns=COLUMNS)
    rope, out = _rope_rows(evals), []
    for (model, L), panel in rope.groupby(["model", "train_len"]):
        targets = {int(round(ext.factor * L)) for v in panel["variant"].unique()
                   if (ext := parse_row_name(str(v)).extension) is not None and ext.factor > 1}
        lengths = sorted(int(x) for x in panel["length"].unique())
        targets |= {lengths[-1]} if lengths[-1] > L else set()
        doc_tokens, draws = bootstrap.panel_text(panel, token_sets, replicates)
        cells = {row: bootstrap.cell_replicates(sub, lengths, doc_tokens, draws, by="length")
                 for row, sub in panel.groupby("variant")}
        for target in sorted(t for t in targets if t in lengths):  # (a target no run was scored at: no table)
            k, k1 = lengths.index(target), (lengths.index(L) if L in lengths else None)
            rows = []
            for row, c in cells.items():
                ext = parse_row_name(str(row)).extension
                if (ext is not None and int(round(ext.factor * L)) > target) or not np.isfinite(c.observed[:, k]).any():
                    continue  # a fine-tune for a longer target, or a row not evaluated at this one
                method, factor, steps = _describe(str(row))
                ppl_1x = bootstrap.ppl_stats(c, k1) if k1 is not None else (math.nan,) * 3
                rows.append({"model": model, "train_len": int(L),
                             "target": f"{target // L:g}x" if target % L == 0 else str(target),
                             "method": method, "factor": factor, "steps": "zero-shot" if steps is None else steps,
                             "seeds": int(np.isfinite(c.observed[:, k]).sum()),
                             "interval": interval_kind(c),
                             **dict(zip(["ppl_1x", "ppl_1x_lo", "ppl_1x_hi"], ppl_1x)),
                             **dict(zip(["ppl_target", "ppl_target_lo", "ppl_target_hi"], bootstrap.ppl_stats(c, k))),
                             "p_vs_best": math.nan, "p_holm": math.nan, "test": "", "unresolved": "", "row": row})
            if len(rows) < 2:
                continue  # nothing to choose between (e.g. a model trained at the target, alone)
            _compare(rows, cells, k)
            # the loops already run in (model, train_len, target length) order: "16x" after "4x";
            # within a target, by perplexity (a row without a mean last)
            out += sorted(rows, key=lambda r: (math.isnan(r["ppl_target"]), r["ppl_target"]))
    return pd.DataFrame(out, columns=COLUMNS)


def _compare(rows: list[dict], cells: dict, k: int) -> None:
    """Fill ``p_vs_best`` and ``p_holm`` of each row against the lowest mean at the target (they stay
    NaN for it, and for a row missing a seed at the target: it has no mean)."""
    scored = [r for r in rows if np.isfinite(r["ppl_target"])]
    if not scored:
        return
    best = min(scored, key=lambda r: r["ppl_target"])
    others = [r for r in scored if r is not best]
    results = [bootstrap.compare(cells[r["row"]], cells[best["row"]], k) for r in others]
    for r, result, adjusted in zip(others, results, bootstrap.holm([x.p for x in results])):
        r["p_vs_best"], r["p_holm"], r["test"], r["unresolved"] = result.p, adjusted, result.test, result.note


def target_sentence(panel: pd.DataFrame) -> str:
    """The sentence of one (model, train_len, target): the best row where every comparison with it is
    significant after Holm's correction, else the rows not significantly different from it."""
    ranked = panel.sort_values("ppl_target")
    best = ranked.iloc[0]
    if len(ranked) == 1:
        return f"only {best['row']} was evaluated at this target."
    others = ranked.iloc[1:]
    if others["p_holm"].isna().all():
        why = next((u for u in others["unresolved"] if u), "one seed and no per-document losses, so no test")
        return (f"lowest mean: {best['row']} ({best['ppl_target']:.2f}); comparisons with it {why}: no significant "
                "difference can be claimed.")
    unresolved = others[others["p_holm"].isna() & (others["unresolved"] != "")]
    others = others[others["p_holm"].notna()]
    tied = others[~(others["p_holm"] < ALPHA)]
    if tied.empty and unresolved.empty:
        second = others.iloc[0]
        return (f"best choice: **{best['row']}** ({_cell(best, 'ppl_target')}); every other row is significantly "
                f"worse (Holm-corrected p < {ALPHA:g}), the runner-up {second['row']} ({_cell(second, 'ppl_target')}, "
                f"p {p_phrase(second['p_holm'], 3)}).")
    names = ", ".join(f"{r['row']} (p {p_phrase(r['p_holm'])})" for _, r in tied.head(4).iterrows())
    names += f" and {len(tied) - 4} more" if len(tied) > 4 else ""
    text = (f"no significant difference between {best['row']} ({_cell(best, 'ppl_target')}, the lowest mean) and "
            f"{names} (Holm-corrected, alpha {ALPHA:g})." if not tied.empty else
            f"lowest mean: {best['row']} ({_cell(best, 'ppl_target')}); every row tested against it is significantly "
            f"worse (Holm-corrected p < {ALPHA:g}).")
    if not unresolved.empty:
        text += (f" Against {', '.join(unresolved['row'].head(4))}{' and more' if len(unresolved) > 4 else ''} "
                 f"(other weights): {unresolved['unresolved'].iloc[0]}.")
    return text


def _cell(r, col: str) -> str:
    mean, lo, hi = r[col], r[f"{col}_lo"], r[f"{col}_hi"]
    if math.isnan(mean):
        return "n/e"
    return f"{mean:.2f}" if math.isnan(lo) else f"{mean:.2f} [{lo:.2f}, {hi:.2f}]"


@SECTIONS.register("decision_guide")
class DecisionGuide(Section):
    order = 55  # after context extension by fine-tuning (50)
    files = (Output("decision_guide.csv", "RoPE context extension: each method, factor and fine-tuning step count "
                                          "against perplexity at 1x and at each target, with 95% intervals"),)

    def applies(self, ctx) -> bool:
        frame = ctx.derived("decision_guide", lambda: guide_frame(ctx.evals, ctx.token_sets))
        return ctx.has_lm and not frame.empty and frame["row"].nunique() > 1

    def build(self, ctx, out) -> list:
        frame = ctx.derived("decision_guide", lambda: guide_frame(ctx.evals, ctx.token_sets))
        out.csv("decision_guide.csv", frame)
        blocks = [Heading("Decision guide: extending a RoPE model"),
                  Para("For RoPE models trained at `train_len` and each target length (the extension runs' targets and "
                       "the longest evaluated multiple): every method and factor, zero-shot (evaluation rows: RoPE "
                       "scalings, training-free extenders) and after each number of fine-tuning steps (extension runs), "
                       "with perplexity at 1x and at the target: the geometric mean over seeds [95% interval over text and "
                       "seeds, as the main table; over seeds alone where the records have no per-document "
                       "losses: `interval` in `decision_guide.csv`], and the Holm-corrected p-value of the comparison "
                       "with the target's lowest mean (rows of the same weights: paired over documents; of other "
                       "weights, such as a fine-tune: t over seeds, \"n/r\" (not resolvable) with one seed)."),
                  # what follows, apart (as one paragraph with the above it ran to 1,200 characters and more)
                  Para("A fine-tune appears at its own target and at every longer one it "
                       "was scored at (its factor names the target it was tuned for); the control (continued at "
                       "train_len) at every target. A best choice is named only where every comparison with it is "
                       "significant (`decision_guide.csv`)." + "".join(f" {n}" for n in row_caveats(frame["row"])))]
        for (model, L, target), panel in frame.groupby(["model", "train_len", "target"], sort=False):
            shown = pd.DataFrame({"method": panel["method"], "factor": panel["factor"], "fine-tune steps": panel["steps"],
                                  "1x": [_cell(r, "ppl_1x") for _, r in panel.iterrows()],
                                  target: [_cell(r, "ppl_target") for _, r in panel.iterrows()],
                                  "p vs lowest (Holm)": [format_p(p) if not u else "n/r" for p, u in
                                                         zip(panel["p_holm"], panel["unresolved"])],
                                  "seeds": panel["seeds"]})
            blocks += [Heading(f"{model}, trained at {L}, target {target}", level=3),
                       Para(f"At {target}: {target_sentence(panel)}"), Table(shown.reset_index(drop=True))]
        return blocks

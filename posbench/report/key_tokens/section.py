"""Key tokens beside every ratio: for each row scored beside its window control ``+swaL`` whose runs
kept both passes' per-token losses (token_losses.npz), the share of tokens that need the context
past train_len, their perplexity and the far-context gain on them (posbench/report/key_tokens/frames.py),
and the loss by position under both passes. Absent from reports of runs without those files; a report
rebuilt from its records shows the committed report's table and figure (the records keep no per-token
losses), with the rows of each report it joined (``--with``) in place of theirs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from posbench.core.errors import PosbenchError

from posbench.report.drawing import plot
from posbench.report.drawing.document import Bullets, Heading, Image, Para, Table
from posbench.report.drawing.figure_layout import wrapped_grid
from posbench.report.drawing.png import keep_figure
from posbench.report.analysis.headline import with_interval
from posbench.report.key_tokens.frames import NO_KEY_TOKENS, RULES, key_token_frames
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.tables import CELL_KEYS, fmt_multiple

TABLE = Output("key_tokens.csv", "key tokens per row and multiple: share, perplexity, far-context gain, intervals")
FIGURE = Output("window_curves.png", "loss by position in the window, full pass against the window control")


def _frames(ctx):
    return ctx.derived("key_tokens", lambda: key_token_frames(ctx.evals, ctx.token_losses, ctx.token_sets, _rule(ctx),
                                                              read=ctx.key_counts))


def _rule(ctx):
    return RULES[ctx.options.key_tokens]


def _percent(r: pd.Series, name: str) -> str:
    if pd.isna(r[name]):
        return ""
    return with_interval(100 * r[name], 100 * r[f"{name}_lo"], 100 * r[f"{name}_hi"], digits=2) + "%"


def display(keys: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """The section's table: one line per row and multiple; at the row's verdict multiple, the main
    table's ratio and its far-context gain on every token beside the key-token numbers."""
    ratio = next((c for c in main.columns if c.endswith("/1x")), None) if not main.empty else None
    longest = float(ratio.split("/")[0][:-1]) if ratio else None
    main_rows = {tuple(r[k] for k in CELL_KEYS): r for _, r in main.iterrows()} if not main.empty else {}
    rows = []
    for _, r in keys.iterrows():
        cell = tuple(r[k] for k in CELL_KEYS)
        m = main_rows.get(cell)
        at_verdict = m is not None and longest is not None and r["multiple"] == longest
        has_keys = r["seeds_with_keys"] > 0
        rows.append({
            "protocol": r["protocol"], "model": r["model"], "train_len": r["train_len"], "row": r["variant"],
            "multiple": fmt_multiple(r["multiple"]), "seeds": f"{r['seeds_with_keys']}/{r['seeds']}",
            "key tokens": _percent(r, "share"), "mirror tokens": _percent(r, "mirror_share"),
            "key ppl (full)": with_interval(r["key_ppl"], r["key_ppl_lo"], r["key_ppl_hi"]) if has_keys else NO_KEY_TOKENS,
            "key ppl (window)": with_interval(r["key_ppl_window"], r["key_ppl_window_lo"], r["key_ppl_window_hi"])
            if has_keys else "",
            "gain on key tokens": with_interval(r["gain"], r["gain_lo"], r["gain_hi"]) if has_keys else "",
            ratio or "ratio": with_interval(m[ratio], m[f"{ratio}_lo"], m[f"{ratio}_hi"], digits=3) if at_verdict else "",
            "far gain, all tokens": with_interval(m["far_gain"], m["far_gain_lo"], m["far_gain_hi"], digits=3)
            if at_verdict and "far_gain" in m else "",
        })
    return pd.DataFrame(rows)


def plot_window_curves(curves: dict, path) -> None:
    """One panel per row: mean loss by position in the window (1-based, log scale) under the full
    pass (the row's colour) and under its window control (black, dashed), at its longest length,
    over every seed's scored tokens, with a moving average; the dotted line marks train_len."""
    cells = sorted(curves, key=lambda c: tuple(map(str, c)))
    n_rows, n_cols = wrapped_grid(1, len(cells))
    fig, axes = plot.plt.subplots(n_rows, n_cols, figsize=(3.6 * n_cols, 2.8 * n_rows), squeeze=False)
    for ax in axes.flat[len(cells):]:
        ax.set_visible(False)
    for i, (protocol, variant, model, train_len) in enumerate(cells):
        ax = axes.flat[i]
        L, full, window = curves[(protocol, variant, model, train_len)]
        x = np.arange(1, L + 1)
        keep = ~np.isnan(full) & ~np.isnan(window)
        k = max(1, int(keep.sum()) // 64)  # moving average: few tokens per position are noisy
        for curve, label, colour, style in ((full, variant, plot.colour(variant), "-"),
                                             (window, f"{variant}+swaL", "black", "--")):
            smooth = np.convolve(curve[keep], np.ones(k) / k, mode="valid")
            ax.plot(x[keep][k // 2: k // 2 + len(smooth)], smooth, color=colour, linestyle=style, lw=1.2, label=label)
        ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(plot.PLAIN)
        ax.xaxis.set_minor_formatter(NullFormatter())
        plot.finish_panel(ax, f"{variant}\n{protocol}, {model}, L={L} (trained at {train_len})",
                              i >= len(cells) - n_cols, i % n_cols == 0, "position in window (1-based)",
                              "mean loss (nats)", True)
    fig.tight_layout()
    plot.save(fig, path)


def committed_table(path) -> pd.DataFrame:
    """A committed report's key_tokens.csv: a rebuild keeps its numbers (they come from the runs'
    token_losses.npz, which the records do not keep) and reads them with the current layout."""
    try:
        keys = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise PosbenchError(f"cannot read {path}: {e}; restore it from git or regenerate the report from its runs") from None
    if missing := [c for c in ("multiple", "seeds", "seeds_with_keys", *CELL_KEYS) if c not in keys.columns]:
        raise PosbenchError(f"{path} lacks the column(s) {', '.join(missing)}; restore it from git or regenerate the "
                            "report from its runs")
    return keys


def joined_rows(keys: pd.DataFrame, joins) -> tuple[pd.DataFrame, list[str]]:
    """A rebuilt report's key-token table with the rows of each joined folder's own key_tokens.csv in
    place of its (a report of some of the same runs retrained or re-scored later: its records replaced
    this report's, so its key tokens must too), and the cells replaced ("`variant` (model)"). A row is
    taken only for a cell this report has, resting on as many seeds as this report's row (every run of
    the cell re-scored): a joined folder that re-scored some seeds of a cell cannot give the cell's row."""
    match = [*CELL_KEYS, "multiple"]
    replaced = []
    for join in joins:
        path = Path(join.folder) / TABLE.name
        if not path.is_file():
            continue
        newer = committed_table(path).set_index(match)
        mine = keys.set_index(match)
        take = newer.index.intersection(mine.index)
        take = take[(newer.loc[take, "seeds"].to_numpy() == mine.loc[take, "seeds"].to_numpy())]
        if take.empty:
            continue
        mine = pd.concat([mine.drop(index=take), newer.loc[take, [c for c in mine.columns if c in newer.columns]]])
        keys = mine.reset_index()
        replaced += sorted({f"`{v}` ({m})" for v, m in zip(take.get_level_values("variant"), take.get_level_values("model"))})
    return keys.sort_values(match, kind="stable").reset_index(drop=True), sorted(set(replaced))


@SECTIONS.register("key_tokens")
class KeyTokens(Section):
    order = 21  # right after the main table, whose ratios and far-context gains it qualifies
    files = (TABLE, FIGURE)
    title = "Key tokens: does each row use the context past train_len?"  # a rebuild reads the committed table (applies)
    caption = ("Key tokens (Fang et al. 2024, LongPPL) chosen by each row's own full pass against its window control "
               "`+swaL` on the same tokens, and the loss by position in the window under both passes.")

    def applies(self, ctx) -> bool:
        if not ctx.has_lm:
            return False
        if ctx.recorded is not None:  # rebuilt from records, which keep no per-token losses: the committed table
            return (ctx.recorded.folder / TABLE.name).is_file()
        return not _frames(ctx).table.empty

    def build(self, ctx, out) -> list:
        replaced = []
        if ctx.recorded is not None:
            keys, curves = committed_table(ctx.recorded.folder / TABLE.name), {}
            keys, replaced = joined_rows(keys, ctx.recorded.joins)
        else:
            frames = _frames(ctx)
            keys, curves = frames.table, frames.curves
        out.csv(TABLE.name, keys)
        blocks = [Heading(self.title),
                  Para("A token is a key token of a row when the row's full pass predicts it far better than the same "
                       "weights limited to train_len keys per token (its window control `+swaL`, on the same tokens; a "
                       "recurrent layer reads each token after train_len to 2 train_len - 1 tokens), "
                       "and predicts it well: LSD = loss(window) - loss(full) > alpha and LCL = -loss(full) > beta "
                       f"(Fang et al. 2024, arXiv 2410.23771; here {_rule(ctx).describe()}; docs/protocols.md, \"Key "
                       "tokens\")."),
                  # the columns one item each (with the definition, one paragraph of 1,200 characters)
                  Bullets(["`key tokens`: their share of the tokens scored; `mirror tokens`: the share the "
                           "window predicts better by the same margin (the noise floor: where far context is noise the two "
                           "are alike).",
                           "`key ppl`: the perplexity on the key tokens under the full pass (LongPPL with the "
                           "row as its own evaluator) and under the window; `gain on key tokens`: the second over the first "
                           "(at least exp(alpha) per token by construction: read it with the share).",
                           "Beside them, at the "
                           "verdict's multiple, the main table's ratio and its far-context gain on every token.",
                           "Brackets: "
                           "95% intervals over the scored documents and seeds (docs/report.md); perplexities and gains over "
                           "the seeds with key tokens (`seeds`)."])]
        if not (keys["seeds_with_keys"] > 0).any():
            blocks.append(Para("No row has key tokens at any multiple under this rule."))
        blocks.append(Table(display(keys, ctx.table)))
        figure = ctx.recorded.folder / FIGURE.name if ctx.recorded is not None else None
        description = FIGURE.description
        if curves:
            out.figure(FIGURE.name, plot_window_curves, curves)
        elif figure is not None and figure.is_file():  # the committed report's, copied where it is written elsewhere
            description += " (the committed report's figure, not redrawn"
            description += (f"; the curves of {', '.join(replaced)} are from before their runs were "
                            "re-scored: their folders' own window_curves.png have the new ones)" if replaced else ")")
            out.figure(FIGURE.name, lambda path: keep_figure(figure, path), description=description)
        else:
            return blocks
        blocks += [Para("Loss by position in the window at each row's longest length, full pass against its window "
                        "control (mean over seeds and scored tokens, moving average). Left of the dotted line "
                        "(train_len) both passes see the same keys; right of it the gap is what the keys beyond "
                        "train_len are worth to the row at that distance from the window's start."),
                   Image(FIGURE.name, description)]
        return blocks


__all__ = ["KeyTokens", "display", "plot_window_curves"]

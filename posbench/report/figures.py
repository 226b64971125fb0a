"""The report's figures (matplotlib, files only). Every row keeps one colour in every figure of
every report: its style comes from its encoding (posbench/report/drawing/style.py), not from which runs a
report happens to contain. Figures draw one family per column, so that no panel holds more than a
handful of lines (a sweep of every encoding has 19 variants); nope, the baseline, is drawn dashed
in every family. The figures receive what they draw (tables, curves); they read no run files."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Mapping

# the shared plot helpers first: drawing/plot.py sets matplotlib up (a writable config dir, Agg)
from posbench.report.drawing.plot import (
    BASELINE,
    PANEL,
    PLAIN,
    colour,
    family_grid,
    family_lines,
    family_of,
    finish_panel,
    linestyle,
    save,
)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from posbench.report.extension import CONTROL
from posbench.report.drawing.figure_layout import family_columns, first_in_grid_row
from posbench.report.drawing.style import families_in, row_order
from posbench.report.analysis.tables import completed, multiple_columns
from posbench.report.analysis.verdicts import MILD_LIMIT, UNDECIDED
from posbench.store.rundir import per_position_key
from posbench.tasks import TASKS

METRIC_WORDS = {"exact": "exact match", "token_accuracy": "token accuracy"}


def plot_ppl_vs_length(table: pd.DataFrame, path: Path) -> None:
    """Perplexity against length, log-log; one row per (protocol, model, train_len), one column per
    family of encodings (shared y axis within a row); line = mean over seeds, band = 95% t-interval
    (two or more seeds), both read from the main table so that the figure shows the table's numbers."""
    cols = multiple_columns(table)
    rows = sorted(table.groupby(["protocol", *PANEL]).groups)
    fams = family_columns(table["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (protocol, model, train_len) in enumerate(rows):
        sub = table[(table["protocol"] == protocol) & (table["model"] == model) & (table["train_len"] == train_len)]
        lengths = np.array([round(train_len * float(m[:-1])) for m in cols])
        for c, (fam, names) in enumerate(fams):
            ax = axes[r][c]
            members = family_lines(ax, sub, names, cols, lengths, scale=1.0, alpha=0.2)
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            ax.set(xscale="log", yscale="log", title=f"{fam}\n{protocol}, {model}, trained at {train_len}")
            ax.title.set_fontsize(9)
            ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=7)
            ax.xaxis.set_minor_formatter(NullFormatter())  # only the evaluated lengths are labelled
            ax.yaxis.set_major_formatter(PLAIN)  # 20, not 2 x 10^1
            ax.yaxis.set_minor_formatter(PLAIN)
            ax.tick_params(axis="y", which="both", labelsize=7)
            ax.grid(True, which="both", alpha=0.3)
            if r == len(rows) - 1:
                ax.set_xlabel("evaluation length (tokens)")
            if first_in_grid_row(c, len(fams)):
                ax.set_ylabel("perplexity")
            if len(members):
                ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)


def plot_per_position(evals: pd.DataFrame, per_position: Mapping[str, Mapping[str, np.ndarray]], path: Path) -> None:
    """Mean loss by position at each variant's longest defined length (mean over seeds, moving
    average); one row per (protocol, model, train_len), one column per family of encodings.
    ``per_position``: each run's curves (per_position.npz), by run id."""
    done = completed(evals)
    done = done[done["ppl"].notna()]
    rows = sorted(done.groupby(["protocol", *PANEL]).groups)
    fams = families_in(done["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (protocol, model, train_len) in enumerate(rows):
        sub = done[(done["protocol"] == protocol) & (done["model"] == model) & (done["train_len"] == train_len)]
        for c, fam in enumerate(fams):
            ax = axes[r][c]
            for variant, g in sub[sub["variant"].map(family_of) == fam].groupby("variant"):
                L = int(g["length"].max())
                key = per_position_key(variant, protocol, L)
                curves = [per_position[rid][key].astype(float) for rid in g[g["length"] == L]["run_id"]
                          if key in per_position.get(rid, {})]
                if not curves:
                    continue
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # positions a protocol never scores stay NaN
                    curve = np.nanmean(np.stack(curves), axis=0)
                x = np.arange(1, L + 1)
                keep = ~np.isnan(curve)
                x, curve = x[keep], curve[keep]
                k = max(1, len(curve) // 64)  # moving average: per-position means over few windows are noisy
                smooth = np.convolve(curve, np.ones(k) / k, mode="valid")
                ax.plot(x[k // 2 : k // 2 + len(smooth)], smooth, color=colour(variant), label=f"{variant} (L={L})", lw=1.2,
                        linestyle=linestyle(variant))
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            # log x: the first tokens (little context) and the far tail (unseen positions) both stay visible
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(PLAIN)  # 100, not 10^2; no labels on minor ticks
            ax.xaxis.set_minor_formatter(NullFormatter())
            finish_panel(ax, f"{fam}\n{protocol}, {model}, trained at {train_len}", r == len(rows) - 1, first_in_grid_row(c, len(fams)),
                          "position in window (1-based)", "mean loss (nats)", bool(ax.lines[1:]))
    fig.tight_layout()
    save(fig, path)


# the verdict classes' colours (the ends and middle of RdYlGn): a cell's colour is the class of its mean
VERDICT_COLOURS = {"flat": "#1a9850", "mild": "#fee08b", "broken": "#d73027"}
BROKEN_TOP = 1e3  # the broken class's upper edge on the bar; a larger ratio takes the broken colour too


def verdict_norm(tolerance: float) -> tuple[ListedColormap, BoundaryNorm]:
    """The heatmap's colours, anchored at the verdict borders of posbench/report/analysis/verdicts.py and not
    stretched to the data: flat up to 1 + ``tolerance`` (inclusive, as ``verdict`` reads it), mild up
    to MILD_LIMIT (inclusive), broken above. A BoundaryNorm bins [b_i, b_i+1), so each border is
    moved to the next float above it: a ratio exactly at a border takes its verdict's colour."""
    cmap = ListedColormap(list(VERDICT_COLOURS.values()), name="verdicts")
    cmap.set_under(VERDICT_COLOURS["flat"])
    cmap.set_over(VERDICT_COLOURS["broken"])
    borders = [0.0, *(float(np.nextafter(b, np.inf)) for b in (1 + tolerance, MILD_LIMIT)), BROKEN_TOP]
    return cmap, BoundaryNorm(borders, cmap.N)


def _cell_word(word) -> str:
    """The class printed in a cell: the ratio's interval verdict, "(no interval)" on its own line."""
    word = str(word) if isinstance(word, str) and word and word != "n/a" else ""
    return word.replace(", no interval", "\n(no interval)")


def plot_ratio_heatmap(table: pd.DataFrame, tolerance: float, path: Path) -> str | None:
    """One heatmap: encodings (rows, grouped by family) x (protocol, model, train_len) columns. Each
    cell's colour is the verdict class of the longest multiple's mean ratio to 1x (``verdict_norm``:
    the borders of the verdicts, whatever the data span), its text the ratio and the class its 95%
    interval supports (``verdict_16x_1x``: flat / mild / broken, or undecided, hatched, where the
    interval straddles a border). Returns the ratio column's name (None if the table has none)."""
    ratio = next((c for c in table.columns if c.endswith("/1x")), None)
    if ratio is None:
        return None
    variants = sorted(table["variant"].unique(), key=row_order)
    grid = table.pivot_table(index="variant", columns=["protocol", *PANEL], values=ratio, dropna=False).reindex(variants)
    values = grid.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(2.6 + 0.95 * grid.shape[1], 1.0 + 0.42 * grid.shape[0]))
    cmap, norm = verdict_norm(tolerance)
    im = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [f"{p}\n{m} L={t}" for p, m, t in grid.columns], fontsize=7, rotation=0)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
    longest = ratio.split("/")[0]

    def cells(column: str):
        if column not in table:
            return None
        return table.pivot_table(index="variant", columns=["protocol", *PANEL], values=column, aggfunc="first",
                                 dropna=False).reindex(index=grid.index, columns=grid.columns)

    notes = cells(f"{longest}_note")
    words = cells("verdict_16x_1x" if "verdict_16x_1x" in table else "verdict")
    for (i, j), v in np.ndenumerate(values):
        if np.isnan(v):
            note = notes.iat[i, j] if notes is not None and isinstance(notes.iat[i, j], str) and notes.iat[i, j] else "n/e"
            ax.text(j, i, note, ha="center", va="center", fontsize=7)
            continue
        word = _cell_word(words.iat[i, j]) if words is not None else ""
        mild = 1 + tolerance < v <= MILD_LIMIT  # yellow: black text; white on the dark green and red
        if word == UNDECIDED:  # the interval straddles a border: the colour is the mean's class alone
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#777777", lw=0))
        ax.text(j, i, f"{v:.2f}" + (f"\n{word}" if word else ""), ha="center", va="center", fontsize=6.5,
                color="black" if mild else "white", fontweight="bold" if word == UNDECIDED else "normal")
    protocols = [p for p, _, _ in grid.columns]
    for j in range(1, len(protocols)):  # a line between protocols
        if protocols[j] != protocols[j - 1]:
            ax.axvline(j - 0.5, color="black", lw=1.5)
    fams = [family_of(v) for v in grid.index]
    for i in range(1, len(fams)):  # and between families
        if fams[i] != fams[i - 1]:
            ax.axhline(i - 0.5, color="white", lw=2)
    ax.set_title(f"perplexity ratio {ratio} (mean over seeds) and the class of its 95% interval", fontsize=9)
    # one block per class, as wide as the others: the bar is a legend of the classes, not a scale
    bounds = norm.boundaries
    centres = [(a + b) / 2 for a, b in zip(bounds[:-1], bounds[1:])]
    bar = fig.colorbar(im, ax=ax, shrink=0.8, spacing="uniform", ticks=centres)
    bar.set_ticks(centres, labels=[f"flat\n<= {1 + tolerance:g}", f"mild\n<= {MILD_LIMIT:g}", f"broken\n> {MILD_LIMIT:g}"])
    bar.ax.tick_params(labelsize=7)
    bar.set_label(f"verdict class of the mean {ratio}", fontsize=8)
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    fig.tight_layout()
    save(fig, path)
    return ratio


def plot_training_curves(runs: pd.DataFrame, histories: Mapping[str, pd.DataFrame | None], path: Path) -> None:
    """Training loss against step (mean over seeds, smoothed) and validation loss (dots); one row
    per (model, train_len), one column per family of encodings. ``histories``: each run's
    training curve, by run directory."""
    done = runs[runs["status"] == "completed"]
    rows = sorted(done.groupby(PANEL).groups)
    fams = families_in(done["encoding"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (model, train_len) in enumerate(rows):
        sub = done[(done["model"] == model) & (done["train_len"] == train_len)]
        for c, fam in enumerate(fams):
            ax = axes[r][c]
            for encoding, g in sub[sub["encoding"].map(family_of) == fam].groupby("encoding"):
                hist = [h for h in (histories.get(d) for d in g["run_dir"]) if h is not None and not h.empty]
                if not hist:
                    continue
                both = pd.concat(hist)
                train = both.groupby("step")["loss"].mean()
                ax.plot(train.index, train.rolling(5, min_periods=1).mean(), color=colour(encoding), label=encoding, lw=1.2)
                if "val_loss" in both:
                    val = both.dropna(subset=["val_loss"]).groupby("step")["val_loss"].mean()
                    ax.plot(val.index, val.values, "o", ms=3, color=colour(encoding))
            finish_panel(ax, f"{fam}\ntraining: {model}, train_len {train_len}", r == len(rows) - 1, first_in_grid_row(c, len(fams)),
                          "step", "loss (nats/byte)", bool(ax.lines))
    fig.tight_layout()
    save(fig, path)


def plot_during_training(curves: pd.DataFrame, path: Path) -> None:
    """From ``eval.during_training``: 1x perplexity (top) and the longest multiple's ratio to 1x
    (bottom) against training tokens, one line per encoding (mean over seeds); one column per
    (model, train_len). Log x: the evaluation steps are usually spaced by doublings."""
    panels = sorted(curves.groupby(PANEL).groups)
    fig, axes = plt.subplots(2, len(panels), figsize=(5.2 * len(panels), 7.0), squeeze=False)
    for c, (model, train_len) in enumerate(panels):
        sub = curves[(curves["model"] == model) & (curves["train_len"] == train_len)]
        for encoding, g in sub.groupby("encoding"):
            g = g.sort_values("train_tokens")
            for r, col in enumerate(["ppl_1x", "ratio"]):
                axes[r][c].plot(g["train_tokens"], g[col], marker="o", ms=3, color=colour(encoding), label=encoding,
                                lw=1.5, linestyle="--" if encoding == BASELINE else "-")
        m = sub["multiple"].iloc[0]
        for r, ylabel in enumerate(["1x perplexity", f"{m:g}x / 1x perplexity"]):
            ax = axes[r][c]
            ax.set(xscale="log", yscale="log")
            millions = FuncFormatter(lambda v, _: f"{v / 1e6:g}M")
            ax.xaxis.set_major_formatter(millions)
            ax.xaxis.set_minor_formatter(millions if ax.get_xlim()[1] / ax.get_xlim()[0] < 10 else NullFormatter())
            ax.yaxis.set_major_formatter(PLAIN)
            ax.yaxis.set_minor_formatter(PLAIN)
            if r == 1:
                ax.axhline(1, color="grey", linestyle=":", linewidth=1)
            finish_panel(ax, f"{model}, trained at {train_len}", r == 1, c == 0, "training tokens", ylabel,
                          r == 0 and c == len(panels) - 1)
    fig.tight_layout()
    save(fig, path)


def plot_extension(curves: pd.DataFrame, scratch: pd.DataFrame, path: Path) -> None:
    """Perplexity at the target length against fine-tuning steps (symlog x: 0 steps is the
    zero-shot point), one line per encoding and method, one panel per (model, train_len, target);
    dashed: the encoding trained from scratch at the target length; dotted: the control, continued
    at train_len for the same steps."""
    panels = sorted(curves.groupby(["model", "train_len", "target"]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    for ax, (model, train_len, target) in zip(axes[0], panels):
        sub = curves[(curves["model"] == model) & (curves["train_len"] == train_len) & (curves["target"] == target)]
        for (enc, method), g in sub.groupby(["encoding", "method"]):
            control = method == CONTROL
            name = enc if method in ("plain", CONTROL) else f"{enc}+{method}"
            g = g.sort_values("steps")
            ax.plot(g["steps"], g["ppl"], marker="x" if control else "o", ms=3, color=colour(name), lw=1 if control else 1.4,
                    linestyle=":" if control else "-",
                    label=f"{name} continued at {train_len} (control)" if control else f"{name} (fine-tuned)")
        ref = scratch[(scratch["model"] == model) & (scratch["target"] == target)].groupby("encoding")["ppl"].mean()
        for enc, ppl in ref.items():
            ax.axhline(ppl, color=colour(enc), linestyle="--", lw=1, label=f"{enc} trained at {target}")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xticks(sorted(sub["steps"].unique()))  # the step counts run, and no negative ticks
        ax.set_xlim(left=-1)
        ax.xaxis.set_major_formatter(PLAIN)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(PLAIN)
        ax.yaxis.set_minor_formatter(PLAIN)
        finish_panel(ax, f"{model}, trained at {train_len}, extended to {target}", True, True,
                      "fine-tuning steps at the target length", f"perplexity at {target} tokens", True)
    fig.tight_layout()
    save(fig, path)


def plot_task_accuracy(table: pd.DataFrame, path: Path) -> None:
    """Task accuracy against evaluation length, one row of panels per (task, model, train_len) and one
    panel per family of encodings (at most MAX_LINES lines each, figure_layout.py), like the perplexity
    figure; a line per variant (mean over the grid's conditions and seeds; band: 95% interval over
    examples and seeds); nope, the baseline, dashed in every family; dashed grey: the chance level
    (``chance`` of the table) where every run of the panel shares it."""
    rows = sorted(table.groupby(["task", *PANEL]).groups)
    cols = sorted([c for c in table.columns if c.endswith("x")], key=lambda c: float(c[:-1]))
    fams = family_columns(table["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (task, model, train_len) in enumerate(rows):
        sub = table[(table["task"] == task) & (table["model"] == model) & (table["train_len"] == train_len)]
        lengths = np.array([round(train_len * float(c[:-1])) for c in cols])
        chance = sub["chance"].dropna().unique()
        for c, (fam, names) in enumerate(fams):
            ax = axes[r][c]
            members = family_lines(ax, sub, names, cols, lengths, scale=100.0, alpha=0.15)
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            if len(chance) == 1:
                ax.axhline(100 * chance[0], color="grey", linestyle="--", linewidth=1, label="chance")
            ax.set_xscale("log")
            ax.set_xticks(lengths, [str(x) for x in lengths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(-3, 103)
            finish_panel(ax, f"{fam}\n{task}, {model}, trained at {train_len}", r == len(rows) - 1,
                          first_in_grid_row(c, len(fams)), "evaluation length (tokens)",
                          f"{METRIC_WORDS[getattr(TASKS.find(task), 'metric', 'exact')]} (%)", len(members) > 0)
    fig.tight_layout()
    save(fig, path)


def plot_task_heatmaps(heat: pd.DataFrame, task: str, condition: str, path: Path) -> None:
    """The length x condition grid of one task (the needle-in-a-haystack heatmap for passkey), one
    panel per variant (and model, train_len): mean accuracy over seeds, green right, red wrong."""
    sub = heat[heat["task"] == task]
    panels = sorted(sub.groupby(["variant", *PANEL]).groups)
    n_cols = min(5, len(panels))
    n_rows = -(-len(panels) // n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.2 * n_cols, 2.8 * n_rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for k, (ax, (variant, model, train_len)) in enumerate(zip(axes.flat, panels)):
        g = sub[(sub["variant"] == variant) & (sub["model"] == model) & (sub["train_len"] == train_len)]
        grid = g.pivot_table(index="condition", columns="length", values="accuracy", dropna=False)
        im = ax.imshow(100 * grid.to_numpy(dtype=float), cmap="RdYlGn", vmin=0, vmax=100, aspect="auto", origin="lower")
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], fontsize=7)
        ax.set_yticks(range(grid.shape[0]), [f"{c:g}" for c in grid.index], fontsize=7)
        for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            if not np.isnan(v):
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=6)
        ax.set_title(f"{variant} ({model}, {train_len})", fontsize=9)
        ax.set_xlabel("evaluation length", fontsize=8)
        if k % n_cols == 0:  # the panels are close together: one label per row
            ax.set_ylabel(condition, fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label=f"{METRIC_WORDS[getattr(TASKS.find(task), 'metric', 'exact')]} (%)")
    save(fig, path)


def plot_attention(att: pd.DataFrame, path: Path) -> None:
    """Mean attention distance and attention entropy (over layers, heads and seeds) against length,
    one line per encoding; one row per source (text, or a task's examples) and model/train_len.
    Dotted: uniform attention over every earlier key (entropy: ln(i + 1) averaged over queries i;
    distance: i / 2 averaged, (L - 1) / 4)."""
    rows = sorted(att.groupby(["source", *PANEL]).groups)
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3.4 * len(rows)), squeeze=False)
    for r, (source, model, train_len) in enumerate(rows):
        sub = att[(att["source"] == source) & (att["model"] == model) & (att["train_len"] == train_len)]
        lengths = np.array(sorted(sub["length"].unique()))
        for enc, g in sub.groupby("encoding"):
            g = g.sort_values("length")
            axes[r][0].plot(g["length"], g["mean_distance"], marker="o", ms=3, color=colour(enc), label=enc)
            axes[r][1].plot(g["length"], g["entropy"], marker="o", ms=3, color=colour(enc), label=enc)
        axes[r][0].plot(lengths, (lengths - 1) / 4, color="grey", linestyle=":", lw=1, label="uniform")
        uniform = sub.drop_duplicates("length").sort_values("length")
        axes[r][1].plot(uniform["length"], uniform["uniform entropy"], color="grey", linestyle=":", lw=1, label="uniform")
        for c, (ylabel, log_y) in enumerate([("mean attention distance (tokens)", True), ("attention entropy (nats)", False)]):
            ax = axes[r][c]
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))  # 10, 20, 50, 100, ...
                ax.yaxis.set_major_formatter(PLAIN)
                ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(lengths, [str(x) for x in lengths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            finish_panel(ax, f"{source}: {model}, trained at {train_len}", r == len(rows) - 1, True,
                          "evaluation length (tokens)", ylabel, c == 1)
    fig.tight_layout()
    save(fig, path)

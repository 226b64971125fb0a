"""The comparison figure (``--compare`` / ``--baseline``): every asked-for pair's paired difference of
log-perplexity against evaluation length, with its 95% interval, all pairs of a (protocol, model,
train_len) panel on one axes and a line at zero (no difference). It draws what
posbench/report/comparison/frames.py computed, nothing else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from posbench.report.drawing import plot
from posbench.report.comparison.frames import label
from posbench.report.drawing.figure_layout import distinct_styles

plt = plot.plt


def plot_comparison(frame: pd.DataFrame, path: Path) -> None:
    """``frame``: comparison.paired_differences. One axes per (protocol, model, train_len) in the
    frame; in each, a line per pair (the row's colour and style, points nudged apart so that the
    interval bars do not cover each other) and the zero line."""
    panels = sorted(frame.groupby(["protocol", *plot.PANEL]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.2), squeeze=False)
    for ax, (protocol, model, train_len) in zip(axes[0], panels):
        sub = frame[(frame["protocol"] == protocol) & (frame["model"] == model) & (frame["train_len"] == train_len)]
        pairs = list(dict.fromkeys(zip(sub["a"], sub["b"])))
        styles = distinct_styles({label(a, b): (plot.colour(a), plot.linestyle(a)) for a, b in pairs})
        lengths = np.array(sorted(sub["length"].unique()))
        for n, (a, b) in enumerate(pairs):
            g = sub[(sub["a"] == a) & (sub["b"] == b)].sort_values("length")
            nudge = 2 ** (0.06 * (n - (len(pairs) - 1) / 2))  # a log x axis: a factor, not an offset
            x = g["length"].to_numpy(dtype=float) * nudge
            y = g["diff"].to_numpy(dtype=float)
            err = np.vstack([y - g["lo"].to_numpy(dtype=float), g["hi"].to_numpy(dtype=float) - y])
            colour, style = styles[label(a, b)]
            ax.errorbar(x, y, yerr=np.where(np.isfinite(err), err, 0), color=colour, linestyle=style, marker="o", ms=3,
                        lw=1.4, capsize=2.5, elinewidth=1, label=label(a, b))
        ax.axhline(0, color="black", lw=1)
        ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{protocol}, {model}, trained at {train_len}", fontsize=9)
        ax.set_xlabel("evaluation length (tokens)")
        ax.set_ylabel("log ppl(row) - log ppl(reference)  (nats/token)\nbelow 0: the row is better", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    plot.save(fig, path)

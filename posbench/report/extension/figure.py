"""The extension figure: perplexity at the target length against fine-tuning steps, one line per
encoding and method, beside the encoding trained from scratch at the target (dashed) and the control
continued at train_len (dotted)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from posbench.report.drawing.plot import PLAIN, colour, finish_panel, plt, save
from posbench.report.extension.frames import CONTROL


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

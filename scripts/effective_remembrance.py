"""EffRem curves (Buitrago Ruiz & Gu 2025, arXiv 2507.02782) of trained runs: how much the prediction at
the end of a window of multiple x train_len tokens changes when the window's first t tokens are removed
(posbench/evaluation/effective_remembrance.py has the formula and the deviations).

    python scripts/effective_remembrance.py RUN_OR_FOLDER... --out results/effrem \
        [--multiple 16] [--windows 16] [--cuts 17] [--only nope,rope,alibi] [--steps 1200]
    python scripts/effective_remembrance.py --values results/effrem/effrem.csv --out results/effrem

(the second: the summary and figure again from saved values, no model run.)

Writes effrem.csv (per run, cut and window), effrem_summary.csv (per row and cut: mean, 95% interval
over seeds and windows) and effrem.png into --out, and prints the summary at three cuts. Bad input
(no run, a run that has not finished, bad numbers): one line, exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import posbench.report.drawing.mplconfig  # noqa: F401 - before matplotlib: a writable config folder
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from posbench.core.errors import PosbenchError  # noqa: E402
from posbench.jobs.effective_remembrance import compute  # noqa: E402
from posbench.report.analysis.effective_remembrance import write  # noqa: E402


def draw(summary: pd.DataFrame, path: Path) -> None:
    """One line and 95% band per row (encoding, budget) against t; dotted: T - train_len (train_len kept)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    for (enc, steps), g in summary.groupby(["encoding", "steps"], sort=True):
        g = g.sort_values("t")
        runs = int(g["runs"].iloc[0])
        line, = ax.plot(g["t"], g["mean"], marker=".", label=f"{enc} ({steps} steps, {runs} seed{'s' * (runs > 1)})")
        ax.fill_between(g["t"], g["lo"], g["hi"], color=line.get_color(), alpha=0.18, linewidth=0)
    for T, tl in summary[["T", "train_len"]].drop_duplicates().itertuples(index=False):
        ax.axvline(T - tl, color="grey", linestyle=":", linewidth=1)
    T = int(summary["T"].max())
    ax.set_xlabel(f"t: tokens removed from the start of a {T}-token window (dotted: train_len tokens kept)")
    ax.set_ylabel("EffRem_T(t)   (total variation, 0..1)")
    ax.set_ylim(0, 1)
    ax.set_title("Effective remembrance: how much the window's last prediction changes without its first t tokens\n"
                 "(mean over seeds and windows, 95% interval over seeds and text; 0 = the removed tokens did not matter)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(summary: pd.DataFrame) -> str:
    """The summary at t = 0 + 1 cut (the far start), at train_len kept, and at train_len/2 kept."""
    rows = []
    for (enc, steps), g in summary.groupby(["encoding", "steps"], sort=True):
        T, tl = int(g["T"].iloc[0]), int(g["train_len"].iloc[0])
        cells = [f"{enc} ({steps})"]
        for kept in (T - int(g[g["t"] > 0]["t"].min()), tl, tl // 2):
            r = g[g["kept"] == kept]
            cells.append(f"{r['mean'].iloc[0]:.3f} [{r['lo'].iloc[0]:.3f}, {r['hi'].iloc[0]:.3f}]" if len(r) else "-")
        rows.append(cells)
    head = ["row (steps)", "far start removed", "train_len kept", "train_len/2 kept"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run directories, or folders of them")
    parser.add_argument("--values", default=None, help="an effrem.csv written before: summarise it, run no model")
    parser.add_argument("--out", required=True, help="folder for effrem.csv, effrem_summary.csv, effrem.png")
    parser.add_argument("--multiple", type=int, default=16, help="window length T in multiples of train_len (16)")
    parser.add_argument("--windows", type=int, default=16, help="windows per run (16)")
    parser.add_argument("--cuts", type=int, default=17, help="evenly spaced cuts t in [0, T) (17), plus the near ones")
    parser.add_argument("--only", default="", help="encoding names, comma-separated (default: every run)")
    parser.add_argument("--steps", type=int, default=None, help="only runs of this budget (training steps)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(levelname)s] %(message)s", datefmt="%H:%M:%S")
    try:
        if (args.values is None) == (not args.runs):
            raise PosbenchError("give run directories or --values <effrem.csv>, one of the two")
        values = pd.read_csv(args.values) if args.values else compute(
            args.runs, args.multiple, args.windows, args.cuts, only=[e for e in args.only.split(",") if e], steps=args.steps)
    except (PosbenchError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    summary = write(values, out)
    draw(summary, out / "effrem.png")
    print(table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tables and plots from run directories: ``posbench-report RUNS_DIR [--out DIR]``.

Reads every ``metrics.json`` below RUNS_DIR (nothing else: the report never trains) into a pandas
DataFrame and writes, into DIR (default RUNS_DIR/report):

    evaluations.csv     every record: run x variant x protocol x length
    table.csv, table.md perplexity per row (variant x model x train_len, mean over seeds) at each
                        multiple of train_len, and the ratio of the longest multiple to 1x
    ppl_vs_length.png   perplexity against evaluation length, log axes, one panel per
                        (model, train_len), one line per encoding
    per_position.png    loss by position within the window at the longest length
    report.md           all of the above in one page
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from posbench.cli import user_errors  # noqa: E402
from posbench.errors import PosbenchError  # noqa: E402
from posbench.results import PER_POSITION, atomic_write_bytes, atomic_write_text, find_incomplete, load_runs  # noqa: E402

NOT_DEFINED = "n/d"
ROW_KEYS = ["variant", "model", "train_len"]


def _panel_width(evals: pd.DataFrame) -> float:
    return 5.2 if evals["variant"].nunique() <= 6 else 7.4  # room for a legend beside the axes


def fmt_multiple(m: float) -> str:
    return f"{m:g}x"


def colours(variants) -> dict[str, tuple]:
    """One fixed colour per variant, the same in every figure of a report."""
    cmap = plt.get_cmap("tab20" if len(variants) > 10 else "tab10")
    return {v: cmap(i % cmap.N) for i, v in enumerate(sorted(variants))}


def perplexity_table(evals: pd.DataFrame) -> pd.DataFrame:
    """Rows variant x model x train_len (mean over seeds); columns perplexity at each multiple and
    the ratio of the longest multiple to 1x. NaN marks a length the encoding does not define."""
    done = evals[evals["status"] == "completed"]
    grouped = done.groupby(ROW_KEYS + ["protocol", "multiple"])["ppl"].mean()
    table = grouped.unstack("multiple").sort_index(axis=1)
    table.columns = [fmt_multiple(m) for m in table.columns]
    seeds = done.groupby(ROW_KEYS + ["protocol"])["seed"].nunique().rename("seeds")
    if "1x" in table.columns and len(table.columns) > 1:
        longest = table.columns[-1]
        table[f"{longest}/1x"] = table[longest] / table["1x"]
    return table.join(seeds).reset_index()


def markdown_table(table: pd.DataFrame) -> str:
    shown = table.copy()
    for col in shown.columns:
        if col.endswith("x") and col[0].isdigit():
            shown[col] = [NOT_DEFINED if pd.isna(v) else f"{v:.2f}" for v in shown[col]]
    # numbers are already formatted: keep tabulate from re-parsing "6.50" into 6.5
    return shown.to_markdown(index=False, disable_numparse=True)


def plot_ppl_vs_length(evals: pd.DataFrame, path: Path) -> None:
    done = evals[(evals["status"] == "completed") & evals["ppl"].notna()]
    panels = sorted(done.groupby(["model", "train_len"]).groups)
    palette = colours(evals["variant"].unique())
    fig, axes = plt.subplots(1, len(panels), figsize=(_panel_width(evals) * len(panels), 4.2), squeeze=False)
    for ax, (model, train_len) in zip(axes[0], panels):
        sub = done[(done["model"] == model) & (done["train_len"] == train_len)]
        for variant, g in sub.groupby("variant"):
            curve = g.groupby("length")["ppl"].mean()
            ax.plot(curve.index, curve.values, marker="o", color=palette[variant], label=variant)
        ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
        ax.set(xscale="log", yscale="log", xlabel="evaluation length (tokens)", ylabel="perplexity",
               title=f"model {model}, trained at {train_len}")
        ax.set_xticks(sorted(sub["length"].unique()), [str(x) for x in sorted(sub["length"].unique())])
        ax.grid(True, which="both", alpha=0.3)
        _legend(ax, len(sub["variant"].unique()))
    fig.tight_layout()
    _save(fig, path)


def _legend(ax, n: int) -> None:
    """Inside the axes for a few lines; beside them for many, where it would hide the curves."""
    if n <= 6:
        ax.legend(fontsize=8)
    else:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def plot_per_position(runs: pd.DataFrame, evals: pd.DataFrame, path: Path) -> None:
    """Mean loss by position at each run's longest defined length, smoothed, one panel per train_len."""
    done = evals[(evals["status"] == "completed") & evals["ppl"].notna()]
    palette = colours(evals["variant"].unique())
    panels = sorted(done.groupby(["model", "train_len"]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(_panel_width(evals) * len(panels), 4.2), squeeze=False)
    run_dirs = dict(zip(runs["run_id"], runs["run_dir"]))
    for ax, (model, train_len) in zip(axes[0], panels):
        sub = done[(done["model"] == model) & (done["train_len"] == train_len)]
        for (variant, protocol), g in sub.groupby(["variant", "protocol"]):
            L = int(g["length"].max())
            curves = []
            for run_id in g[g["length"] == L]["run_id"]:
                f = Path(run_dirs[run_id]) / PER_POSITION
                key = f"{variant}/{protocol}/L{L}"
                if f.exists():
                    with np.load(f) as z:
                        if key in z:
                            curves.append(z[key])
            if not curves:
                continue
            curve = np.mean(curves, axis=0)
            k = max(1, L // 64)  # moving average: per-position means over few windows are noisy
            smooth = np.convolve(curve, np.ones(k) / k, mode="valid")
            ax.plot(np.arange(len(smooth)) + k // 2 + 1, smooth, color=palette[variant], label=f"{variant} (L={L})")
        ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
        # log x: the first tokens (little context) and the far tail (unseen positions) both stay visible
        ax.set(xscale="log", xlabel="position in window (1-based)", ylabel="mean loss (nats)",
               title=f"model {model}, trained at {train_len}")
        ax.grid(True, alpha=0.3)
        _legend(ax, len(sub["variant"].unique()))
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path: Path) -> None:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _incomplete_row(run_dir: Path) -> dict:
    """What an unfinished run is, from the resolved config it wrote when it started."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run_dir / "config.yaml")
    return {"run_id": run_dir.name, "status": "incomplete", "encoding": cfg.encoding.name,
            "train_len": cfg.train_len, "seed": cfg.seed}


def build_report(runs_dir: Path, out_dir: Path) -> Path:
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    if not runs_dir.is_dir():
        raise PosbenchError(f"runs directory {str(runs_dir)!r} does not exist")
    runs, evals = load_runs(runs_dir)
    if runs.empty:
        raise PosbenchError(f"no runs (metrics.json) found below {str(runs_dir)!r}")
    completed = runs[runs["status"] == "completed"]
    if completed.empty or evals.empty:
        raise PosbenchError(f"no completed, evaluated runs below {str(runs_dir)!r} ({len(runs)} runs, none usable)")
    out_dir.mkdir(parents=True, exist_ok=True)

    table = perplexity_table(evals)
    atomic_write_text(out_dir / "evaluations.csv", evals.to_csv(index=False))
    atomic_write_text(out_dir / "table.csv", table.to_csv(index=False))
    md_table = markdown_table(table)
    atomic_write_text(out_dir / "table.md", md_table + "\n")
    plot_ppl_vs_length(evals, out_dir / "ppl_vs_length.png")
    plot_per_position(runs, evals, out_dir / "per_position.png")

    lines = [
        "# posbench report",
        "",
        f"{len(completed)} completed runs from `{runs_dir}`. Perplexity of byte-level language models trained at "
        "`train_len` tokens and evaluated on non-overlapping windows of each multiple of it; every length "
        f"scores the same validation tokens. `{NOT_DEFINED}`: the encoding is not defined at that length "
        "(a learned table past its size). The last ratio column is the longest length's perplexity over 1x: "
        "near 1 means the encoding extrapolates.",
        "",
        "## Perplexity by evaluation length",
        "",
        md_table,
        "",
        "![perplexity against evaluation length](ppl_vs_length.png)",
        "",
        "## Loss by position at the longest length",
        "",
        "The dotted line marks the training length: positions right of it were never seen in training.",
        "",
        "![loss by position](per_position.png)",
        "",
    ]
    other = runs[runs["status"] != "completed"][["run_id", "status", "encoding", "train_len", "seed"]]
    unfinished = pd.DataFrame([_incomplete_row(p) for p in find_incomplete(runs_dir)])
    other = pd.concat([other, unfinished], ignore_index=True) if not unfinished.empty else other
    if not other.empty:
        lines += [
            "## Runs not in the table",
            "",
            "Diverged or failed runs, and incomplete ones (started, no metrics yet: running or killed; "
            "re-running the sweep resumes them). None of their numbers are in the tables above.",
            "",
            other.to_markdown(index=False),
            "",
        ]
    lines += [
        "## Runs",
        "",
        completed[["run_id", "encoding", "model", "train_len", "seed", "params", "train_tokens", "train_wall_s"]]
        .round({"train_wall_s": 1})
        .to_markdown(index=False),
        "",
    ]
    report = out_dir / "report.md"
    atomic_write_text(report, "\n".join(lines))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="posbench-report", description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path, help="folder with run directories (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUNS_DIR/report)")
    args = parser.parse_args(argv)
    with user_errors():
        report = build_report(args.runs_dir, args.out or args.runs_dir / "report")
    print(f"report written to {report}")


if __name__ == "__main__":
    main(sys.argv[1:])

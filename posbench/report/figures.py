"""The report's figures (matplotlib, files only). Every encoding keeps one colour in every figure
of every report: the palette is fixed by the list of known encodings and RoPE variants, not by
which runs a report happens to contain."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter, NullFormatter

from posbench.report.tables import completed, multiple_columns
from posbench.results import atomic_write_bytes, per_position_key, read_history, read_per_position

PANEL = ["model", "train_len"]
PLAIN = FuncFormatter(lambda v, _: f"{v:g}")


# tab20 comes in (dark, light) pairs of one hue: related encodings share a hue
_TAB20 = {hue: i for i, hue in enumerate(["blue", "orange", "green", "red", "purple", "brown", "pink", "grey", "olive", "cyan"])}
PALETTE = {
    "rope": ("blue", 0), "rope+yarn": ("blue", 1),
    "rope+linear": ("orange", 0), "rope+dynamic_ntk": ("orange", 1),
    "xpos": ("cyan", 0), "rope+ntk": ("cyan", 1),
    "kerple_log": ("green", 0), "kerple_power": ("green", 1),
    "alibi": ("red", 0), "sandwich": ("red", 1),
    "t5": ("purple", 0), "fire": ("purple", 1),
    "sinusoidal": ("brown", 0), "sinusoidal_concat": ("brown", 1),
    "learned": ("pink", 0), "conv": ("pink", 1),
    "nope": ("grey", 0),
    "shaw": ("olive", 0), "transformer_xl": ("olive", 1),
}


def colour(variant: str):
    """The fixed colour of a variant in every figure of every report (unknown ones: light grey)."""
    hue, light = PALETTE.get(variant, ("grey", 1))
    return plt.get_cmap("tab20")(2 * _TAB20[hue] + light)


def _grid(n_rows: int, n_cols: int, n_lines: int):
    width = 5.2 if n_lines <= 6 else 7.2  # room for a legend beside crowded axes
    return plt.subplots(n_rows, n_cols, figsize=(width * n_cols, 3.9 * n_rows), squeeze=False)


def _legend(ax, n: int) -> None:
    """Inside the axes for a few lines; beside them for many, where it would hide the curves."""
    if n <= 6:
        ax.legend(fontsize=8)
    else:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def save(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def plot_ppl_vs_length(table: pd.DataFrame, path: Path) -> None:
    """Perplexity against length, log-log; one row per protocol, one panel per (model, train_len);
    line = mean over seeds, band = 95% t-interval (two or more seeds), both read from the main
    table so that the figure shows exactly the table's numbers."""
    cols = multiple_columns(table)
    protocols = sorted(table["protocol"].unique())
    panels = sorted(table.groupby(PANEL).groups)
    fig, axes = _grid(len(protocols), len(panels), table["variant"].nunique())
    for r, protocol in enumerate(protocols):
        for c, (model, train_len) in enumerate(panels):
            ax = axes[r][c]
            sub = table[(table["protocol"] == protocol) & (table["model"] == model) & (table["train_len"] == train_len)]
            if sub.empty:
                ax.set_visible(False)
                continue
            lengths = np.array([round(train_len * float(m[:-1])) for m in cols])
            for _, row in sub.iterrows():
                mean = row[cols].to_numpy(dtype=float)
                half = row[[f"{m}_ci95" for m in cols]].to_numpy(dtype=float)
                ok = ~np.isnan(mean)
                ax.plot(lengths[ok], mean[ok], marker="o", ms=3, color=colour(row["variant"]), label=row["variant"])
                if row["seeds"] > 1:
                    ax.fill_between(lengths[ok], (mean - half)[ok], (mean + half)[ok], color=colour(row["variant"]), alpha=0.2, lw=0)
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            ax.set(xscale="log", yscale="log", xlabel="evaluation length (tokens)", ylabel="perplexity",
                   title=f"{protocol}: model {model}, trained at {train_len}")
            ax.set_xticks(lengths, [str(x) for x in lengths])
            ax.xaxis.set_minor_formatter(NullFormatter())  # only the evaluated lengths are labelled
            ax.yaxis.set_major_formatter(PLAIN)  # 20, not 2 x 10^1
            ax.yaxis.set_minor_formatter(PLAIN)
            ax.grid(True, which="both", alpha=0.3)
            _legend(ax, len(sub))
    fig.tight_layout()
    save(fig, path)


def plot_per_position(runs: pd.DataFrame, evals: pd.DataFrame, path: Path) -> None:
    """Mean loss by position at each variant's longest defined length (mean over seeds, moving
    average), one row per protocol that scores every position or the final ones."""
    done = completed(evals)
    done = done[done["ppl"].notna()]
    run_dirs = dict(zip(runs["run_id"], runs["run_dir"]))
    protocols = sorted(done["protocol"].unique())
    panels = sorted(done.groupby(PANEL).groups)
    fig, axes = _grid(len(protocols), len(panels), done["variant"].nunique())
    for r, protocol in enumerate(protocols):
        for c, (model, train_len) in enumerate(panels):
            ax = axes[r][c]
            sub = done[(done["protocol"] == protocol) & (done["model"] == model) & (done["train_len"] == train_len)]
            for variant, g in sub.groupby("variant"):
                L = int(g["length"].max())
                curves = [_load_curve(run_dirs[rid], per_position_key(variant, protocol, L)) for rid in g[g["length"] == L]["run_id"]]
                curves = [x for x in curves if x is not None]
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
                ax.plot(x[k // 2 : k // 2 + len(smooth)], smooth, color=colour(variant), label=f"{variant} (L={L})")
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            # log x: the first tokens (little context) and the far tail (unseen positions) both stay visible
            ax.set(xscale="log", xlabel="position in window (1-based)", ylabel="mean loss (nats)",
                   title=f"{protocol}: model {model}, trained at {train_len}")
            ax.grid(True, alpha=0.3)
            if sub["variant"].nunique():
                _legend(ax, sub["variant"].nunique())
    fig.tight_layout()
    save(fig, path)


def _load_curve(run_dir: str, key: str):
    arrays = read_per_position(Path(run_dir)) or {}  # load_runs has checked that it reads
    return arrays[key].astype(float) if key in arrays else None


def plot_ratio_heatmap(table: pd.DataFrame, path: Path) -> str | None:
    """Encoding x (model, train_len) coloured by the longest multiple's ratio to 1x, one panel per
    protocol; returns the ratio column's name (None if the table has none)."""
    ratio = next((c for c in table.columns if c.endswith("/1x")), None)
    if ratio is None:
        return None
    protocols = sorted(table["protocol"].unique())
    fig, axes = plt.subplots(1, len(protocols), squeeze=False,
                             figsize=(2.2 + 1.3 * table.groupby(PANEL).ngroups * len(protocols), 0.9 + 0.32 * table["variant"].nunique()))
    values = table[ratio].to_numpy(dtype=float)
    lo, hi = np.nanmin(values, initial=1.0), np.nanmax(values, initial=1.0)
    span = max(hi, 1 / max(lo, 1e-9), 1.05)
    norm = LogNorm(vmin=1 / span, vmax=span)  # centred on 1: green stays flat, red breaks
    for ax, protocol in zip(axes[0], protocols):
        sub = table[table["protocol"] == protocol]
        grid = sub.pivot_table(index="variant", columns=PANEL, values=ratio, dropna=False)
        im = ax.imshow(grid.to_numpy(dtype=float), cmap="RdYlGn_r", norm=norm, aspect="auto")
        ax.set_xticks(range(grid.shape[1]), [f"{m}\nL={t}" for m, t in grid.columns], fontsize=8)
        ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
        for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            ax.text(j, i, "n/d" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7)
        ax.set_title(f"{protocol}: {ratio}", fontsize=9)
    bar = fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label=f"perplexity ratio {ratio}")
    ticks = [t for t in (0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4, 6, 8, 16, 32) if 1 / span <= t <= span]
    bar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    save(fig, path)
    return ratio


def plot_training_curves(runs: pd.DataFrame, path: Path) -> None:
    """Training loss against step (mean over seeds, smoothed) and validation loss (dots), one panel
    per (model, train_len)."""
    done = runs[runs["status"] == "completed"]
    panels = sorted(done.groupby(PANEL).groups)
    fig, axes = _grid(1, len(panels), done["encoding"].nunique())
    for ax, (model, train_len) in zip(axes[0], panels):
        sub = done[(done["model"] == model) & (done["train_len"] == train_len)]
        for encoding, g in sub.groupby("encoding"):
            hist = [_history(d) for d in g["run_dir"]]
            hist = [h for h in hist if h is not None and not h.empty]
            if not hist:
                continue
            train = pd.concat(hist).groupby("step")["loss"].mean()
            ax.plot(train.index, train.rolling(5, min_periods=1).mean(), color=colour(encoding), label=encoding, lw=1.2)
            val = pd.concat(hist).dropna(subset=["val_loss"]).groupby("step")["val_loss"].mean() if "val_loss" in hist[0] else None
            if val is not None and len(val):
                ax.plot(val.index, val.values, "o", ms=3, color=colour(encoding))
        ax.set(xlabel="step", ylabel="loss (nats/byte)", title=f"training: model {model}, train_len {train_len}")
        ax.grid(True, alpha=0.3)
        _legend(ax, sub["encoding"].nunique())
    fig.tight_layout()
    save(fig, path)


def _history(run_dir: str) -> pd.DataFrame | None:
    return read_history(Path(run_dir))  # load_runs has checked that it reads



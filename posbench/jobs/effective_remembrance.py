"""EffRem curves of trained runs (issue 54 item 1): ``scripts/effective_remembrance.py``'s job.

For each run directory: its checkpoint, windows of T = multiple x train_len validation tokens and a grid
of cuts (posbench/evaluation/effective_remembrance.py); the curve EffRem_T(t) per window. Per row
(encoding and budget) the mean over the row's seeds and windows, with a 95% percentile bootstrap
interval that resamples seeds, then windows within each seed (the report's habit: intervals over text
and seeds). Written as effrem.csv (one value per run, cut and window), effrem_summary.csv (per row and
cut: mean, lo, hi, runs, windows) (the figure: scripts/effective_remembrance.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from posbench.core.errors import PosbenchError
from posbench.data.load import load_corpus
from posbench.evaluation.effective_remembrance import cut_grid, effective_remembrance, windows
from posbench.jobs.evaluate import completed_metrics, model_from_checkpoint
from posbench.store.rundir import CONFIG, load_checkpoint, read_run_config

log = logging.getLogger("posbench")

BOOTSTRAP = 2000


def run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories among ``paths``: a run directory itself, or every run directory one level
    below a folder; one line naming a path that is neither."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / CONFIG).is_file():
            found.append(p)
        elif p.is_dir() and (inner := sorted(d for d in p.iterdir() if (d / CONFIG).is_file())):
            found.extend(inner)
        else:
            raise PosbenchError(f"{p} is neither a run directory (no {CONFIG}) nor a folder of them; give runs "
                                "posbench-train made, e.g. runs/<run_id> or runs/")
    return found


def run_curve(run_dir: Path, multiple: int, n_windows: int, n_cuts: int,
              device: torch.device = torch.device("cpu")) -> pd.DataFrame:
    """One run's EffRem values: a frame of (run, encoding, seed, steps, train_len, T, t, kept, window, tv)."""
    completed_metrics(run_dir)  # a run still training, diverged or without metrics: one line
    model, spec = model_from_checkpoint(load_checkpoint(run_dir), device)
    corpus = load_corpus(spec.data)
    T = multiple * spec.train_len
    sep = spec.data.doc_separator.encode() if isinstance(spec.data.doc_separator, str) else spec.data.doc_separator
    x, inside = windows(corpus.val, sep if corpus.is_bytes else b"", T, n_windows)
    if not inside:
        log.warning("%s: no validation document holds %d tokens; its windows cross document separators", run_dir.name, T)
    cuts = cut_grid(T, n_cuts, spec.train_len)
    tv = effective_remembrance(model, torch.from_numpy(x), cuts)
    rows = [dict(run=run_dir.name, encoding=spec.encoding.name, seed=spec.seed, steps=spec.train.steps,
                 train_len=spec.train_len, T=T, t=t, kept=T - t, window=w, tv=float(tv[j, w]))
            for j, t in enumerate(cuts) for w in range(x.shape[0])]
    return pd.DataFrame(rows)


def bootstrap_mean(values: dict[int, np.ndarray], rng: np.random.Generator, n: int = BOOTSTRAP) -> tuple[float, float, float]:
    """Mean over seeds of the mean over windows, and its 95% percentile interval resampling seeds and then
    windows within each seed. ``values``: seed -> the windows' values. One seed: windows only."""
    seeds = sorted(values)
    mean = float(np.mean([values[s].mean() for s in seeds]))
    draws = np.empty(n)
    for b in range(n):
        chosen = rng.choice(seeds, size=len(seeds), replace=True) if len(seeds) > 1 else seeds
        draws[b] = np.mean([rng.choice(values[s], size=len(values[s]), replace=True).mean() for s in chosen])
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return mean, float(lo), float(hi)


def summarise(values: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per row (encoding, steps, train_len, T) and cut: mean EffRem, its interval, runs and windows."""
    rng = np.random.default_rng(seed)
    out = []
    keys = ["encoding", "steps", "train_len", "T", "t", "kept"]
    for key, g in values.groupby(keys, sort=True):
        per_seed = {int(s): gs["tv"].to_numpy() for s, gs in g.groupby("seed")}
        mean, lo, hi = bootstrap_mean(per_seed, rng)
        out.append(dict(zip(keys, key), mean=mean, lo=lo, hi=hi, runs=len(per_seed), windows=int(len(g))))
    return pd.DataFrame(out)


def write(values: pd.DataFrame, out: Path) -> pd.DataFrame:
    """effrem.csv and effrem_summary.csv into ``out`` (made if missing); returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(values)
    values.to_csv(out / "effrem.csv", index=False, float_format="%.6g")
    summary.to_csv(out / "effrem_summary.csv", index=False, float_format="%.6g")
    return summary


def compute(paths: Sequence[str | Path], multiple: int, n_windows: int, n_cuts: int,
            only: Sequence[str] = (), steps: int | None = None) -> pd.DataFrame:
    """EffRem values of every run under ``paths`` (filtered by encoding names and budget)."""
    if multiple < 1 or n_windows < 1 or n_cuts < 2:
        raise PosbenchError(f"multiple={multiple}, windows={n_windows}, cuts={n_cuts}: give multiple >= 1, windows >= 1, "
                            "cuts >= 2")
    frames = []
    for run_dir in run_dirs(paths):
        config = read_run_config(run_dir)  # the filter reads the saved config: no checkpoint loaded for a skipped run
        if (only and config["encoding"]["name"] not in only) or (steps is not None and config["train"]["steps"] != steps):
            continue
        frame = run_curve(run_dir, multiple, n_windows, n_cuts)
        frames.append(frame)
        at = frame[frame["kept"] == frame["train_len"]]
        log.info("EffRem %s: %.3f where train_len tokens are kept", run_dir.name, at["tv"].mean() if len(at) else float("nan"))
    if not frames:
        raise PosbenchError(f"no completed run under {', '.join(map(str, paths))} matches"
                            + (f" encodings {','.join(only)}" if only else "") + (f" steps={steps}" if steps else ""))
    return pd.concat(frames, ignore_index=True)

"""EffRem curves of trained runs (the far-context study's remembrance curves): ``scripts/effective_remembrance.py``'s job.

For each run directory: its checkpoint, windows of T = multiple x train_len validation tokens and a grid
of cuts (posbench/evaluation/effective_remembrance.py); the curve EffRem_T(t) per window, one value per run, cut and window (the summary over seeds and windows
with its interval: posbench/report/analysis/effective_remembrance.py; the figure: scripts/effective_remembrance.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd
import torch

from posbench.core.errors import PosbenchError
from posbench.data.load import load_corpus
from posbench.evaluation.effective_remembrance import cut_grid, effective_remembrance, windows
from posbench.jobs.evaluate import completed_metrics, model_from_checkpoint
from posbench.store.rundir import CONFIG, load_checkpoint, read_run_config

log = logging.getLogger("posbench")

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
    # a subword tokenizer's tokens hold no byte separator: its windows come from the stream
    x, inside = windows(corpus.val, spec.data.doc_separator.encode() if corpus.is_bytes else b"", T, n_windows)
    if not inside:
        log.warning("%s: no validation document holds %d tokens; its windows cross document separators", run_dir.name, T)
    cuts = cut_grid(T, n_cuts, spec.train_len)
    tv = effective_remembrance(model, torch.from_numpy(x), cuts)
    rows = [dict(run=run_dir.name, encoding=spec.encoding.name, seed=spec.seed, steps=spec.train.steps,
                 train_len=spec.train_len, T=T, t=t, kept=T - t, window=w, tv=float(tv[j, w]))
            for j, t in enumerate(cuts) for w in range(x.shape[0])]
    return pd.DataFrame(rows)


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

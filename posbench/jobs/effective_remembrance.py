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
from posbench.store.rundir import CONFIG, RunDir

log = logging.getLogger("posbench")

def run_dirs(paths: Iterable[str | Path]) -> list[RunDir]:
    """Run directories among ``paths``: a run directory itself, or every run directory one level
    below a folder; one line naming a path that is neither."""
    found: list[RunDir] = []
    for p in map(Path, paths):
        if RunDir(p).has_config():
            found.append(RunDir(p))
        elif p.is_dir() and (inner := sorted(d for d in p.iterdir() if RunDir(d).has_config())):
            found.extend(map(RunDir, inner))
        else:
            raise PosbenchError(f"{p} is neither a run directory (no {CONFIG}) nor a folder of them; give runs "
                                "posbench-train made, e.g. runs/<run_id> or runs/")
    return found


def run_curve(folder: RunDir, multiple: int, n_windows: int, n_cuts: int,
              device: torch.device = torch.device("cpu")) -> pd.DataFrame:
    """One run's EffRem values: a frame of (run, encoding, seed, steps, train_len, T, t, kept, window, tv)."""
    completed_metrics(folder)  # a run still training, diverged or without metrics: one line
    model, spec = model_from_checkpoint(folder.load_checkpoint(), device)
    corpus = load_corpus(spec.data)
    T = multiple * spec.train_len
    # a subword tokenizer's tokens hold no byte separator: its windows come from the stream
    x, inside = windows(corpus.val, spec.data.doc_separator.encode() if corpus.is_bytes else b"", T, n_windows)
    if not inside:
        log.warning("%s: no validation document holds %d tokens; its windows cross document separators", folder.name, T)
    cuts = cut_grid(T, n_cuts, spec.train_len)
    tv = effective_remembrance(model, torch.from_numpy(x), cuts)
    rows = [dict(run=folder.name, encoding=spec.encoding.name, seed=spec.seed, steps=spec.train.steps,
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
    for folder in run_dirs(paths):
        config = folder.read_run_config()  # the filter reads the saved config: no checkpoint loaded for a skipped run
        if (only and config["encoding"]["name"] not in only) or (steps is not None and config["train"]["steps"] != steps):
            continue
        frame = run_curve(folder, multiple, n_windows, n_cuts)
        frames.append(frame)
        at = frame[frame["kept"] == frame["train_len"]]
        log.info("EffRem %s: %.3f where train_len tokens are kept", folder.name, at["tv"].mean() if len(at) else float("nan"))
    if not frames:
        raise PosbenchError(f"no completed run under {', '.join(map(str, paths))} matches"
                            + (f" encodings {','.join(only)}" if only else "") + (f" steps={steps}" if steps else ""))
    return pd.concat(frames, ignore_index=True)

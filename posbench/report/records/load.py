"""Run directories in: every file of a run read once, checked, and kept for the whole report.

Each completed run's config, history and per-position curves are read once, checked, and kept in a
``RunFiles``: the sections take what they need from it (history.json serves three: training curves,
convergence, task budgets; config.yaml four). The checks are the run directory's
(posbench.store.rundir.check_metrics) plus the report's own (posbench/report/records/checks.py): a run that fails one is skipped with one warning
and listed as unreadable, never a traceback half way through a report.

The per-position curves of every completed run stay in memory: a few hundred kilobytes per run
at the default lengths.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from posbench.core.errors import PosbenchError
from posbench.evaluation.variants import VARIANTS
from posbench.report.records.checks import (
    check_history,
    check_per_position,
    check_records,
    parse_config,
)
from posbench.report.records.selection import Selection
from posbench.report.records.rows import remember_row
from posbench.spec import RunSpec
from posbench.store.rundir import (
    CONFIG,
    CONTEXT_COLUMNS,
    METRICS,
    RUN_COLUMNS,
    RUN_KEY,
    RunDir,
    check_metrics,
    find_runs,
)

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class RunFiles:
    """What the report reads of a completed run besides its metrics."""

    config: DictConfig
    config_text: str  # as written, for the manifest (a rebuild reads each run's config there)
    history: pd.DataFrame | None  # None: the run wrote no history.json
    per_position: dict[str, np.ndarray]  # empty: no per_position.npz


@dataclass(frozen=True)
class LoadedRuns:
    """One row per readable run, one row per run x variant x protocol x length, the run
    directories that could not be read ({run_dir, reason}) and each completed run's files (by
    run directory)."""

    runs: pd.DataFrame
    evals: pd.DataFrame
    skipped: list[dict]
    files: dict[str, RunFiles]
    token_sets: dict[str, dict]  # each token set's scored documents and their tokens (metrics["token_sets"])
    # rows recorded for an encoding their variant does not apply to (by older code; each equals
    # the encoding's own row by construction), left out of every table: their names
    not_applicable: list[str] = ()
    # a report rebuilt from a committed report's records (posbench/report/records/committed.py): what that
    # report kept besides its records (convergence, commands, environment, ...); None for run directories
    recorded: Any = None


def read_run_files(run_dir: Path) -> RunFiles:
    try:
        text = (run_dir / CONFIG).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{CONFIG}: {type(e).__name__}") from None
    arrays = RunDir(run_dir).read_per_position() or {}
    check_per_position(arrays)
    return RunFiles(parse_config(text), text, check_history(RunDir(run_dir).read_history()), arrays)


def load_runs(roots: Path | Sequence[Path], selection: Selection | None = None) -> LoadedRuns:
    """Every run below ``roots`` (one folder or several, joined) that ``selection`` keeps: its rows
    and records, with its files kept. A run id found twice is one PosbenchError unless both copies'
    metrics.json are the same (then the first is read): two different runs of one id would be two
    records of one seed in a cell."""
    roots = [Path(roots)] if isinstance(roots, (str, Path)) else [Path(r) for r in roots]
    runs, evals, skipped, files, token_sets, dropped = [], [], [], {}, {}, set()
    seen: dict[str, tuple[Path, str, Path]] = {}
    for root, run_dir in [(root, d) for root in roots for d in find_runs(root)]:
        try:
            text = (run_dir / METRICS).read_text()
            m = check_metrics(json.loads(text), run_dir / METRICS)
            check_records(m)
            if selection and not selection.keeps(m["run_id"], _config_or_none(run_dir)):
                continue
            # a run id in two of the folders given: the same run reached twice (a folder and a copy of it) is
            # read once, and said; two different runs of one id would be two records of one seed in a cell.
            # Within one folder every directory is read as before (a damaged copy is skipped with its reason)
            if (rid := str(m["run_id"])) in seen and seen[rid][2] != root:
                first, first_text, _ = seen[rid]
                if first_text == text:
                    log.warning("run %s is in %s and %s with the same records: read once", rid, first, run_dir)
                    continue
                raise PosbenchError(f"run id {rid} is in {str(first)!r} and {str(run_dir)!r} with different records; "
                                    "report one of them (--only or one folder fewer)")
            seen.setdefault(rid, (run_dir, text, root))
            if m["status"] == "completed":
                files[str(run_dir)] = read_run_files(run_dir)
        except (ValueError, OSError) as e:
            log.warning("skipping run %s: %s", run_dir, e)
            skipped.append({"run_dir": str(run_dir), "reason": str(e)})
            continue
        if str(run_dir) in files:
            applies = applicable(files[str(run_dir)].config)
            for field in ("evaluations", "task_evaluations"):
                records = m.get(field) or []
                dropped |= {str(r.get("variant")) for r in records if not applies(r.get("row"))}
                m[field] = [r for r in records if applies(r.get("row"))]
        row = {k: m.get(k) for k in RUN_COLUMNS + CONTEXT_COLUMNS}
        row["run_dir"] = str(run_dir)
        runs.append(row)
        names = tokenizer_names(m)
        token_sets.update({names.get(n, n): v for n, v in (m.get("token_sets") or {}).items()})
        for e in m.get("evaluations", []):
            e = dict(e)
            e["token_set"] = names.get(e.get("token_set"), e.get("token_set"))
            what = e.pop("row", None)
            remember_row(str(e["variant"]), what)  # what the row is: its style, not a column
            e["windowed"] = is_windowed(what)
            evals.append({**{k: row[k] for k in RUN_KEY + ["status"]}, **e})
    frame = pd.DataFrame(runs, columns=RUN_COLUMNS + CONTEXT_COLUMNS + ["run_dir"])
    if dropped:
        log.warning("left out rows of variants that do not apply to their encoding (recorded by older code): %s",
                    ", ".join(sorted(dropped)))
    frame, evals = with_corpus_labels(frame, pd.DataFrame(evals))
    frame, evals = with_base_labels(frame, evals, {d: f.config for d, f in files.items()})
    return LoadedRuns(frame, evals, skipped, files, token_sets, sorted(dropped))


def corpus_of(model: str) -> str | None:
    """The corpus a model label names (``small@pydocs/bpe1024`` -> ``pydocs``); None where it names none."""
    base = str(model).split("/", 1)[0]
    return base.split("@", 1)[1] if "@" in base else None


def with_corpus(model: str, corpus: str) -> str:
    """``<size>@<corpus>[/<tokenizer>]``: the corpus after the size, before the tokenizer, so that a
    subword row's bytes row (report/analysis/tokenizers.py: the part before "/") is on its corpus."""
    size, slash, tokenizer = str(model).partition("/")
    return f"{size}@{corpus}{slash}{tokenizer}"


def with_corpus_labels(runs: pd.DataFrame, evals: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Where the runs were trained on more than one corpus (``data=stdlib`` and ``data=pydocs``), each
    run's model named with its corpus (``with_corpus``): the report's rows and panels are per model,
    and a panel compares the records of one token set (tables.comparable_records), so without the
    name a corpus's runs would be one row with another's, or left out of it. One corpus: unchanged
    (every report of one corpus reads as before)."""
    names = runs["corpus"].map(lambda c: c.get("name") if isinstance(c, dict) else None)
    if names.dropna().nunique() < 2:
        return runs, evals
    label = {rid: with_corpus(m, n) if n else m for rid, m, n in zip(runs["run_id"], runs["model"], names)}
    runs = runs.assign(model=runs["run_id"].map(label))
    if not evals.empty:
        evals = evals.assign(model=evals["run_id"].map(label).fillna(evals["model"]))
    return runs, evals


BASE_MARK = "|base="  # a model label's RoPE base: ``small|base=500@pydocs/bpe1024``


def base_text(base: float) -> str:
    """A RoPE base as labels and tables show it: 1000000, not 1e+06."""
    base = float(base)
    return f"{int(base)}" if base.is_integer() else f"{base:g}"


def with_base(model: str, base: float) -> str:
    """``<size>|base=<base>[@<corpus>][/<tokenizer>]``: the RoPE base beside the size, so that the corpus
    (after ``@``) and the tokenizer (after ``/``) read as before."""
    text = str(model)
    cut = min([i for i in (text.find("@"), text.find("/")) if i >= 0], default=len(text))
    return f"{text[:cut]}{BASE_MARK}{base_text(base)}{text[cut:]}"


def base_of(model: str) -> tuple[str, float | None]:
    """(the label without its RoPE base, the base; None where it names none)."""
    text = str(model)
    if BASE_MARK not in text:
        return text, None
    head, _, rest = text.partition(BASE_MARK)
    digits = len(rest) - len(rest.lstrip("0123456789."))
    return head + rest[digits:], float(rest[:digits])


def with_base_labels(runs: pd.DataFrame, evals: pd.DataFrame, configs: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Where the runs were trained at more than one RoPE base (``encoding.base``: experiment=rope_base),
    each run with a base named with it in its model (``with_base``): rows and panels are per model, so
    runs of different bases are different panels (the check that refuses pooled settings would refuse them
    otherwise), and the map reads the base as an axis (report/analysis/points.py). One base: unchanged."""
    bases = {}
    for rid, d in zip(runs["run_id"], runs.get("run_dir", [])):
        cfg = configs.get(d)
        enc = cfg.get("encoding") if cfg is not None else None
        if enc is not None and enc.get("base") is not None:
            bases[rid] = float(enc.get("base"))
    if len(set(bases.values())) < 2:
        return runs, evals
    label = {rid: with_base(m, bases[rid]) if rid in bases else m for rid, m in zip(runs["run_id"], runs["model"])}
    runs = runs.assign(model=runs["run_id"].map(label))
    if not evals.empty:
        evals = evals.assign(model=evals["run_id"].map(label).fillna(evals["model"]))
    return runs, evals


def _config_or_none(run_dir: Path) -> DictConfig | None:
    """A run's config for the filter, None where it has none that reads."""
    try:
        return parse_config((run_dir / CONFIG).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def without_runs(loaded: LoadedRuns, run_ids: set[str]) -> LoadedRuns:
    """``loaded`` without the runs ``run_ids`` (their rows, records and files)."""
    runs = loaded.runs[~loaded.runs["run_id"].isin(run_ids)]
    evals = loaded.evals[~loaded.evals["run_id"].isin(run_ids)] if not loaded.evals.empty else loaded.evals
    gone = set(loaded.runs.loc[loaded.runs["run_id"].isin(run_ids), "run_dir"])
    return replace(loaded, runs=runs, evals=evals, files={d: f for d, f in loaded.files.items() if d not in gone})


def tokenizer_names(metrics: dict) -> dict[str, str]:
    """A subword tokenizer's token sets, renamed ``<tokenizer>:<name>``. A token set is named by its
    corpus and segments, the same bytes under every tokenizer (docs/protocols.md, "Comparing
    tokenizers"), but its documents hold other numbers of tokens under each, and the report weighs
    each document by its tokens: a byte run and a BPE run of one sweep must not share the entry.
    The tokenizer is the part of the model's name after "/" (``small/bpe1024``); bytes keep the name."""
    _, _, tokenizer = str(metrics.get("model") or "").partition("/")
    if not tokenizer:
        return {}
    return {n: n if n.startswith(tokenizer + ":") else f"{tokenizer}:{n}" for n in metrics.get("token_sets") or {}}


def applicable(config: DictConfig):
    """A test of a record's ``row``: False where a variant of the row that decides by the encoding
    alone (Variant.encoding_decides) does not apply to this run's encoding (a logn row of iRoPE,
    whose layers all have a window or a temperature of their own, recorded before logn said so)."""
    from omegaconf import OmegaConf

    encoding = None

    def applies(row) -> bool:
        nonlocal encoding
        if not isinstance(row, dict):
            return True
        for v in row.get("variants") or []:
            cls = VARIANTS.find(str(v.get("variant"))) if isinstance(v, dict) else None
            if cls is None or not getattr(cls, "encoding_decides", False):
                continue
            if encoding is None:
                try:
                    spec = RunSpec.from_config(OmegaConf.to_container(config, resolve=True))
                    encoding = spec.encoding.build(spec.shape)
                except Exception:  # noqa: BLE001 - a config older code cannot build: keep its rows
                    return True
            if not cls().applies_to(encoding):
                return False
        return True

    return applies


def is_windowed(row: dict | None) -> bool:
    """Whether a record's row is scored with an evaluation-time window (a variant whose class says
    ``window = True``, e.g. +bca): a control, shown apart from the unwindowed rows."""
    if not isinstance(row, dict):
        return False
    return any(getattr(VARIANTS.find(str(v.get("variant"))), "window", False) is True for v in row.get("variants") or []
               if isinstance(v, dict))

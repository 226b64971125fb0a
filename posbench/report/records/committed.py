"""A committed report's folder as the report's input: a report rebuilt from the records it kept,
where its runs are gone (``posbench-report FOLDER --rebuild [--with OTHER]``).

A report keeps every record: those it compared in ``evaluations.csv.gz`` (each seed's perplexity and
per-document losses), ``task_records.csv`` (with those on another example set), ``attention.csv``
and ``during_training.csv``; those on another token set in ``not_compared.csv``; each run's budget,
parameter count and last-doubling fall (``convergence.csv``); and, in ``manifest.json.gz`` (posbench/report/records/manifest.py),
every shown run's full config, the commands, the environment table, the folders joined, the scored
documents and the names of rows left out because their variant does not apply. The rebuild reads
these files only, never the words of report.md.
From these the current report code recomputes every table, interval, test, rank, verdict and figure
that reads records; the perplexities cannot change. What needs a run's own files (the training
curves' histories, the per-position losses) is not kept: those sections keep the original report's
figure, and say so (``Section.needs_runs``).

``--with OTHER`` takes the records of another committed report made from some of the same runs
retrained later (the same run ids: the same configuration), e.g. with a far-context control the
first evaluation did not score: every record of such a run on a protocol OTHER holds comes from
OTHER, so that a row and its control always come from the same weights. The records both folders
hold show whether the retrained runs are the same models: above ``REPRODUCED`` (relative
perplexity) the rebuild is refused; the largest difference per encoding is written in the report.
The rebuilt report's records are the joined ones, and its manifest names the folders joined, so a
later rebuild keeps that line and does not join the folder again (with or without ``--with``).

The scored documents' token counts are not in the records; they are derived from each token set's
name and number of documents, which holds only where every document contributes the same number of
tokens (the default segments: ``segments[<n>, 1 per doc, ...]``); any other token set is refused.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.report.records.checks import parse_config
from posbench.report.records.load import LoadedRuns, RunFiles
from posbench.report.records.manifest import MANIFEST, Join, read_manifest
from posbench.store.rundir import CONTEXT_COLUMNS, RUN_COLUMNS, RUN_KEY
from posbench.tasks import LM

EVALUATIONS, TASK_RECORDS, CONVERGENCE = "evaluations.csv.gz", "task_records.csv", "convergence.csv"
ATTENTION, DURING_TRAINING = "attention.csv", "during_training.csv"
NOT_COMPARED = "not_compared.csv"  # report/sections/not_compared.py: the records on another token set
REPRODUCED = 0.01  # the largest relative perplexity difference allowed between two folders' copies of a record
RECORD_KEYS = ["run_id", "variant", "protocol", "length", "token_set"]
SEGMENTS = re.compile(r"segments\[(\d+), 1 per doc")
# what a task record holds (tasks/score.py); the report's derived columns (accuracy, chance, loss) are recomputed
TASK_FIELDS = ["variant", "task", "length", "multiple", "condition", "example_set", "examples", "exact",
               "token_accuracy", "reason"]


@dataclass(frozen=True)
class RecordedReport:
    """What a committed report kept of its runs besides their records: frames the report would
    otherwise compute from the runs' files, and where they came from."""

    folder: Path
    convergence: pd.DataFrame  # convergence.csv (empty where the report had none)
    commands: list[str]
    environment: pd.DataFrame
    during_training: pd.DataFrame
    attention: pd.DataFrame
    joins: list[Join] = field(default_factory=list)  # a --with folder each: what it replaced, how far apart
    not_compared: pd.DataFrame = field(default_factory=pd.DataFrame)  # not_compared.csv: records in no table


def _count(v) -> int | None:
    """A recorded count (a run's parameters), None where the report kept none (an older convergence.csv
    has no such column)."""
    return int(v) if v is not None and pd.notna(v) else None


def _csv(path: Path) -> pd.DataFrame:
    if not path.is_file() and path.suffix == ".gz" and path.with_suffix("").is_file():
        path = path.with_suffix("")  # a report made before its records were compressed (evaluations.csv)
    if not path.is_file():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise PosbenchError(f"cannot read {path}: {e}") from None


REQUIRED = [*RECORD_KEYS, "encoding", "model", "train_len", "seed", "multiple", "ppl"]


def checked_records(evals: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``evals`` (the records of ``path``) where a report can be rebuilt from them, else PosbenchError with
    the file, the first bad record and the fix: every column the report reads; a perplexity that is a
    finite number >= 1 (exp of a cross-entropy) on every record without a ``reason`` it was not scored
    (NaN or inf would silently rewrite the verdicts); no record twice (the same run, variant, protocol,
    length and token set)."""
    fix = "restore it from git (git checkout -- <file>) or regenerate the report from its runs"
    if missing := [c for c in REQUIRED if c not in evals.columns]:
        raise PosbenchError(f"{path} lacks the column(s) {', '.join(missing)} a rebuild reads; {fix}")
    ppl = pd.to_numeric(evals["ppl"], errors="coerce")
    unexplained = ppl.isna() & evals["ppl"].notna()  # a cell that is not a number at all
    if "reason" in evals:
        unexplained |= ppl.isna() & evals["reason"].isna()
    else:
        unexplained |= ppl.isna()
    bad = unexplained | ~(ppl.isna() | (np.isfinite(ppl) & (ppl >= 1)))
    if bad.any():
        i = bad.idxmax()
        raise PosbenchError(f"{path}: record {i + 2} (run {evals.at[i, 'run_id']}, length {evals.at[i, 'length']}) has "
                            f"perplexity {evals.at[i, 'ppl']}, where a finite number >= 1 is valid ({int(bad.sum())} "
                            f"such record(s)); {fix}")
    twice = evals.duplicated(RECORD_KEYS, keep=False)
    if twice.any():
        i = twice.idxmax()
        raise PosbenchError(f"{path}: {int(twice.sum())} records repeat the same run, variant, protocol, length and "
                            f"token set, e.g. run {evals.at[i, 'run_id']} at length {evals.at[i, 'length']}; keep one "
                            f"of each (or {fix})")
    return evals.assign(ppl=ppl)


def with_records(evals: pd.DataFrame, extra: pd.DataFrame, name: str) -> tuple[pd.DataFrame, Join]:
    """``evals`` with every record of the runs ``extra`` (another folder's, ``name``) also holds taken
    from ``extra`` on the protocols it scored, and the join: how many runs and records and how far the
    shared records differ. Refused where they differ by more than REPRODUCED, or share none."""
    extra = extra[extra["run_id"].isin(set(evals["run_id"]))]
    both = evals.merge(extra[RECORD_KEYS + ["ppl"]], on=RECORD_KEYS, suffixes=("", "_extra"))
    # the weights are shown the same by the full passes; an evaluation-time control (a windowed row) may
    # have been scored anew under a corrected definition, and is taken, with its change stated, not checked
    control = both["windowed"].fillna(False).astype(bool) if "windowed" in both else pd.Series(False, index=both.index)
    plain = both[~control]
    if plain.empty:
        raise PosbenchError(f"{name} shares no record of a full pass with this report, so nothing shows that its runs "
                            "are the same; give the folder of a report made from the same runs")
    diff = (plain["ppl_extra"] / plain["ppl"] - 1).abs()
    if not diff.max() <= REPRODUCED:
        raise PosbenchError(f"{name} does not reproduce this report's records (largest relative perplexity difference "
                            f"{diff.max():.2e} > {REPRODUCED:g}): its runs are not the same")
    worst = diff.groupby(plain["encoding"]).max()
    changed = both[control]
    moved = (changed["ppl_extra"] / changed["ppl"] - 1).abs()
    rescored = {str(v): float(d) for v, d in moved.groupby(changed["variant"]).max().items() if d > REPRODUCED}
    # a run's records on a protocol come from one folder: the panels (and the pairs of a row with its
    # control) are per protocol, so the report's other protocols of that run may stay
    taken = set(zip(extra["run_id"], extra["protocol"]))
    kept = [(r, p) not in taken for r, p in zip(evals["run_id"], evals["protocol"])]
    merged = pd.concat([evals[kept], extra], ignore_index=True)
    join = Join(name, int(extra["run_id"].nunique()), tuple(sorted(extra["protocol"].unique())), len(extra),
                len(extra) - len(both), {str(e): float(d) for e, d in worst.items()}, rescored)
    return merged, join


def read_evaluations(folder: Path, extra: list[Path] = (), before: list[Join] = ()
                     ) -> tuple[pd.DataFrame, dict, list[Join]]:
    """(every record of ``folder/evaluations.csv.gz`` (``evaluations.csv`` in a report made before it was
    compressed), with ``extra`` folders' merged; their token sets' document sizes; every folder joined). Empty where the report had no language models.
    ``before``: the folders an earlier rebuild joined, whose records ``evaluations.csv.gz`` already holds:
    they stay joined (joining one again would compare it with itself) and are not merged again."""
    evals = _csv(folder / EVALUATIONS)
    if not evals.empty:
        evals = checked_records(evals, folder / EVALUATIONS)
    if evals.empty:
        if extra:
            raise PosbenchError(f"{folder} has no {EVALUATIONS}, so --with has nothing to join")
        return evals, {}, []
    merged = list(before)
    joined_already = {Path(j.folder).resolve() for j in before}
    for other in extra:
        if Path(other).resolve() == folder.resolve():
            raise PosbenchError(f"--with {other} is the folder being rebuilt; give a report of the same runs retrained")
        if Path(other).resolve() in joined_already:  # its records are this report's already (an earlier rebuild)
            continue
        more = _csv(Path(other) / EVALUATIONS)
        if more.empty:
            raise PosbenchError(f"--with {other}: {Path(other) / EVALUATIONS} does not exist; give a committed report's folder")
        evals, join = with_records(evals, checked_records(more, Path(other) / EVALUATIONS), str(other))
        merged.append(join)
    # records older than per-document losses have none: their intervals are over seeds alone
    nats = evals["doc_nats"] if "doc_nats" in evals else pd.Series(None, index=evals.index, dtype=object)
    evals["doc_nats"] = [ast.literal_eval(x) if isinstance(x, str) else None for x in nats]
    evals["windowed"] = evals["windowed"].fillna(False).astype(bool) if "windowed" in evals else False
    return evals, token_sets(evals), merged


def token_sets(evals: pd.DataFrame) -> dict[str, dict]:
    """Each token set's documents and their tokens (the report's ``token_sets``), from its name."""
    out = {}
    if "token_set" not in evals:
        return out
    for name, g in evals.dropna(subset=["token_set"]).groupby("token_set"):
        match = SEGMENTS.search(name)
        docs = g["doc_nats"].dropna().map(len)
        if docs.empty:  # no per-document losses recorded: nothing to resample
            continue
        if match is None:
            raise PosbenchError(f"token set {name!r} does not score the same tokens from every document, which the "
                                "records do not keep: regenerate this report from its runs")
        n = int(docs.max())
        if g["model"].astype(str).str.contains("/").any():
            # a subword tokenizer's set: each document's segment of the same bytes holds its own number of tokens,
            # which the records do not keep, only their sum. The documents are weighted equally in the text's
            # resampling (the recorded perplexities themselves are exact): its intervals are approximate, and say so
            total = float(g["tokens_scored"].iloc[0])
            out[name] = {"doc_tokens": [total / n] * n, "approximate": True}
            continue
        out[name] = {"doc_tokens": [int(match.group(1))] * n}
    return out


def task_evaluations(records: pd.DataFrame) -> dict[str, list[dict]]:
    """Each run's task records as its metrics.json held them (the fields tasks/score.py writes)."""
    if records.empty:
        return {}
    kept = records[["run_id"] + [c for c in TASK_FIELDS if c in records.columns]]
    return {rid: [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
                  for rec in g.drop(columns="run_id").to_dict("records")]
            for rid, g in kept.groupby("run_id", sort=False)}


def load_committed(folder: Path, extra: list[Path] = ()) -> LoadedRuns:
    """The runs of the committed report in ``folder`` as the report loads run directories, from
    its records (the module doc); PosbenchError where the folder is not a committed report."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PosbenchError(f"--rebuild reads a committed report's folder, and {str(folder)!r} is no folder")
    manifest = read_manifest(folder)
    evals, sets, joins = read_evaluations(folder, list(extra), manifest.joins)
    tasks = _csv(folder / TASK_RECORDS)
    if evals.empty and tasks.empty:
        raise PosbenchError(f"{str(folder)!r} holds no records ({EVALUATIONS} or {TASK_RECORDS}) to rebuild a report from")
    configs = manifest.configs
    for name, info in manifest.scored_text.items():
        if name in sets and len(info["docs"]) == len(sets[name]["doc_tokens"]):
            sets[name].update(info)
    conv = _csv(folder / CONVERGENCE)
    runs = pd.concat([f[RUN_KEY] for f in (evals, tasks) if not f.empty]).drop_duplicates("run_id")
    if missing := sorted(set(runs["run_id"]) - set(configs)):
        raise PosbenchError(f"{folder / MANIFEST} holds no config of run {missing[0]} (and {len(missing) - 1} more): "
                            "it is not the manifest of the report these records came from")
    files, rows, task_recs = {}, [], task_evaluations(tasks)
    budgets = conv.set_index("run_id") if not conv.empty else pd.DataFrame()
    for r in runs.to_dict("records"):
        run_dir = str(folder / r["run_id"])  # a name only: the run's directory is gone
        try:
            cfg = parse_config(configs[r["run_id"]])
        except ValueError as e:
            raise PosbenchError(f"the config of run {r['run_id']} in {folder / MANIFEST}: {e}") from None
        files[run_dir] = RunFiles(cfg, configs[r["run_id"]], None, {})
        known = budgets.loc[r["run_id"]] if r["run_id"] in budgets.index else None
        task = (cfg.get("task") or {}).get("name") or LM
        row = {k: None for k in RUN_COLUMNS + CONTEXT_COLUMNS}
        row.update(r, status="completed", task=task, run_dir=run_dir,
                   train_steps=known["steps"] if known is not None else (cfg.get("train") or {}).get("steps"),
                   train_tokens=known["train_tokens"] if known is not None else None,
                   final_val_loss=known["final_val_loss"] if known is not None else None,
                   params=_count(known.get("params")) if known is not None else None,
                   task_evaluations=task_recs.get(r["run_id"]))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=RUN_COLUMNS + CONTEXT_COLUMNS + ["run_dir"])
    recorded = RecordedReport(folder, conv, list(manifest.commands), manifest.environment, _csv(folder / DURING_TRAINING),
                        _csv(folder / ATTENTION), joins, _csv(folder / NOT_COMPARED))
    return LoadedRuns(frame, evals, [], files, sets, list(manifest.not_applicable), recorded)

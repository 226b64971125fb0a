"""What every report section reads, computed once: the runs (each file read once), the records the
tables compare, and the frames two or more topics share, each computed by posbench/report/analysis/
(the main table, the budgets and their trends, the convergence of each run, the task records). It
imports no topic: a frame one section alone reads is computed in that section (``derived``).

``ReportContext.load`` does every check that can refuse a report (no runs, an unknown protocol,
nothing usable) before anything is written. Frames are computed on first use (``cached_property``);
a plug-in section can keep its own with ``derived``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.report.analysis import task_frames
from posbench.report.analysis import convergence, sweep
from posbench.report.analysis.key_tokens import RULES, SeedKeyCounts, read_key_counts
from posbench.report.records.checks import pooled_encoding_settings
from posbench.report.records.committed import load_committed
from posbench.report.records.load import LoadedRuns, RunFiles, load_runs, without_runs
from posbench.report.records.selection import ComparisonRequest, Selection, is_smoke, shown_folder
from posbench.report.analysis.tables import comparable_records, main_table, multiples, verdict_multiple
from posbench.report.analysis.tuning import choose_settings, split_runs
from posbench.store.rundir import RunDir
from posbench.tasks import LM

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class Options:
    """The report's settings (posbench-report's flags)."""

    tolerance: float
    improving: float
    spread: float
    threshold: float
    protocols: list[str] | None = None
    rebuild: bool = False  # the folder is a committed report's: rebuild it from its records (report/records/committed.py)
    with_folders: tuple[Path, ...] = ()  # with --rebuild: committed reports of some of the same runs retrained
    multiple: float | None = None  # the verdict's multiple (--multiple); None: the longest every row has
    selection: Selection = Selection()  # --only / --where (posbench/report/records/selection.py)
    comparison: ComparisonRequest = ComparisonRequest()  # --compare / --baseline (posbench/report/records/selection.py)
    key_tokens: str = "bytes"  # --key-tokens: the key-token rule (posbench/report/key_tokens/frames.py RULES)
    # how to name each folder read, where it is not the folder given: a records file's unpacked runs are
    # named by the file (posbench/cli/report.py); "" where the folder names itself
    shown_as: tuple[str, ...] = ()
    # --forecast AXIS=VALUE: forecasts past the data at these values (posbench/report/forecast/section.py);
    # none: one doubling past each line's largest point
    forecasts: tuple[tuple[str, float], ...] = ()
    vector: bool = False  # --vector: every drawn figure also as a PDF beside its PNG (drawing/plot.py)


class ReportContext:
    """Runs and frames shared by the sections. ``completed``: the completed language-model runs
    the perplexity sections compare (at the default setting of a learning-rate grid);
    ``task_runs``: completed runs of synthetic tasks; ``all_completed``: every completed run."""

    def __init__(self, runs_dir: Path | list[Path], options: Options, loaded: LoadedRuns, evals: pd.DataFrame,
                 out_dir: Path | None = None, smoke_left_out: int = 0):
        self.runs_dirs = [Path(runs_dir)] if isinstance(runs_dir, (str, Path)) else [Path(d) for d in runs_dir]
        self.runs_dir = self.runs_dirs[0]  # the first folder (sections that read one)
        # how the report names its folders: never the absolute path of the machine that made it
        shown_as = list(options.shown_as) + [""] * len(self.runs_dirs)
        self.folder_names = [shown_as[i] or shown_folder(d, out_dir if out_dir is not None else d / "report")
                             for i, d in enumerate(self.runs_dirs)]
        self.smoke_left_out = smoke_left_out  # train=smoke runs left out beside runs of a real budget
        self.options, self.files, self.skipped = options, loaded.files, loaded.skipped
        self.token_sets = loaded.token_sets
        self.recorded = loaded.recorded  # rebuilt from a committed report's records: what it kept (else None)
        self.not_applicable = list(loaded.not_applicable)  # rows of variants that do not apply (report/records/load.py)
        self.runs = loaded.runs  # every readable run (at the default setting of a learning-rate grid)
        self.all_completed = loaded.runs[loaded.runs["status"] == "completed"]
        is_lm = self.all_completed["task"].fillna(LM) == LM
        self.task_runs = self.all_completed[~is_lm]
        self.lm_runs = self.all_completed[is_lm]  # every completed language model, tuned or not
        self.has_lm = not evals.empty  # else a report of task runs only: no perplexity sections
        self.evals, self.left_out = comparable_records(evals) if self.has_lm else (evals, pd.DataFrame())
        if self.recorded is not None and not self.recorded.not_compared.empty:  # a rebuild: what its report left out
            kept = self.recorded.not_compared
            if options.protocols and "protocol" in kept:  # as the compared records are (ReportContext.load)
                kept = kept[kept["protocol"].isin(options.protocols)]
            self.left_out = kept if self.left_out.empty else pd.concat([self.left_out, kept], ignore_index=True)
        self.completed = self.lm_runs if self.has_lm else self.all_completed
        self.choices = choose_settings(self.completed, self.configs) if self.has_lm else None
        self.tuned = None
        if self.choices is not None:  # a learning-rate grid: the main table keeps the default setting
            default_ids, chosen_ids = split_runs(self.completed, self.choices, self.configs)
            self.tuned = main_table(self.evals[self.evals["run_id"].isin(chosen_ids)], options.tolerance, self.token_sets,
                                    multiple=options.multiple)
            keep = default_ids or chosen_ids
            self.evals = self.evals[self.evals["run_id"].isin(keep)]
            self.completed = self.completed[self.completed["run_id"].isin(keep)]
            if default_ids:
                self.runs = self.runs[self.runs["run_id"].isin(default_ids) | (self.runs["status"] != "completed")]
        # runs of one configuration at several budgets: every budget for the budget section, the
        # largest for the main table and the headline (posbench/report/analysis/sweep.py)
        self.evals = sweep.with_budgets(self.evals, loaded.runs) if self.has_lm else self.evals
        self.budget_evals = self.evals
        self.has_budgets = self.has_lm and sweep.has_budgets(self.evals)
        if self.has_budgets:
            self.evals = sweep.largest_budget(self.evals)
        # the verdict's multiple: asked for, else the longest every row of the main table has (tables.verdict_multiple)
        self.multiple = verdict_multiple(self.evals, options.multiple) if self.has_lm else None
        self._derived: dict[str, Any] = {}

    @classmethod
    def load(cls, runs_dir: Path | list[Path], options: Options, out_dir: Path | None = None) -> ReportContext:
        """The runs below ``runs_dir`` (one folder or several, joined; with ``options.rebuild``: the
        records of the committed report there), those ``options.selection`` keeps, without smoke runs
        beside real ones; PosbenchError when they make no report. ``out_dir``: the report's folder,
        which the report names its runs' folders relative to."""
        dirs = [Path(runs_dir)] if isinstance(runs_dir, (str, Path)) else [Path(d) for d in runs_dir]
        if options.rebuild and (len(dirs) > 1 or options.selection):
            raise PosbenchError("--rebuild reads one committed report (join another with --with) and keeps all of its "
                                "runs: give one folder and no --only / --where")
        where = ", ".join(repr(str(d)) for d in dirs)
        loaded = load_committed(dirs[0], list(options.with_folders)) if options.rebuild else \
            load_runs(dirs, options.selection)
        if loaded.runs.empty:
            if options.selection:
                raise PosbenchError(f"no run below {where} matches {options.selection.describe()}")
            raise PosbenchError(f"no runs (metrics.json) found below {where}")
        loaded, smoke = leave_out_smoke(loaded)
        if pooled := pooled_encoding_settings(loaded.runs, {d: f.config for d, f in loaded.files.items()}):
            raise PosbenchError(pooled)
        evals = loaded.evals
        if options.multiple is not None and not evals.empty and float(options.multiple) not in multiples(evals):
            verdict_multiple(evals, options.multiple)  # its one-line error names the multiples there are
        if options.protocols and not evals.empty:
            if unknown := sorted(set(options.protocols) - set(evals["protocol"])):
                raise PosbenchError(f"no evaluations with protocol {unknown[0]!r} below {str(runs_dir)!r}; "
                                    f"found: {', '.join(sorted(evals['protocol'].unique()))}")
            evals = evals[evals["protocol"].isin(options.protocols)]
        if options.comparison and not evals.empty:
            options.comparison.check(evals["variant"])  # a name that is no row: one line with the valid ones
        ctx = cls(dirs, options, loaded, evals, out_dir, smoke)
        if ctx.all_completed.empty or (evals.empty and ctx.task_records.empty):
            raise PosbenchError(f"no completed, evaluated runs below {where} ({len(loaded.runs)} runs, "
                                "none usable)")
        return ctx

    # -- each run's files, read once (posbench/report/records/load.py) ------------------------------------
    @cached_property
    def configs(self) -> dict[str, Any]:
        return {d: f.config for d, f in self.files.items()}

    @cached_property
    def histories(self) -> dict[str, pd.DataFrame | None]:
        return {d: f.history for d, f in self.files.items()}

    def run_files(self, run_dir: str) -> RunFiles:
        return self.files[run_dir]

    def per_position(self, runs: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
        """The per-position curves of ``runs``, by run id."""
        return {rid: self.files[d].per_position for rid, d in zip(runs["run_id"], runs["run_dir"]) if d in self.files}

    def token_losses(self, run_id: str) -> dict[str, np.ndarray] | None:
        """A completed run's per-token losses (token_losses.npz; None: it kept none, or its file is
        unreadable, said in a warning). Read on each call and not kept: a sweep's files together can
        hold gigabytes, and the key-token section reduces each run's as it reads it."""
        dirs = self.completed.loc[self.completed["run_id"] == run_id, "run_dir"]
        if dirs.empty or dirs.iloc[0] not in self.files:
            return None
        try:
            return RunDir(Path(dirs.iloc[0])).read_token_losses()
        except ValueError as e:
            log.warning("skipping unreadable %s", e)
            return None

    # -- frames several sections share --------------------------------------------------------------
    @cached_property
    def key_counts(self) -> SeedKeyCounts:
        """Each seed's key-token counts under ``--key-tokens``' rule (posbench/report/analysis/key_tokens.py),
        read once from the runs' token_losses.npz for the key-token section and the measures side by side."""
        return read_key_counts(self.evals, self.token_losses, self.token_sets, RULES[self.options.key_tokens])

    @cached_property
    def table(self) -> pd.DataFrame:
        """The main table (posbench/report/analysis/tables.py); with budgets, at each row's largest budget, with
        that budget (``budget_steps``; the trend of its verdict is the budget section's,
        ``budget_trends``)."""
        table = main_table(self.evals, self.options.tolerance, self.token_sets, multiple=self.multiple)
        if self.has_budgets and not table.empty:
            largest = self.evals.groupby(["protocol", "variant", "model", "train_len"])[sweep.BUDGET].max()
            table = table.merge(largest.rename(sweep.BUDGET).reset_index(), on=["protocol", "variant", "model", "train_len"],
                                how="left")
        return table

    @cached_property
    def budget_table(self) -> pd.DataFrame:
        """The main table at every budget (empty without budgets)."""
        if not self.has_budgets:
            return pd.DataFrame()
        return sweep.budget_table(self.budget_evals, self.options.tolerance, self.token_sets, self.multiple)

    @cached_property
    def budget_changes(self) -> pd.DataFrame:
        """Each row's change per doubling of the budget, paired by seed (empty without budgets)."""
        if not self.has_budgets:
            return pd.DataFrame()
        return sweep.paired_changes(self.budget_evals, self.token_sets, multiple=self.multiple)

    @cached_property
    def budget_trends(self) -> pd.DataFrame:
        if not self.has_budgets:
            return pd.DataFrame()
        return sweep.trends(self.budget_table, self.ratio_column, self.budget_changes)

    @cached_property
    def ratio_column(self) -> str | None:
        """The main table's ``<M>x/1x`` column (None with one multiple, or none at 1x)."""
        return next((c for c in self.table.columns if c.endswith("/1x")), None)

    @cached_property
    def convergence(self) -> pd.DataFrame:
        return self.convergence_of(self.completed)

    @cached_property
    def kept_convergence(self) -> pd.DataFrame:
        """What convergence.csv keeps: the language models' budgets and falls and the task runs' (the task
        section's "Training budget" lines read them), so that a rebuild from the committed folder says what
        the runs said."""
        if not self.has_lm or self.task_runs.empty:  # without language models ``completed`` is every completed run
            return self.convergence
        return pd.concat([self.convergence, self.convergence_of(self.task_runs)], ignore_index=True)

    def convergence_of(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Each of ``runs``' budget and fall over its last doubling (convergence.convergence): from its
        history, or rebuilt from records, as the committed report recorded it (the histories are
        not kept), flagged against this report's ``--improving``."""
        evaluated = set(self.budget_evals["run_id"]) if self.has_lm else None  # where the table finds its largest
        runs = convergence.trained_runs(runs, self.configs)  # a checkpoint's run has no budget of posbench's
        if self.recorded is None:
            return convergence.convergence(runs, self.histories, self.options.improving, evaluated=evaluated)
        falls = self.recorded.convergence
        columns = ["change", "from_step", "to_step", "estimated"]
        # reports before the basis: every fall within its run; the trunk names a budget's branches
        kept = columns + [c for c in ("basis", "trunk") if c in falls.columns]
        recorded = {} if falls.empty or not set(columns) <= set(falls.columns) else {
            r["run_id"]: {**{c: r[c] for c in kept}, "from_step": int(r["from_step"]), "to_step": int(r["to_step"])}
            for r in falls.to_dict("records") if pd.notna(r["change"])}
        return convergence.convergence(runs, self.histories, self.options.improving, recorded, evaluated)

    @cached_property
    def _task_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return task_frames.task_frame(self.all_completed, self.configs)

    @property
    def task_records(self) -> pd.DataFrame:
        """Every task record compared (on its task's most common example set)."""
        return self._task_frames[0]

    @property
    def task_left_out(self) -> pd.DataFrame:
        return self._task_frames[1]

    @cached_property
    def unevaluated(self) -> pd.DataFrame:
        """Completed runs with no number in any table (trained, then killed while evaluating)."""
        if not self.has_lm:
            return self.completed[self.completed["task_evaluations"].map(lambda t: not t)]
        # every budget's records: the main table reads only each row's largest, the budget section all
        return self.completed[~self.completed["run_id"].isin(self.budget_evals["run_id"])]

    def derived(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for, the same object after: for frames a
        section needs both in ``applies`` and in ``build``, or that several sections share."""
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]


def leave_out_smoke(loaded: LoadedRuns) -> tuple[LoadedRuns, int]:
    """``loaded`` without its ``train=smoke`` runs of a configuration (encoding, model, train_len) that a
    completed run of a real budget also has: there the smoke test would be read as a training budget of
    it (posbench/report/records/selection.py says why); and how many were left out. A smoke run of its own
    configuration is no budget of anything and stays (tests and demos mix them on purpose)."""
    configs = {d: f.config for d, f in loaded.files.items()}
    done = loaded.runs[loaded.runs["status"] == "completed"]
    smoke_run = [is_smoke(configs.get(d)) for d in done["run_dir"]]
    keys = ["encoding", "model", "train_len"]
    real = {tuple(r) for r, s in zip(done[keys].itertuples(index=False), smoke_run) if not s}
    smoke = {rid for rid, r, s in zip(done["run_id"], done[keys].itertuples(index=False), smoke_run)
             if s and tuple(r) in real}
    if not smoke:
        return loaded, 0
    log.warning("left out %d train=smoke run(s): a smoke test is no training budget of the other runs of its "
                "configuration", len(smoke))
    return without_runs(loaded, smoke), len(smoke)

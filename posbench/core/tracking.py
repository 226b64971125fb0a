"""Experiment tracking: nothing by default, wandb with ``logger=wandb`` (offline unless asked)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from posbench.core.errors import PosbenchError

LOGGERS = ("none", "wandb")
WANDB_MODES = ("offline", "online", "disabled")


@dataclass(frozen=True)
class LoggerConfig:
    """Experiment tracking (``logger=`` in conf/logger/: none, wandb)."""

    name: str = "none"  # none | wandb
    project: str = "posbench"
    entity: Optional[str] = None
    mode: str = "offline"  # wandb mode: offline | online | disabled (WANDB_MODE in the environment wins)
    dir: Optional[str] = None

    def check(self) -> None:
        if self.name not in LOGGERS:
            raise PosbenchError(f"unknown logger {self.name!r}; valid: {', '.join(LOGGERS)}")
        if self.mode not in WANDB_MODES:
            raise PosbenchError(f"unknown logger.mode {self.mode!r}; valid: {', '.join(WANDB_MODES)}")


class Tracker:
    """The no-op tracker (``logger=none``); WandbTracker overrides what it records."""

    def log(self, metrics: dict, step: int | None = None) -> None:
        pass

    def log_records(self, kind: str, records: list[dict]) -> None:
        """Evaluation records of one kind (posbench/evaluation/plan.py): perplexity or task accuracy."""
        {"perplexity": self.log_evaluation, "task": self.log_task_evaluation}[kind](records)

    def log_evaluation(self, records: list[dict]) -> None:
        pass

    def log_task_evaluation(self, records: list[dict]) -> None:
        pass

    def finish(self) -> None:
        pass


class WandbTracker(Tracker):
    def __init__(self, cfg, run_id: str, run_dir: Path, config: dict):
        import wandb

        self.wandb = wandb
        # WANDB_MODE in the environment wins, so `WANDB_MODE=disabled` always silences tracking
        mode = os.environ.get("WANDB_MODE", cfg.mode)
        self.run = wandb.init(
            project=cfg.project,
            entity=cfg.entity,
            mode=mode,
            dir=str(Path(cfg.dir or run_dir).expanduser()),
            name=run_id,
            id=run_id,  # a resumed run (after kill -9) continues the same wandb run
            resume="allow",
            config=config,
            reinit="finish_previous",
        )

    def log(self, metrics, step=None):
        self.run.log(metrics, step=step)

    def log_evaluation(self, records):
        cols = ["variant", "protocol", "length", "multiple", "loss", "ppl", "bpb", "reason"]
        table = self.wandb.Table(columns=cols, data=[[r.get(c) for c in cols] for r in records])
        defined = [r for r in records if r.get("ppl") is not None]
        curve = self.wandb.Table(columns=["series", "length", "ppl"],
                                 data=[[f"{r['variant']} ({r['protocol']})", r["length"], r["ppl"]] for r in defined])
        self.run.log({
            "eval/table": table,
            "eval/ppl_vs_length": self.wandb.plot.line(curve, "length", "ppl", stroke="series", title="perplexity against length"),
        })
        for r in defined:
            self.run.summary[f"eval/{r['variant']}/{r['protocol']}/ppl@{r['multiple']:g}x"] = r["ppl"]

    def log_task_evaluation(self, records):
        cols = ["variant", "task", "length", "multiple", "condition", "examples", "exact", "token_accuracy", "reason"]
        self.run.log({"eval/task_table": self.wandb.Table(columns=cols, data=[[r.get(c) for c in cols] for r in records])})
        cells: dict[tuple, list[float]] = {}
        for r in records:
            if r.get("exact") is not None:
                cells.setdefault((r["variant"], r["task"], r["multiple"]), []).append(r["exact"])
        for (variant, task, multiple), v in cells.items():  # mean over the grid's conditions
            self.run.summary[f"eval/{variant}/{task}/exact@{multiple:g}x"] = sum(v) / len(v)

    def finish(self):
        self.run.finish()


def log_report(report_dir: Path, figures: dict[str, str]) -> None:
    """Log a report's main table and figures to their own wandb run (``posbench-report --wandb``);
    WANDB_MODE decides online, offline (the default here) or disabled."""
    import pandas as pd
    import wandb

    report_dir = Path(report_dir)
    run = wandb.init(project=os.environ.get("WANDB_PROJECT", "posbench"), job_type="report",
                     name=f"report-{report_dir.resolve().parent.name}", mode=os.environ.get("WANDB_MODE", "offline"),
                     dir=str(report_dir), reinit="finish_previous")
    table = pd.read_csv(report_dir / "table.csv")
    logged = {"report/table": wandb.Table(dataframe=table)}
    for name, caption in figures.items():
        if (report_dir / name).exists():
            logged[f"report/{Path(name).stem}"] = wandb.Image(str(report_dir / name), caption=caption)
    run.log(logged)
    run.finish()


def make_tracker(cfg: LoggerConfig, run_id: str, run_dir: Path, config: dict) -> Tracker:
    if cfg.name == "wandb":
        return WandbTracker(cfg, run_id, run_dir, config)
    return Tracker()

"""Experiment tracking: nothing by default, wandb with ``logger=wandb`` (offline unless asked)."""

from __future__ import annotations

import os
from pathlib import Path


class Tracker:
    """The no-op tracker (``logger=none``); WandbTracker overrides what it records."""

    def log(self, metrics: dict, step: int | None = None) -> None:
        pass

    def log_evaluation(self, records: list[dict]) -> None:
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
        self.run.log({"eval/table": table})
        for r in records:
            if r.get("ppl") is not None:
                self.run.summary[f"eval/{r['variant']}/ppl@{r['multiple']:g}x"] = r["ppl"]

    def finish(self):
        self.run.finish()


def make_tracker(cfg, run_id: str, run_dir: Path, config: dict) -> Tracker:
    if cfg.name == "wandb":
        return WandbTracker(cfg, run_id, run_dir, config)
    return Tracker()

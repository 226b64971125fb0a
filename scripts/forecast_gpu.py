"""The CPU map's forecast of the GPU point (base model, train_len 256: results/map-gpu), as a backtest.

    python scripts/forecast_gpu.py [MAP_RECORDS] [GPU_TABLE] [OUT_DIR]
    # defaults: results/map/records/lines.parquet results/map-gpu/table.csv results/map

Fits each encoding's verdict statistic on equal context along training length and parameters at once
(posbench/report/forecast/external.py) to the CPU map's points and predicts the GPU runs' point; writes
OUT_DIR/forecast_gpu.csv and OUT_DIR/forecast_gpu.md. More than the two axes moves between the two: the
GPU runs took 8192 tokens a step (the CPU map 2048), ran on another device and torch build, kept the small
model's learning rates, and some rows read at 600 steps (results/map-gpu/COMMAND.md); the page says so.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pandas as pd

os.environ.setdefault("WANDB_MODE", "disabled")

from posbench.core.files import atomic_write_text  # noqa: E402
from posbench.report.context import Options, ReportContext  # noqa: E402
from posbench.report.forecast.external import forecast_of  # noqa: E402
from posbench.report.analysis import points as P  # noqa: E402
from posbench.report.analysis import convergence  # noqa: E402
from posbench.report.pipeline import DEFAULT_TOLERANCE  # noqa: E402
from posbench.report.analysis import task_frames  # noqa: E402
from posbench.store import records  # noqa: E402


def measured_of(table: pd.DataFrame) -> pd.DataFrame:
    """The GPU report's unwindowed rows: their verdict statistic on equal context and its interval."""
    plain = table[~table["windowed"].astype(bool) & table["equal_ctx"].notna()]
    return pd.DataFrame({"variant": plain["variant"], "stat": plain["equal_ctx"], "stat_lo": plain["equal_ctx_lo"],
                         "stat_hi": plain["equal_ctx_hi"], "seeds": plain["seeds"],
                         "budget_steps": plain.get("budget_steps"), "model": plain["model"],
                         "train_len": plain["train_len"]})


def size_params(ctx) -> pd.Series:
    """Each model size's recorded parameters in the map (its points' mean)."""
    pts = P.points(ctx.table, P.with_params(ctx.completed, ctx.configs), ctx.ratio_column)
    return pts.groupby(P.SIZE)["params"].mean()


def main(argv: list[str]) -> int:
    map_records = Path(argv[0]) if argv else Path("results/map/records/lines.parquet")
    gpu_table = Path(argv[1]) if len(argv) > 1 else Path("results/map-gpu/table.csv")
    out = Path(argv[2]) if len(argv) > 2 else Path("results/map")
    start = time.time()
    measured = measured_of(pd.read_csv(gpu_table))
    if measured["train_len"].nunique() != 1 or measured["model"].nunique() != 1:
        print(f"forecast_gpu: {gpu_table} holds more than one point; give a table of one model and train_len",
              file=sys.stderr)
        return 2
    with records.as_folder(map_records) as folder:
        ctx = ReportContext.load([Path(folder)], Options(DEFAULT_TOLERANCE, convergence.DEFAULT_IMPROVING, convergence.DEFAULT_SPREAD,
                                                        task_frames.DEFAULT_THRESHOLD), None)
        sizes = size_params(ctx)
        model, train_len = measured["model"].iloc[0], float(measured["train_len"].iloc[0])
        if model not in sizes:
            print(f"forecast_gpu: the map has no model {model!r} to take the parameter count from", file=sys.stderr)
            return 2
        frame = forecast_of(ctx, measured, (train_len, float(sizes[model])))
    frame = frame.merge(measured[["variant", "budget_steps"]], on="variant", how="left")
    atomic_write_text(out / "forecast_gpu.csv", frame.to_csv(index=False))
    shown = pd.DataFrame({
        "row": frame["variant"], "seeds (GPU)": frame["seeds"], "budget (GPU)": frame["budget_steps"],
        "forecast from the CPU map": [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" if pd.notna(m) else "-"
                                      for m, lo, hi in zip(frame["forecast"], frame["forecast_lo"], frame["forecast_hi"])],
        "measured on the GPU": [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi
                                in zip(frame["measured"], frame["measured_lo"], frame["measured_hi"])],
        "backtest": frame["backtest"]})
    took = time.time() - start
    text = (f"# The CPU map's forecast of the GPU point ({model}, train_len {int(train_len)})\n\n"
            f"Made by `python scripts/forecast_gpu.py {map_records} {gpu_table} {out}` ({took:.0f} s).\n\n"
            "Each encoding's verdict statistic on equal context (16x against the lower of 1x and the window "
            "control) is fitted as log S = a + b_L log2 train_len + b_N log2 params to the CPU map's points on "
            "bytes of the standard library (small at train_len 32-256, tiny, small and base at 64; each at 1200 "
            "steps), and predicted at the GPU point (posbench/report/forecast/external.py). The backtest word "
            "is the report's: *passed* where the two 95% intervals overlap, *missed* where they do not.\n\n"
            "**More than two axes move here**, so a miss cannot be laid on the law alone: the GPU runs took 8192 "
            "tokens a step (the CPU map 2048) with the small model's learning rates, on another device and "
            "torch build, and alibi and fox read at 600 steps (results/map-gpu/COMMAND.md); fire and fox have "
            "one seed there (intervals over text only).\n\n"
            + shown.to_markdown(index=False) + "\n")
    atomic_write_text(out / "forecast_gpu.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The table of a task-lever study (experiment=mqar_levers): one row per run below RUNS_DIR with the
model's shape and initial weights (model.init), the task settings it varied, its final validation loss and its token accuracy at each evaluated multiple,
as markdown. The runs vary task settings, so posbench-report (one row per encoding) would pool them.

    python scripts/task_levers_table.py /work/runs/mqar_levers > table.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

LEVERS = ("alphabet", "train_queries", "curriculum")


def rows(runs_dir: Path) -> list[dict]:
    out = []
    for metrics in sorted(runs_dir.glob("*/metrics.json")):
        m = json.loads(metrics.read_text())
        if m.get("status") != "completed":
            continue
        cfg = yaml.safe_load((metrics.parent / "config.yaml").read_text())
        task = cfg["task"]
        acc = {e["multiple"]: e["token_accuracy"] for e in m.get("task_evaluations", [])}
        shape = cfg["model"]
        out.append({"model": f"{shape['name']} (d{shape.get('d_model')}, {shape.get('n_layers')}L, {shape.get('n_heads')}h)",
                    "init": shape.get("init", "gpt2"),
                    "encoding": cfg["encoding"]["name"], "seed": cfg["seed"],
                    **{k: task.get(k) for k in LEVERS}, "steps": m["train_steps"], "lr": (cfg.get("train") or {}).get("lr"),
                    "val_loss": m["final_val_loss"],
                    "acc": acc, "train_s": m["train_wall_s"]})
    # the grid in reading order: model, then curriculum, then the alphabet from large to small, then placement
    return sorted(out, key=lambda r: (r["model"], r["init"], r["encoding"], r["steps"], str(r["curriculum"] or ""),
                                      -(r["alphabet"] or 0), str(r["train_queries"]), r["seed"]))


def markdown(table: list[dict]) -> str:
    multiples = sorted({k for r in table for k in r["acc"]})
    head = ["model", "init", "encoding", "seed", *LEVERS, "steps", "lr", "final val loss", *(f"{m:g}x token acc." for m in multiples),
            "train s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table:
        cells = [r["model"], r["init"], r["encoding"], str(r["seed"]), *(str(r[k] if r[k] not in ([], None) else "-") for k in LEVERS),
                 str(r["steps"]), f"{r['lr']:g}" if r["lr"] is not None else "-", f"{r['val_loss']:.3f}", *(_acc(r["acc"], m) for m in multiples),
                 f"{r['train_s']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _acc(acc: dict, multiple: float) -> str:
    """A cell's token accuracy; n/e where the run has no record there, n/d where its encoding is not defined."""
    if multiple not in acc:
        return "n/e"
    return "n/d" if acc[multiple] is None else f"{acc[multiple]:.3f}"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(f"usage: python scripts/task_levers_table.py RUNS_DIR (a folder of runs); got {' '.join(argv) or 'nothing'}",
              file=sys.stderr)
        return 2
    table = rows(Path(argv[0]))
    if not table:
        print(f"task_levers_table: no completed run below {argv[0]}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

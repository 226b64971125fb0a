"""posbench-train's stdout: one line per run, whatever happened to it, so that a sweep's output (or
a pipe, a log file) says which runs exist and how they did without opening metrics.json:

    rope_small_L64_s0_1a2b3c4d5e  completed  ppl 1x=4.21 16x=9.87 (nonoverlapping)  runs/rope_small_L64_s0_1a2b3c4d5e

The numbers are the run's own row (no evaluation-time variant) on the first protocol asked for
that has records; the log on stderr has every row."""

from __future__ import annotations

from pathlib import Path

from posbench.evaluation.plan import record_key


def _scores(records: list[dict], metric: str) -> str:
    """``1x=4.21 16x=9.87``: the shortest and the longest multiple scored (a task's: the mean over
    its conditions; n/d where not defined)."""
    by_multiple: dict[float, list] = {}
    for r in records:
        by_multiple.setdefault(r["multiple"], []).append(r[metric])
    shown = sorted(by_multiple)
    out = []
    for m in dict.fromkeys([shown[0], shown[-1]]):
        values = [v for v in by_multiple[m] if v is not None]
        out.append(f"{m:g}x=" + (f"{sum(values) / len(values):.{3 if metric == 'exact' else 2}f}" if values else "n/d"))
    return " ".join(out)


def result(metrics: dict, asked: set, protocols: list[str]) -> str:
    """The numbers of a completed run among the records ``asked`` for (their keys)."""
    own = [r for r in metrics.get("evaluations") or []
           if record_key("perplexity", r) in asked and not (r.get("row") or {}).get("variants")]
    for protocol in protocols:
        records = [r for r in own if r["protocol"] == protocol]
        if records:
            return f"ppl {_scores(records, 'ppl')} ({protocol})"
    tasks = [r for r in metrics.get("task_evaluations") or []
             if record_key("task", r) in asked and not (r.get("row") or {}).get("variants")]
    if tasks:
        return f"{tasks[0]['task']} exact {_scores(tasks, 'exact')}"
    if metrics.get("evaluation_error"):
        return f"not evaluated ({metrics['evaluation_error']}); run the command again to evaluate"
    return "not evaluated"


def summary_line(run_id: str, run_dir: Path, metrics: dict | None, asked: set, protocols: list[str]) -> str:
    """One line: run id, status, the 1x and longest scores (or why there are none), the run directory."""
    if metrics is None:
        what = "not finished (another process is working on it, or it was interrupted)"
    elif metrics["status"] == "completed":
        what = f"completed  {result(metrics, asked, protocols)}"
    elif metrics["status"] == "diverged":
        what = f"diverged at step {metrics.get('train_steps')}"
    else:
        what = f"{metrics['status']}  {metrics.get('error') or ''}".rstrip()
    return f"{run_id}  {what}  {run_dir}"

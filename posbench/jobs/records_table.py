"""posbench-eval's stdout: the records a request asked for as one aligned plain-text table (columns
as wide as their longest cell, so long variant names such as ``rope+dynamic_ntk`` do not shift the
rows). Numbers only; the log lines on stderr say what was scored and what was already there."""

from __future__ import annotations


def _undefined(r: dict) -> str:
    return f"n/d ({r.get('reason')})"


def perplexity_rows(records: list[dict]) -> list[list[str]]:
    return [[str(r["variant"]), str(r["protocol"]), str(r["length"]), f"{r['multiple']:g}x",
             _undefined(r) if r["ppl"] is None else f"{r['ppl']:.3f}", str(r.get("tokens_scored", ""))]
            for r in records]


def task_rows(records: list[dict]) -> list[list[str]]:
    return [[str(r["variant"]), r["task"] + ("" if r.get("condition") is None else f" {r['condition']}"),
             str(r["length"]), f"{r['multiple']:g}x", _undefined(r) if r["exact"] is None else f"{r['exact']:.3f}"]
            for r in records]


def aligned(header: list[str], rows: list[list[str]]) -> str:
    """Text columns left-aligned, number columns right-aligned (a column is numeric when every cell
    but an ``n/d`` one parses as a number)."""
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]

    def numeric(i: int) -> bool:
        cells = [r[i].rstrip("x") for r in rows if not r[i].startswith("n/d")]
        try:
            [float(c) for c in cells]
        except ValueError:
            return False
        return bool(cells)

    right = [numeric(i) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(line, widths, right)).rstrip()
             for line in [header, *rows]]
    return "\n".join(lines) + "\n"


def records_table(perplexity: list[dict], task: list[dict]) -> str:
    """The table of a run's perplexity records, then (a task run) its accuracy records."""
    out = ""
    if perplexity:
        out += aligned(["variant", "protocol", "length", "multiple", "ppl", "tokens"], perplexity_rows(perplexity))
    if task:
        out += aligned(["variant", "task", "length", "multiple", "exact"], task_rows(task))
    return out

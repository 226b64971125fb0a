"""The comparison a user asks for (``posbench-report --compare a,b,c`` / ``--baseline rope``): rows
against a reference row as paired differences of log-perplexity at every evaluated length, with
the report's own paired intervals.

For rows a and b of one panel (protocol, model, train_len) at length L, per seed id s that both have:

    d_s(L) = log ppl_a,s(L) - log ppl_b,s(L)         (nats per token; exp(d) is ppl_a / ppl_b)

The mean over seeds and its 95% interval are ``bootstrap.pair_ratio_stats`` (on the log scale): the
interval of the main table and of ``pairs.csv``, Student's t on the per-seed differences with the
variance of the scored documents added (posbench/report/analysis/bootstrap.py), and the test is
``bootstrap.compare``, the one ``pairs.csv`` reports (documents paired where the weights are the
same, seeds where they differ). The cells are built as the main table builds them
(``bootstrap.panel_text``, ``bootstrap.cell_replicates``), so a pair that ``pairs.csv`` also holds
has the same numbers.

Which pairs: with ``--baseline B``, every named row (``--compare``), or else every unwindowed row,
against B; with ``--compare`` alone, every named row after the first against the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.core.suggest import did_you_mean
from posbench.report.analysis import bootstrap
from posbench.report.analysis.tables import PANEL_KEYS, completed, fmt_multiple, interval_kind, multiples


@dataclass(frozen=True)
class Request:
    """posbench-report's ``--compare`` (row names) and ``--baseline`` (a row name, or None)."""

    rows: tuple[str, ...] = ()
    baseline: str | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.baseline)

    def check(self, names) -> None:
        """Every name is a row of the report: one line naming the first that is not, and the valid ones."""
        valid = sorted(set(names))
        for flag, given in (("--compare", self.rows), ("--baseline", (self.baseline,) if self.baseline else ())):
            for name in given:
                if name not in valid:
                    raise PosbenchError(f"{flag}: no row {name!r} in this report{did_you_mean(name, valid)}; valid: "
                                        + ", ".join(valid))
        if self.rows and not self.baseline and len(self.rows) < 2:
            raise PosbenchError(f"--compare {self.rows[0]} names one row: name two or more (the first is the reference, "
                                "e.g. --compare rope,alibi) or give --baseline")

    def pairs(self, names) -> list[tuple[str, str]]:
        """(row, reference) for the rows present in a panel (``names``)."""
        names = set(names)
        if self.baseline:
            rows = self.rows or tuple(sorted(n for n in names if n != self.baseline))
            return [(a, self.baseline) for a in rows if a != self.baseline and a in names and self.baseline in names]
        ref, *rest = self.rows
        return [(a, ref) for a in rest if a != ref and a in names and ref in names]


def paired_differences(evals: pd.DataFrame, request: Request, token_sets: dict | None = None,
                       replicates: int = bootstrap.REPLICATES) -> pd.DataFrame:
    """One row per (panel, row a, reference b, multiple): ``diff`` = mean over shared seeds of
    log ppl_a - log ppl_b with its 95% interval (``lo``, ``hi``), ``ratio`` = exp(diff), the seeds it
    rests on, what the interval covers, the test and its p-value (``bootstrap.compare``, as
    ``pairs.csv``). Lengths where either row has no perplexity are left out. A ``--baseline`` that
    names no rows compares the unwindowed rows (an evaluation-time window is a control, as in the
    main table's tests)."""
    done = completed(evals)
    all_ms = multiples(evals)
    out = []
    for panel, pg in done.groupby(PANEL_KEYS, sort=True):
        windowed = set(pg.loc[pg["windowed"].fillna(False).astype(bool), "variant"]) if "windowed" in pg else set()
        names = [n for n in pg["variant"].unique() if request.rows or n not in windowed or n == request.baseline]
        pairs = request.pairs(names)
        if not pairs:
            continue
        doc_tokens, draws = bootstrap.panel_text(pg, token_sets or {}, replicates)
        cells = {name: bootstrap.cell_replicates(pg[pg["variant"] == name], all_ms, doc_tokens, draws)
                 for name in {n for pair in pairs for n in pair}}
        for a, b in pairs:
            for k, m in enumerate(all_ms):
                ratio, lo, hi = bootstrap.pair_ratio_stats(cells[a], cells[b], k)
                if not np.isfinite(ratio):
                    continue
                test = bootstrap.compare(cells[a], cells[b], k)
                out.append({**dict(zip(PANEL_KEYS, panel)), "a": a, "b": b, "multiple": float(m),
                            "length": round(panel[2] * m), "diff": math.log(ratio),
                            "lo": math.log(lo) if np.isfinite(lo) else math.nan,
                            "hi": math.log(hi) if np.isfinite(hi) else math.nan, "ratio": ratio,
                            "seeds": test.seeds, "interval": interval_kind(cells[a]) if cells[a].text == cells[b].text
                            else bootstrap.SEEDS_ONLY, "test": test.test, "p_value": test.p, "not_resolvable": test.note})
    return pd.DataFrame(out, columns=[*PANEL_KEYS, "a", "b", "multiple", "length", "diff", "lo", "hi", "ratio", "seeds",
                                      "interval", "test", "p_value", "not_resolvable"])


def label(a: str, b: str) -> str:
    return f"{a} - {b}"


def describe(frame: pd.DataFrame) -> str:
    """The pairs drawn, in words: "alibi - rope, nope - rope at 1x to 16x"."""
    pairs = list(dict.fromkeys(label(a, b) for a, b in zip(frame["a"], frame["b"])))
    ms = sorted(frame["multiple"].unique())
    return f"{', '.join(pairs)} at {fmt_multiple(ms[0])} to {fmt_multiple(ms[-1])}" if ms else ", ".join(pairs)

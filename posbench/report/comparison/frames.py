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

That difference at every length answers "which row is lower there", not "which extrapolates": a row
3% better at every length, 1x included, is lower at 16x with a 16x/1x no different from its
reference's. So each pair also gets the test of extrapolation (``extrapolation_tests``): per shared
seed s, at each multiple m past 1x,

    e_s(m) = [log ppl_a,s(m) - log ppl_a,s(1x)] - [log ppl_b,s(m) - log ppl_b,s(1x)]

(exp(e) is the row's m/1x ratio over the reference's), with the same interval; the summary word
("extrapolates better", "extrapolates worse", "not separable") comes from that test only, and one
shared seed resolves nothing. Two rows are compared only where the comparison means something:
the same scored tokens, the same budget and at least one seed in common (``refusal``): rows named with
``--compare`` are refused in one line, rows that ``--baseline`` alone drew are left out and named.

Which pairs: with ``--baseline B``, every named row (``--compare``), or else every unwindowed row,
against B; with ``--compare`` alone, every named row after the first against the first.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.report.analysis import bootstrap
from posbench.report.analysis.tables import PANEL_KEYS, completed, fmt_multiple, interval_kind, multiples
from posbench.report.records.selection import ComparisonRequest

BETTER, WORSE, NOT_SEPARABLE = "extrapolates better", "extrapolates worse", "not separable"


def refusal(panel: pd.DataFrame, a: str, b: str) -> str | None:
    """Why rows a and b of one panel cannot be compared, in one line (None: they can): they were
    scored on other tokens at some length both have, trained to another budget, or share no seed."""
    ra, rb = panel[panel["variant"] == a], panel[panel["variant"] == b]
    seeds_a, seeds_b = sorted(ra["seed"].unique()), sorted(rb["seed"].unique())
    if not set(seeds_a) & set(seeds_b):
        return (f"`{a}` (seeds {', '.join(map(str, seeds_a))}) and `{b}` (seeds {', '.join(map(str, seeds_b))}) share "
                "no seed: a comparison pairs by seed; train both at the same seeds")
    if "budget_steps" in panel:
        ba, bb = set(ra["budget_steps"].dropna()), set(rb["budget_steps"].dropna())
        if ba and bb and ba != bb:
            return (f"`{a}` was trained for {', '.join(f'{x:g}' for x in sorted(ba))} steps and `{b}` for "
                    f"{', '.join(f'{x:g}' for x in sorted(bb))}: compare rows of one budget (--where train.steps=N)")
    if "token_set" in panel:
        for m in sorted(set(ra["multiple"]) & set(rb["multiple"])):
            sa = set(ra.loc[ra["multiple"] == m, "token_set"].dropna())
            sb = set(rb.loc[rb["multiple"] == m, "token_set"].dropna())
            if sa and sb and sa != sb:
                return (f"`{a}` and `{b}` were scored on other tokens at {fmt_multiple(m)} ({sorted(sa)[0]} against "
                        f"{sorted(sb)[0]}): compare rows scored on the same text")
    return None


def panel_pairs(pg: pd.DataFrame, request: ComparisonRequest) -> list[tuple[str, str]]:
    """The (row, reference) pairs of one panel's records: with ``--compare`` the rows named; with
    ``--baseline`` alone every unwindowed row (an evaluation-time window is a control, as in the main
    table's tests) against the baseline."""
    windowed = set(pg.loc[pg["windowed"].fillna(False).astype(bool), "variant"]) if "windowed" in pg else set()
    names = [n for n in pg["variant"].unique() if request.rows or n not in windowed or n == request.baseline]
    return request.pairs(names)


def refused_pairs(evals: pd.DataFrame, request: ComparisonRequest) -> list[tuple[tuple, str, str, str]]:
    """(panel, row, reference, why) for every pair the request makes that cannot be compared (``refusal``)."""
    out = []
    for panel, pg in completed(evals).groupby(PANEL_KEYS, sort=True):
        out += [(panel, a, b, why) for a, b in panel_pairs(pg, request) if (why := refusal(pg, a, b))]
    return out


def check_pairs(evals: pd.DataFrame, request: ComparisonRequest) -> None:
    """Rows named with ``--compare`` that cannot be compared (``refusal``): PosbenchError naming the first.
    With ``--baseline`` alone the rows were not named: a pair that cannot be compared is left out, and
    the section says so (``refused_pairs``)."""
    if not request.rows:
        return
    for panel, a, b, why in refused_pairs(evals, request):
        flag = "--baseline" if request.baseline else "--compare"
        raise PosbenchError(f"{flag}: cannot compare {a} with {b} ({', '.join(map(str, panel))}): {why}")


def pair_cells(pg: pd.DataFrame, pairs, ms: list[float], token_sets: dict | None, replicates: int) -> dict:
    """Each row of ``pairs`` in one panel as the report's cell (every seed, every multiple of ``ms``), on the
    panel's shared document draws."""
    doc_tokens, draws = bootstrap.panel_text(pg, token_sets or {}, replicates)
    return {name: bootstrap.cell_replicates(pg[pg["variant"] == name], ms, doc_tokens, draws)
            for name in {n for pair in pairs for n in pair}}


def paired_differences(evals: pd.DataFrame, request: ComparisonRequest, token_sets: dict | None = None,
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
        pairs = [(a, b) for a, b in panel_pairs(pg, request) if refusal(pg, a, b) is None]
        if not pairs:
            continue
        cells = pair_cells(pg, pairs, all_ms, token_sets, replicates)
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


def extrapolation_tests(evals: pd.DataFrame, request: ComparisonRequest, token_sets: dict | None = None,
                        replicates: int = bootstrap.REPLICATES) -> pd.DataFrame:
    """One row per (panel, row a, reference b, multiple past 1x): ``factor`` = exp(mean over shared
    seeds of e_s(m)) (module doc: the row's m/1x over the reference's) with its 95% interval, the
    p-value of "no difference in extrapolation", the word, the seeds of each row and the shared
    seeds the test rests on, and, with exactly 2 shared seeds and no word, what a third seed would
    need to show (``third``: the range of its e on the ratio scale for which the three would
    separate the rows in the direction the two point to)."""
    done = completed(evals)
    all_ms = multiples(evals)
    out = []
    for panel, pg in done.groupby(PANEL_KEYS, sort=True):
        pairs = [(a, b) for a, b in panel_pairs(pg, request) if refusal(pg, a, b) is None]
        if not pairs or len(all_ms) < 2 or all_ms[0] != 1.0:
            continue
        cells = pair_cells(pg, pairs, all_ms, token_sets, replicates)
        for a, b in pairs:
            for k, m in enumerate(all_ms[1:], start=1):
                ca, cb = cells[a], cells[b]
                ok_a = {s for i, s in enumerate(ca.seeds) if np.isfinite(ca.observed[i, [0, k]]).all()}
                ok_b = {s for i, s in enumerate(cb.seeds) if np.isfinite(cb.observed[i, [0, k]]).all()}
                if not ok_a or not ok_b:
                    continue
                shared = [s for s in ca.seeds if s in ok_a and s in ok_b]
                pa, pb = (bootstrap.ratio_parts(_only(c, shared), k) for c in (ca, cb))
                change = bootstrap.paired_difference(pa, pb) if shared else bootstrap.NO_CHANGE
                word, third = word_for(change, len(shared)), None
                if len(shared) == 2 and word == NOT_SEPARABLE:
                    third = _third_seed(pa, pb, change)
                out.append({**dict(zip(PANEL_KEYS, panel)), "a": a, "b": b, "multiple": float(m),
                            "factor": change.factor, "lo": change.lo, "hi": change.hi, "p_value": change.p,
                            "word": word, "seeds": len(shared), "shared_seeds": " ".join(map(str, shared)),
                            "seeds_a": len(ok_a), "seeds_b": len(ok_b),
                            "third_lo": third[0] if third else math.nan, "third_hi": third[1] if third else math.nan})
    return pd.DataFrame(out, columns=[*PANEL_KEYS, "a", "b", "multiple", "factor", "lo", "hi", "p_value", "word",
                                      "seeds", "shared_seeds", "seeds_a", "seeds_b", "third_lo", "third_hi"])


def word_for(change: bootstrap.Change, seeds: int) -> str:
    """The word of an extrapolation test: its 95% interval wholly below 1 (better) or above (worse);
    with fewer than 2 shared seeds, not resolvable."""
    if seeds < 2:
        return bootstrap.not_resolvable(seeds)
    if np.isfinite(change.hi) and change.hi < 1:
        return BETTER
    if np.isfinite(change.lo) and change.lo > 1:
        return WORSE
    return NOT_SEPARABLE


def _only(cell: bootstrap.CellReplicates, seeds: list) -> bootstrap.CellReplicates:
    """``cell`` restricted to ``seeds`` (in that order): the test rests on the seeds both rows have."""
    idx = [cell.seeds.index(s) for s in seeds]
    return replace(cell, observed=cell.observed[idx], seeds=tuple(seeds),
                   replicates=None if cell.replicates is None else cell.replicates[:, idx],
                   docs=None if cell.docs is None else cell.docs[idx])


def _third_seed(pa: bootstrap.Parts, pb: bootstrap.Parts, change: bootstrap.Change) -> tuple[float, float] | None:
    """The range of a third seed's row-over-reference ratio of ratios that would separate the rows in
    the direction of the two seeds' mean (``bootstrap.third_seed_range``), on the ratio scale."""
    docs = None  # the difference's per-document parts, whose tails set its text term's degrees of freedom
    if pa.docs is not None and pb.docs is not None and np.array_equal(pa.docs.tokens, pb.docs.tokens):
        docs = bootstrap.Documents(pa.docs.nats - pb.docs.nats, pa.docs.tokens)
    diff = bootstrap.Parts(pa.seeds, pa.y - pb.y, None if pa.reps is None or pb.reps is None else pa.reps - pb.reps,
                           pa.n_docs, docs)
    below = change.factor < 1
    found = bootstrap.third_seed_range(diff, (lambda lo, hi: hi < 0) if below else (lambda lo, hi: lo > 0))
    return None if found is None else (math.exp(found[0]), math.exp(found[1]))


def label(a: str, b: str) -> str:
    return f"{a} - {b}"


def describe_reference(frame: pd.DataFrame) -> str:
    """The pairs drawn, in words: "alibi - rope, nope - rope at 1x to 16x"."""
    pairs = list(dict.fromkeys(label(a, b) for a, b in zip(frame["a"], frame["b"])))
    ms = sorted(frame["multiple"].unique())
    return f"{', '.join(pairs)} at {fmt_multiple(ms[0])} to {fmt_multiple(ms[-1])}" if ms else ", ".join(pairs)

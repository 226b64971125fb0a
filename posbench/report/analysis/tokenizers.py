"""Tokenizers compared: when the runs hold a subword tokenizer's (their model is named
``<model>/<tokenizer>``, e.g. ``small/bpe1024``), whether each encoding's verdict carries over from
bytes to the subword tokenizer, and bits per byte with intervals, the one measure that compares
across tokenizers (docs/protocols.md, "Comparing tokenizers"). Read by the tokenizers section
(posbench/report/sections/tokenizers.py), the map (a row's tokenizer) and scripts/tokenizer_partners.py.

Bits per byte of a row at a length is its mean log-perplexity per token times the tokens per byte of
the scored text over ln 2 (``tokens_scored / (ln 2 * bytes_scored)``). Every seed of a row scores the
same tokens, so that factor is one number per row and length, and the row's interval on
log-perplexity (posbench/report/analysis/bootstrap.py) maps onto bits per byte unchanged in coverage.
"""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.analysis import bootstrap, sweep
from posbench.report.analysis.headline import with_interval
from posbench.report.analysis.verdicts import UNDECIDED, interval_verdict

BYTE = "byte"


def tokenizer_of(model: str) -> str:
    return model.split("/", 1)[1] if "/" in str(model) else BYTE


def base_model(model: str) -> str:
    return str(model).split("/", 1)[0]


def carries_over(reference: str, other: str) -> str:
    """Whether a verdict read on bytes (``reference``) holds under another tokenizer (``other``):
    ``yes`` when both intervals decide the same class, ``no`` when both decide different classes,
    ``undecided`` when either straddles a border (or has no interval)."""
    decided = lambda v: v in ("flat", "mild", "broken")  # noqa: E731
    if not (decided(reference) and decided(other)):
        return UNDECIDED
    return "yes" if reference == other else "no"


def bits_per_byte_factors(evals: pd.DataFrame) -> pd.Series:
    """``tokens_scored / (ln 2 * bytes_scored)`` per (protocol, variant, model, train_len, multiple):
    what turns a mean log-perplexity per token into bits per byte."""
    e = evals[evals["bytes_scored"].fillna(0) > 0]
    f = e["tokens_scored"] / (math.log(2) * e["bytes_scored"])
    return f.groupby([e["protocol"], e["variant"], e["model"], e["train_len"], e["multiple"]]).first()


def bpb_cell(row: pd.Series, col: str, factor: float | None) -> str:
    """``<bpb> [lo, hi]`` at multiple column ``col`` of a main-table row."""
    if factor is None or pd.isna(row.get(col)):
        return ""
    logs = [math.log(row[c]) if pd.notna(row.get(c)) and row[c] > 0 else math.nan for c in (col, f"{col}_lo", f"{col}_hi")]
    return with_interval(*logs, digits=3, scale=factor)


def comparison_table(table: pd.DataFrame, evals: pd.DataFrame) -> pd.DataFrame:
    """One row per (protocol, base model, train_len, encoding) and subword tokenizer: the verdict and
    rank on bytes and under the tokenizer, whether the verdict carries over, and bits per byte at 1x
    and the longest multiple under both. Unwindowed rows only (the controls qualify them)."""
    ratio = next((c for c in table.columns if c.endswith("/1x")), None)
    if ratio is None or table.empty:
        return pd.DataFrame()
    longest = ratio.split("/")[0]
    factors = bits_per_byte_factors(evals)
    unwindowed = table[~table["windowed"].fillna(False).astype(bool)].copy()
    unwindowed["tokenizer"] = unwindowed["model"].map(tokenizer_of)
    unwindowed["base"] = unwindowed["model"].map(base_model)
    keyed = {(r["protocol"], r["base"], r["train_len"], r["variant"], r["tokenizer"]): r for _, r in unwindowed.iterrows()}

    def factor(r, col):
        return factors.get((r["protocol"], r["variant"], r["model"], r["train_len"], float(col[:-1])))

    rows = []
    for (protocol, base, train_len, variant, tok), r in sorted(keyed.items(), key=lambda kv: tuple(map(str, kv[0]))):
        ref = keyed.get((protocol, base, train_len, variant, BYTE))
        if tok == BYTE or ref is None:
            continue
        row = {"protocol": protocol, "model": base, "train_len": train_len, "encoding": variant}
        for name, s in ((BYTE, ref), (tok, r)):
            row[f"{name}: {ratio}"] = with_interval(s[ratio], s[f"{ratio}_lo"], s[f"{ratio}_hi"]) + f" {s['label']}"
            row[f"{name}: rank over lengths"] = f"{s['rank_mean_log_ppl']:g}" if pd.notna(s.get("rank_mean_log_ppl")) else ""
        row["verdict carries over"] = carries_over(ref["verdict"], r["verdict"])
        for col in ("1x", longest):
            for name, s in ((BYTE, ref), (tok, r)):
                row[f"{name}: bits/byte {col}"] = bpb_cell(s, col, factor(s, col))
        rows.append(row)
    return pd.DataFrame(rows)


def _factor(e: bootstrap.Estimate | bootstrap.Change) -> str:
    if isinstance(e, bootstrap.Change):
        return "" if pd.isna(e.factor) else with_interval(e.factor, e.lo, e.hi)
    return "" if pd.isna(e.mean) else with_interval(*(math.exp(v) if pd.notna(v) else math.nan for v in (e.mean, e.lo, e.hi)))


def partners_table(evals: pd.DataFrame, token_sets: dict | None, tolerance: float) -> pd.DataFrame:
    """Every subword row beside both byte partners of the same encoding, where the byte arm was trained
    at several step counts: at the subword arm's steps (**equal steps**) and at the byte arm's largest
    other budget (**equal bytes**: the tokenizers preset gives the byte arm the subword arm's training
    bytes, 1000 steps to 386). The verdict's statistic of each (sweep.row_parts: on equal context where
    rows have a window control) with its interval and class, and the contrast subword / bytes-at-equal-bytes
    split on the log scale into **steps** (bytes at equal steps over bytes at equal bytes) and
    **tokenizer** (subword over bytes at equal steps), each paired by seed (bootstrap.paired_change), with
    the share of the log-gap that steps carry (blank where the gap's interval holds 1: there is no gap to
    split). Empty where no subword row has both partners."""
    parts = sweep.row_parts(evals, token_sets)
    rows = []
    for (protocol, variant, model, train_len, steps), (statistic, sub) in sorted(parts.items(), key=lambda kv: tuple(map(str, kv[0]))):
        tok = tokenizer_of(model)
        if tok == BYTE or variant.endswith("+swaL"):
            continue
        base = base_model(model)
        byte_steps = sorted(k[-1] for k in parts if k[:4] == (protocol, variant, base, train_len))
        others = [b for b in byte_steps if b != steps]
        if steps not in byte_steps or not others:
            continue
        same_steps, same_bytes = parts[(protocol, variant, base, train_len, steps)][1], \
            parts[(protocol, variant, base, train_len, others[-1])][1]
        est = {name: p.estimate() for name, p in (("bytes", same_bytes), ("steps", same_steps), (tok, sub))}
        total = bootstrap.paired_change(same_bytes, sub, 1.0)
        steps_part = bootstrap.paired_change(same_bytes, same_steps, 1.0)
        tok_part = bootstrap.paired_change(same_steps, sub, 1.0)

        def word(e):
            return interval_verdict(*(math.exp(v) if pd.notna(v) else math.nan for v in (e.lo, e.hi, e.mean)), tolerance)
        # a share of a gap the interval does not resolve would be a ratio of two noises: left blank
        share = math.log(steps_part.factor) / math.log(total.factor) if total.moved() else math.nan
        rows.append({"protocol": protocol, "model": base, "train_len": train_len, "encoding": variant, "statistic": statistic,
                     f"bytes, equal bytes ({others[-1]} steps)": f"{_factor(est['bytes'])} {word(est['bytes'])}",
                     f"bytes, equal steps ({steps} steps)": f"{_factor(est['steps'])} {word(est['steps'])}",
                     f"{tok} ({steps} steps)": f"{_factor(est[tok])} {word(est[tok])}",
                     f"{tok} / bytes at equal bytes": _factor(total),
                     "steps part": _factor(steps_part), "tokenizer part": _factor(tok_part),
                     "steps' share of the log-gap": "" if pd.isna(share) else f"{100 * share:.0f}%"})
    return pd.DataFrame(rows)

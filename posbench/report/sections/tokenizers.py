"""Tokenizers compared: when the runs hold a subword tokenizer's (their model is named
``<model>/<tokenizer>``, e.g. ``small/bpe1024``), whether each encoding's verdict carries over from
bytes to the subword tokenizer, and bits per byte with intervals, the one measure that compares
across tokenizers, beside the bytes each length covers (docs/protocols.md, "Comparing tokenizers").

Bits per byte of a row at a length is its mean log-perplexity per token times the tokens per byte of
the scored text over ln 2 (``tokens_scored / (ln 2 * bytes_scored)``). Every seed of a row scores the
same tokens, so that factor is one number per row and length, and the row's interval on
log-perplexity (posbench/report/bootstrap.py) maps onto bits per byte unchanged in coverage.
"""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.document import Heading, Para, Table
from posbench.report.headline import with_interval
from posbench.report.section import SECTIONS, Section
from posbench.report.verdicts import UNDECIDED

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
            row[f"{name}: rank"] = f"{s['rank_mean_log_ppl']:g}" if pd.notna(s.get("rank_mean_log_ppl")) else ""
        row["verdict carries over"] = carries_over(ref["verdict"], r["verdict"])
        for col in ("1x", longest):
            for name, s in ((BYTE, ref), (tok, r)):
                row[f"{name}: bits/byte {col}"] = bpb_cell(s, col, factor(s, col))
        rows.append(row)
    return pd.DataFrame(rows)


@SECTIONS.register("tokenizers")
class Tokenizers(Section):
    order = 25

    def applies(self, ctx) -> bool:
        return ctx.has_lm and "length_bytes" in ctx.evals and any("/" in str(m) for m in ctx.evals["model"].unique())

    def build(self, ctx, out) -> list:
        e = ctx.evals[ctx.evals["bpb"].notna()].copy()
        e["tokenizer"] = e["model"].map(tokenizer_of)
        e["model"] = e["model"].map(base_model)
        keys = ["protocol", "model", "train_len", "variant", "tokenizer", "multiple"]
        g = e.groupby(keys, dropna=False).agg(bpb=("bpb", "mean"), seeds=("seed", "nunique"), length=("length", "first"),
                                               length_bytes=("length_bytes", "mean"),
                                               bytes_scored=("bytes_scored", "first")).reset_index()
        wide = g.pivot_table(index=["protocol", "model", "train_len", "variant", "tokenizer", "seeds", "bytes_scored"],
                             columns="multiple", values="bpb").round(3).reset_index()
        wide.columns = [f"{c:g}x" if isinstance(c, float) else str(c) for c in wide.columns]
        spans = g.groupby(["tokenizer", "train_len", "multiple"])["length_bytes"].mean().reset_index()
        spans["length"] = [f"{m:g}x = {int(t * m)} tokens ~ {b:,.0f} bytes" for t, m, b in
                           zip(spans["train_len"], spans["multiple"], spans["length_bytes"])]
        blocks = [Heading("Tokenizers (bits per byte)")]
        compared = comparison_table(ctx.table, ctx.evals)
        if not compared.empty:
            blocks += [
                Para("Does each verdict carry over from bytes to subwords? Per encoding, its ratio and verdict "
                     "(with far-context use where the row has a window control) and its rank by mean log-perplexity "
                     "within its tokenizer's panel; `verdict carries over`: `yes` when both 95% intervals decide the "
                     "same class, `no` when both decide different classes, `undecided` when either straddles a "
                     "border. Then bits per byte at 1x and the longest length [95% interval over text and seeds]: "
                     "these compare across tokenizers. The ratio is per token: the subword model's longest length "
                     "covers several times the bytes of the byte model's (the last table)."),
                Table(compared),
            ]
        return blocks + [
            Para("Bits per byte (summed loss / (ln 2 x bytes scored)) of every row, mean over seeds. Rows of one "
                 "protocol, model and train_len scored the same bytes whatever their tokenizer (`bytes_scored`), so "
                 "their bits per byte compare; perplexity per token does not (a BPE token carries several bytes), nor "
                 "does a ratio between lengths: train_len and its multiples count tokens, so a BPE model's 16x "
                 "covers several times the text of a byte model's (below)."),
            Table(wide.sort_values(["protocol", "model", "train_len", "variant", "tokenizer"])),
            Para("Bytes a window of each length covers, on average over the scored text:"),
            Table(pd.DataFrame({"tokenizer": spans["tokenizer"], "train_len": spans["train_len"],
                                "length": spans["length"]})),
        ]

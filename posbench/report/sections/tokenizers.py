"""Tokenizers compared: when the runs hold a subword tokenizer's (their model is named
``<model>/<tokenizer>``, e.g. ``small/bpe1024``), whether each encoding's verdict carries over from
bytes to the subword tokenizer, and bits per byte with intervals, beside the bytes each length covers
(docs/protocols.md, "Comparing tokenizers"). The tables are computed in posbench/report/analysis/tokenizers.py.
"""

from __future__ import annotations

import pandas as pd

from posbench.report.analysis.tokenizers import base_model, comparison_table, partners_table, tokenizer_of
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Section

APPROXIMATE = ("Rebuilt from records: a subword row's documents hold their own numbers of tokens, which the records do "
               "not keep (only their sum), so its text resampling weights the documents equally; its perplexities, "
               "ratios and bits per byte are the recorded ones, its intervals approximate.")


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
        if any(info.get("approximate") for info in (ctx.token_sets or {}).values()):
            blocks.append(Para(APPROXIMATE))
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
        partners = partners_table(ctx.budget_evals, ctx.token_sets, ctx.options.tolerance)
        if not partners.empty:
            blocks += [
                Para("Steps or tokenizer? Each subword row beside both byte partners: the byte arm at the subword arm's "
                     "steps (equal steps) and at its own budget (equal bytes). The verdict's statistic of each "
                     "(`statistic`: on equal context where the rows have a window control, else 16x/1x) [95% interval] "
                     "and its class; the contrast of the subword row with the bytes at equal bytes, split on the log "
                     "scale into a `steps part` (bytes at equal steps over bytes at equal bytes: what fewer steps alone "
                     "do) and a `tokenizer part` (subword over bytes at equal steps: what the tokenizer does at the "
                     "same steps), each paired by seed with its interval; `steps' share of the log-gap`: log(steps "
                     "part) / log(subword / bytes at equal bytes), blank where that contrast's interval holds 1."),
                Table(partners),
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

"""Tokenizers compared in bits per byte: when the runs hold a subword tokenizer's (their model is
named ``<model>/<tokenizer>``, e.g. ``small/bpe1024``), the one measure that compares across
tokenizers, beside the bytes each length covers (docs/protocols.md, "Comparing tokenizers")."""

from __future__ import annotations

import pandas as pd

from posbench.report.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Section


def tokenizer_of(model: str) -> str:
    return model.split("/", 1)[1] if "/" in str(model) else "byte"


@SECTIONS.register("tokenizers")
class Tokenizers(Section):
    order = 25

    def applies(self, ctx) -> bool:
        return ctx.has_lm and "length_bytes" in ctx.evals and any("/" in str(m) for m in ctx.evals["model"].unique())

    def build(self, ctx, out) -> list:
        e = ctx.evals[ctx.evals["bpb"].notna()].copy()
        e["tokenizer"] = e["model"].map(tokenizer_of)
        e["model"] = e["model"].map(lambda m: str(m).split("/", 1)[0])
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
        return [
            Heading("Tokenizers (bits per byte)"),
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

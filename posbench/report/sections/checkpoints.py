"""Checkpoints scored by ``posbench-eval-hf`` (docs/checkpoints.md): which checkpoint each such run is, how it
was read (dtype, context length, BOS policy), and the caveat its numbers carry: posbench's default corpora
(the Python standard library's sources, the Python docs) are public text a pretrained model has likely
seen in training, so its perplexity on them is not a held-out number; ``data=local data.path=...`` scores
the user's own text. Shown only when the report holds such runs (their config.yaml has ``checkpoint``)."""

from __future__ import annotations

import pandas as pd

from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Section

PUBLIC_CORPORA = ("stdlib", "pydocs", "wikitext103", "pg19", "enwik8")  # posbench's corpora: public text


def checkpoint_runs(ctx) -> pd.DataFrame:
    """One row per checkpoint run of the report: its config's ``checkpoint`` block and corpus."""
    rows = []
    for run_dir, files in ctx.files.items():
        ckpt = files.config.get("checkpoint")
        if ckpt is None:
            continue
        data = files.config.get("data") or {}
        rows.append({"run": run_dir.rstrip("/").rsplit("/", 1)[-1], "checkpoint": ckpt.get("name"),
                     "model type": ckpt.get("model_type"), "dtype": ckpt.get("dtype"),
                     "context length": files.config.get("train_len"),
                     "BOS": "none" if ckpt.get("bos_token_id") is None else f"{ckpt.get('bos_token_id')} ({ckpt.get('bos')})",
                     "corpus": data.get("name")})
    return pd.DataFrame(rows)


@SECTIONS.register("checkpoints")
class Checkpoints(Section):
    order = 7  # after the headline (5): the caveat qualifies every number below it

    def applies(self, ctx) -> bool:
        return any(f.config.get("checkpoint") is not None for f in ctx.files.values())

    def build(self, ctx, out) -> list:
        runs = checkpoint_runs(ctx)
        blocks = [Heading("Checkpoints"),
                  Para("Runs made by `posbench-eval-hf` from Hugging Face checkpoints, not trained by posbench: one "
                       "\"seed\" each, so their intervals are over the scored text only; `train_len` is the context "
                       "length they were read at; BOS: the token each window starts with (docs/checkpoints.md).")]
        public = sorted(set(runs["corpus"].dropna()) & set(PUBLIC_CORPORA))
        if public:
            blocks.append(Para(
                f"**Caveat:** the scored text ({', '.join(f'`{c}`' for c in public)}) is public, and a pretrained model "
                "has likely seen it, or text very like it, in training: its perplexity here is not a held-out number, "
                "and recalled text flatters long contexts. Compare checkpoints with each other on it; for held-out "
                "numbers score your own text: `posbench-eval-hf CHECKPOINT data=local data.path=DIR`."))
        return blocks + [Table(runs)]

"""Context extension in a report: the rows of extension runs (posbench/extend.py) at their target
length against fine-tuning steps, beside the same encoding trained from scratch at that length.

A row ``rope+yarn@4x+ft100`` is a model trained at train_len, continued for 100 steps at 4 x
train_len with YaRN frequencies; its number here is its perplexity at that target length. The
reference is the plain encoding trained at the target length (a run with train_len = target),
scored on the same tokens; "steps to within 5%" is the fewest fine-tuning steps whose mean
perplexity over seeds comes within the tolerance of it (the PI and YaRN papers' question).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.style import parse_row

KEYS = ["encoding", "method", "model", "train_len", "target"]


def extension_frame(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per extension record at its target length: encoding, method, factor, steps, model,
    train_len, target, seed, token_set, ppl."""
    rows = []
    for r in evals[evals["ppl"].notna()].itertuples():
        ext = parse_row(str(r.variant)).extension
        if ext is None:
            continue
        target = int(round(r.train_len * ext.factor))
        if r.length != target:
            continue
        rows.append({"encoding": ext.encoding, "method": ext.method, "steps": ext.steps,
                     "model": r.model, "train_len": int(r.train_len), "target": target, "seed": r.seed,
                     "token_set": r.token_set, "ppl": r.ppl})
    return pd.DataFrame(rows, columns=[*KEYS, "steps", "seed", "token_set", "ppl"])


def scratch_frame(evals: pd.DataFrame, ext: pd.DataFrame) -> pd.DataFrame:
    """The plain encodings trained at a target length, at that length (their 1x), on the token set
    of the extension rows: encoding, model, target, seed, ppl."""
    if ext.empty:
        return pd.DataFrame(columns=["encoding", "model", "target", "ppl"])
    want = ext[["encoding", "model", "target", "token_set"]].drop_duplicates()
    plain = evals[(evals["variant"] == evals["encoding"]) & (evals["length"] == evals["train_len"]) & evals["ppl"].notna()]
    plain = plain.rename(columns={"train_len": "target"})[["encoding", "model", "target", "token_set", "seed", "ppl"]]
    return plain.merge(want, on=["encoding", "model", "target", "token_set"])


def extension_table(ext: pd.DataFrame, scratch: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Per (encoding, method, model, train_len, target): mean perplexity at the target after each
    number of steps, the from-scratch reference, and the fewest steps within the tolerance of it."""
    means = ext.groupby([*KEYS, "steps"])["ppl"].mean().unstack("steps")
    ref = scratch.groupby(["encoding", "model", "target"])["ppl"].mean()
    out = means.reset_index()
    out.columns = [c if isinstance(c, str) else f"ft {c}" for c in out.columns]
    steps = sorted(ext["steps"].unique())
    out["from scratch"] = [ref.get((e, m, t), np.nan) for e, m, t in zip(out["encoding"], out["model"], out["target"])]
    needed = []
    for _, r in out.iterrows():
        if np.isnan(r["from scratch"]):
            needed.append("no reference")
            continue
        ok = [s for s in steps if r[f"ft {s}"] <= (1 + tolerance) * r["from scratch"]]
        needed.append(str(ok[0]) if ok else f"> {steps[-1]}")
    out[f"steps to within {tolerance:.0%}"] = needed
    return out


def curves(ext: pd.DataFrame) -> pd.DataFrame:
    """Mean perplexity at the target against steps, one series per (encoding, method)."""
    return ext.groupby([*KEYS, "steps"], as_index=False)["ppl"].mean()

"""Context extension in a report: the rows of extension runs (posbench/extend.py) at their target
length against fine-tuning steps, beside the same encoding trained from scratch at that length.

A row ``rope+yarn@4x+ft100`` is a model trained at train_len, continued for 100 steps at 4 x
train_len with YaRN frequencies; its number here is its perplexity at that target length. The
reference is the plain encoding trained at the target length (a run with train_len = target),
scored on the same tokens; "steps to within 5%" is the fewest fine-tuning steps whose mean
perplexity over seeds comes within the tolerance of it (the PI and YaRN papers' question).

The control (``<encoding>@1x+ft<steps>``, method ``continued at train_len``) is the same parent
continued at its own train_len for the same steps and tokens: fine-tuning at any length is also
more training. Its row shows its perplexity at the target length, and every method's row its gain
net of it after s steps, ``1 - ppl_method / ppl_control`` at the target, paired by seed (mean over
seeds with the 95% t-interval).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.stats import ci95_halfwidth
from posbench.report.style import parse_row

KEYS = ["encoding", "method", "model", "train_len", "target"]
CONTROL = "continued at train_len"


def extension_frame(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per extension record at its target length: encoding, method, factor, steps, model,
    train_len, target, seed, token_set, ppl. A control run (continued at train_len) has a record at
    each target length of the other extension runs of its model and train_len."""
    rows, controls = [], []
    for r in evals[evals["ppl"].notna()].itertuples():
        ext = parse_row(str(r.variant)).extension
        if ext is None:
            continue
        row = {"encoding": ext.encoding, "method": ext.method, "steps": ext.steps, "model": r.model,
               "train_len": int(r.train_len), "seed": r.seed, "token_set": r.token_set, "ppl": r.ppl}
        if ext.factor == 1:
            controls.append({**row, "method": CONTROL, "target": int(r.length)})
        elif r.length == int(round(r.train_len * ext.factor)):
            rows.append({**row, "target": int(r.length)})
    targets = {(r["model"], r["train_len"], r["target"]) for r in rows}
    rows += [c for c in controls if (c["model"], c["train_len"], c["target"]) in targets]
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
    net = net_gains(ext)
    for step in steps:
        col = f"net of control ft {step}"
        out[col] = [net.get((*k, step), "") for k in zip(*(out[c] for c in KEYS))]
    return out


def net_gains(ext: pd.DataFrame) -> dict[tuple, str]:
    """Per (encoding, method, model, train_len, target, steps): "-12.3% ± 2.1" = mean over seeds of
    1 - ppl_method / ppl_control at the target after the same steps, with the t-interval's half
    width (a negative gain: the method is worse than continuing at train_len)."""
    control = ext[ext["method"] == CONTROL].set_index(["encoding", "model", "train_len", "target", "steps", "seed"])["ppl"]
    out = {}
    for key, g in ext[ext["method"] != CONTROL].groupby([*KEYS, "steps"]):
        enc, method, model, train_len, target, steps = key
        gains = [1 - r.ppl / control[(enc, model, train_len, target, steps, r.seed)] for r in g.itertuples()
                 if (enc, model, train_len, target, steps, r.seed) in control.index]
        if gains:
            h = ci95_halfwidth(gains)
            out[key] = f"{100 * np.mean(gains):+.1f}%" + ("" if np.isnan(h) else f" ± {100 * h:.1f}")
    return out


def curves(ext: pd.DataFrame) -> pd.DataFrame:
    """Mean perplexity at the target against steps, one series per (encoding, method)."""
    return ext.groupby([*KEYS, "steps"], as_index=False)["ppl"].mean()

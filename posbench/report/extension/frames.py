"""Context extension in a report: the rows of extension runs (posbench/training/extend.py) at their target
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
seeds).

Intervals (95%) are the main table's, over text and seeds (posbench/report/analysis/bootstrap.py): one set
of draws per (model, train_len, target), shared by every row and step count, so that a method and
its control are paired by seed and by document. Records without per-document losses fall back to
seeds alone (t-intervals).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.analysis import bootstrap
from posbench.report.records.rows import parse_row_name

KEYS = ["encoding", "method", "model", "train_len", "target"]
CONTROL = "continued at train_len"


def extension_frame(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per extension record at its target length: encoding, method, factor, steps, model,
    train_len, target, seed, token_set, ppl. A control run (continued at train_len) has a record at
    each target length of the other extension runs of its model and train_len."""
    rows, controls = [], []
    for r in evals[evals["ppl"].notna()].itertuples():
        ext = parse_row_name(str(r.variant)).extension
        if ext is None:
            continue
        row = {"encoding": ext.encoding, "method": ext.method, "steps": ext.steps, "model": r.model,
               "train_len": int(r.train_len), "seed": r.seed, "token_set": r.token_set, "ppl": r.ppl,
               "doc_nats": getattr(r, "doc_nats", None)}
        if ext.factor == 1:
            controls.append({**row, "method": CONTROL, "target": int(r.length)})
        elif r.length == int(round(r.train_len * ext.factor)):
            rows.append({**row, "target": int(r.length)})
    targets = {(r["model"], r["train_len"], r["target"]) for r in rows}
    rows += [c for c in controls if (c["model"], c["train_len"], c["target"]) in targets]
    return pd.DataFrame(rows, columns=[*KEYS, "steps", "seed", "token_set", "ppl", "doc_nats"])


def scratch_frame(evals: pd.DataFrame, ext: pd.DataFrame) -> pd.DataFrame:
    """The plain encodings trained at a target length, at that length (their 1x), on the token set
    of the extension rows: encoding, model, target, seed, ppl."""
    if ext.empty:
        return pd.DataFrame(columns=["encoding", "model", "target", "ppl"])
    want = ext[["encoding", "model", "target", "token_set"]].drop_duplicates()
    plain = evals[(evals["variant"] == evals["encoding"]) & (evals["length"] == evals["train_len"]) & evals["ppl"].notna()]
    plain = plain.rename(columns={"train_len": "target"})[["encoding", "model", "target", "token_set", "seed", "ppl"]]
    return plain.merge(want, on=["encoding", "model", "target", "token_set"])


def extension_table(ext: pd.DataFrame, scratch: pd.DataFrame, tolerance: float, token_sets: dict | None = None,
                    replicates: int = bootstrap.REPLICATES) -> pd.DataFrame:
    """Per (encoding, method, model, train_len, target): mean perplexity at the target after each
    number of steps (``ft <s>``, with ``ft <s>_lo`` / ``_hi``), the from-scratch reference, the fewest
    steps within the tolerance of it, and the gain net of the control (``net of control ft <s>``:
    "+1.2% [0.4, 2.0]"). ``token_sets``: each token set's ``doc_tokens`` (without: seeds only)."""
    cells = _cells(ext, token_sets or {}, replicates)
    steps = sorted(ext["steps"].unique())
    out = []
    for key, g in ext.groupby(KEYS):
        row = dict(zip(KEYS, key))
        for step in steps:
            c = cells.get((*key, step))
            mean, lo, hi = bootstrap.ppl_stats(c, 0) if c is not None else (np.nan,) * 3
            row[f"ft {step}"], row[f"ft {step}_lo"], row[f"ft {step}_hi"] = mean, lo, hi
        out.append(row)
    out = pd.DataFrame(out)
    ref = scratch.groupby(["encoding", "model", "target"])["ppl"].mean()
    out["from scratch"] = [ref.get((e, m, t), np.nan) for e, m, t in zip(out["encoding"], out["model"], out["target"])]
    needed = []
    for _, r in out.iterrows():
        if np.isnan(r["from scratch"]):
            needed.append("no reference")
            continue
        ok = [s for s in steps if r[f"ft {s}"] <= (1 + tolerance) * r["from scratch"]]
        needed.append(str(ok[0]) if ok else f"> {steps[-1]}")
    out[f"steps to within {tolerance:.0%}"] = needed
    for step in steps:
        out[f"net of control ft {step}"] = [
            net_gain(cells.get((*k, step)), cells.get((k[0], CONTROL, *k[2:], step))) if k[1] != CONTROL else ""
            for k in zip(*(out[c] for c in KEYS))]
    return out


def _cells(ext: pd.DataFrame, token_sets: dict, replicates: int) -> dict[tuple, bootstrap.CellReplicates]:
    """The bootstrap cell of every (encoding, method, model, train_len, target, steps): its records at
    the target (one per seed), drawn with the draws of its (model, train_len, target) panel."""
    out = {}
    for (model, train_len, target), panel in ext.groupby(["model", "train_len", "target"]):
        doc_tokens, draws = bootstrap.panel_text(panel, token_sets, replicates)
        for key, g in panel.groupby([*KEYS, "steps"]):
            out[key] = bootstrap.cell_replicates(g, [target], doc_tokens, draws, by="target")
    return out


def net_gain(method: bootstrap.CellReplicates | None, control: bootstrap.CellReplicates | None) -> str:
    """"+12.3% [9.8, 14.9]": 1 - ppl_method / ppl_control at the target after the same steps (geometric
    means over the seeds both have, paired by seed id), with its 95% interval over text and seeds
    (bootstrap.pair_ratio_stats: different weights, so the seeds are the unit); a negative gain: the
    method is worse than continuing at train_len. "" without a control or a seed in common."""
    if method is None or control is None:
        return ""
    ratio, lo, hi = bootstrap.pair_ratio_stats(method, control, 0)
    if np.isnan(ratio):
        return ""
    return f"{100 * (1 - ratio):+.1f}%" + ("" if np.isnan(lo) else f" [{100 * (1 - hi):+.1f}, {100 * (1 - lo):+.1f}]")


def display_extension_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the report prints it: each ``ft <s>`` as "mean [lo, hi]"."""
    shown = table[[c for c in table.columns if not c.endswith(("_lo", "_hi"))]].copy()
    for c in [c for c in shown.columns if c.startswith("ft ")]:
        shown[c] = ["" if np.isnan(m) else f"{m:.2f}" + ("" if np.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]")
                    for m, lo, hi in zip(table[c], table[f"{c}_lo"], table[f"{c}_hi"])]
    shown["from scratch"] = ["" if np.isnan(v) else f"{v:.2f}" for v in table["from scratch"]]
    return shown


def curves(ext: pd.DataFrame) -> pd.DataFrame:
    """Mean perplexity at the target against steps, one series per (encoding, method)."""
    return ext.groupby([*KEYS, "steps"], as_index=False)["ppl"].mean()

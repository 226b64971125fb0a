"""Tuned extenders on equal budgets: each RoPE scaling at its default and at its tuned setting, with the
sensitivity band of its search (the ``tuned`` rows, posbench/evaluation/variants/tuned.py).

For every scored record of a ``+tuned`` row past train_len (its ``fit.tuned``: the searched settings and
their held-out losses on the training split), the table pairs it with the default row of the same run,
protocol and length (the row's name without ``+tuned...``: ``rope+yarn@16x+tuned`` -> ``rope+yarn@16x``):

    default_ppl, tuned_ppl            the scored perplexities (the validation text)
    default_heldout, tuned_heldout    the held-out loss (nats per token, training split) of the default and
                                      of the chosen setting
    band_lo, band_hi                  the held-out loss over every searched setting: the sensitivity band
    chosen                            the chosen setting, as text

``tuned_markdown`` renders the per-run rows averaged over seeds (runs of one model and encoding), one line
per tuned row, protocol and multiple. Reads the evaluation frame of posbench/report/load.py (``evals``, whose
records keep their ``fit``), nothing else.
"""

from __future__ import annotations

import math
import re

import pandas as pd

TUNED_SUFFIX = re.compile(r"\+tuned\d*(-[a-z]+)?$")
COLUMNS = ["run_id", "variant", "default", "protocol", "multiple", "scaling", "objective", "budget", "evaluations",
           "default_ppl", "tuned_ppl", "default_heldout", "tuned_heldout", "band_lo", "band_hi", "chosen"]


def default_row(name: str) -> str:
    """The default row of a tuned row: ``rope+yarn@16x+tuned8-needle`` -> ``rope+yarn@16x``."""
    return TUNED_SUFFIX.sub("", name)


def _setting_text(setting: dict) -> str:
    if "long_factor" in setting:
        f = setting["long_factor"]
        return f"factors {f[0]:.2f}..{f[-1]:.2f}"
    return ", ".join(f"{k} {v:g}" for k, v in setting.items())


def tuned_frame(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per scored record of a tuned row that carries its search, beside its default row's score."""
    if evals.empty or "fit" not in evals.columns:
        return pd.DataFrame(columns=COLUMNS)
    key = ["run_id", "protocol", "length"]
    ppl = {(r.run_id, r.variant, r.protocol, r.length): r.ppl for r in evals[key + ["variant", "ppl"]].itertuples()}
    out = []
    for r in evals.itertuples():
        fit = r.fit.get("tuned") if isinstance(r.fit, dict) else None
        if fit is None:
            continue
        default = default_row(r.variant)
        default_ppl = ppl.get((r.run_id, default, r.protocol, r.length))
        losses = [s["heldout_loss"] for s in fit["searched"]]
        out.append({"run_id": r.run_id, "variant": r.variant, "default": default, "protocol": r.protocol,
                    "multiple": r.multiple, "scaling": fit["scaling"], "objective": fit.get("objective", "loss"),
                    "budget": fit["budget"], "evaluations": fit["evaluations"],
                    "default_ppl": math.nan if default_ppl is None else float(default_ppl),
                    "tuned_ppl": math.nan if r.ppl is None else float(r.ppl),
                    "default_heldout": fit["default_loss"], "tuned_heldout": fit["chosen_loss"],
                    "band_lo": min(losses), "band_hi": max(losses), "chosen": _setting_text(fit["chosen"])})
    return pd.DataFrame(out, columns=COLUMNS)


def tuned_markdown(frame: pd.DataFrame) -> str:
    """The table: default and tuned perplexity (mean over runs), the held-out losses and the band."""
    if frame.empty:
        return ""
    numeric = ["default_ppl", "tuned_ppl", "default_heldout", "tuned_heldout", "band_lo", "band_hi"]
    g = frame.groupby(["variant", "default", "protocol", "multiple", "evaluations"], sort=True)
    agg = g[numeric].mean().reset_index()
    runs, chosen = g["run_id"].nunique().values, g["chosen"].agg(lambda c: c.iloc[0] if c.nunique() == 1 else "varies").values
    lines = ["| row | default row | protocol | multiple | runs | evaluations | ppl default -> tuned | "
             "held-out loss default -> tuned | band (held-out, over the searched) | chosen |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for a, n, c in zip(agg.itertuples(), runs, chosen):
        d = "n/d" if math.isnan(a.default_ppl) else f"{a.default_ppl:.3f}"
        lines.append(f"| `{a.variant}` | `{a.default}` | {a.protocol} | {a.multiple:g}x | {n} | {a.evaluations} | "
                     f"{d} -> {a.tuned_ppl:.3f} | {a.default_heldout:.4f} -> {a.tuned_heldout:.4f} | "
                     f"{a.band_lo:.4f}-{a.band_hi:.4f} | {c} |")
    return "\n".join(lines) + "\n"

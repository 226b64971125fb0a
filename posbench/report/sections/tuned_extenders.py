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

``tuned_table`` averages the per-run rows over seeds (runs of one model and encoding), one line per tuned
row, protocol and multiple. Reads the evaluation frame of posbench/report/records/load.py (``evals``, whose
records keep their ``fit``), nothing else. The section is shown where a report holds tuned rows.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section

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


def tuned_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The table: one line per tuned row, protocol and multiple, its runs averaged: default and tuned
    perplexity, the held-out losses of the default and the chosen setting, and the band over the searched."""
    if frame.empty:
        return pd.DataFrame()
    numeric = ["default_ppl", "tuned_ppl", "default_heldout", "tuned_heldout", "band_lo", "band_hi"]
    g = frame.groupby(["variant", "default", "protocol", "multiple", "evaluations"], sort=True)
    agg = g[numeric].mean().reset_index()
    runs, chosen = g["run_id"].nunique().values, g["chosen"].agg(lambda c: c.iloc[0] if c.nunique() == 1 else "varies").values
    return pd.DataFrame({
        "row": agg["variant"], "default row": agg["default"], "protocol": agg["protocol"],
        "multiple": [f"{m:g}x" for m in agg["multiple"]], "runs": runs, "evaluations": agg["evaluations"],
        "ppl default -> tuned": [f"{'n/d' if math.isnan(d) else f'{d:.3f}'} -> {t:.3f}"
                                 for d, t in zip(agg["default_ppl"], agg["tuned_ppl"])],
        "held-out loss default -> tuned": [f"{d:.4f} -> {t:.4f}" for d, t in zip(agg["default_heldout"], agg["tuned_heldout"])],
        "band (held-out, over the searched)": [f"{lo:.4f}-{hi:.4f}" for lo, hi in zip(agg["band_lo"], agg["band_hi"])],
        "chosen": chosen})


@SECTIONS.register("tuned_extenders")
class TunedExtenders(Section):
    order = 51  # after context extension (50): the same RoPE scalings, tuned at evaluation
    files = (Output("tuned_extenders.csv", "per scored record of a tuned row past train_len: its default row's "
                    "perplexity, the held-out losses of the default and the chosen setting, the band, the setting"),)

    def applies(self, ctx) -> bool:
        return not tuned_frame(ctx.evals).empty

    def build(self, ctx, out) -> list:
        frame = tuned_frame(ctx.evals)
        out.csv("tuned_extenders.csv", frame)
        return [Heading("Tuned extenders on equal budgets"),
                Para("Each `+tuned` row is its RoPE scaling with the setting that gave the lowest held-out loss among "
                     "`evaluations` settings searched at that length, the default first, on windows of the training "
                     "split, never the scored text (posbench/evaluation/variants/tuned.py). Beside it: its default "
                     "row's perplexity, the held-out losses of the default and the chosen setting (nats per token of "
                     "the row's objective: every token, or a passkey's digits for `-needle` rows), and the band of "
                     "held-out losses over every searched setting (how much the setting matters). Each method gets "
                     "the same number of evaluations. Files: `tuned_extenders.csv`."),
                Table(tuned_table(frame))]

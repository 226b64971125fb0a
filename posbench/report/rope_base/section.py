"""RoPE's base against the theories that predict where its extrapolation breaks: for each row trained at a
RoPE base (runs at several bases: experiment=rope_base; report/records/load.py names each base in its model), the
length at which its perplexity starts to climb, measured, beside what Liu et al. 2023 and Men et al. 2024
predict from the base, the head dimension and the training length (posbench/report/rope_base/theory.py).

**Measured onset.** At every multiple M past 1x the main table is read at M (report/analysis/tables.py,
``multiple=M``: the verdict statistic on equal context, M x train_len against the lower of 1x and the
window control at M, with its 95% interval over text and seeds, and its class). The onset is the first M
whose class is mild or broken; it lies in (the last flat multiple before it, M]. An undecided multiple
before any onset leaves the onset not resolved; a row flat at every multiple has none up to the longest.

**Predictions** (multiples of train_len): Liu et al.'s extrapolation limit T_extra (their critical dimension:
the rotary pairs whose period the training length covers) and Men et al.'s longest context the base
supports (their long-term-decay sum B_{m, theta} >= 0 for every distance up to it). Men et al.'s bound is
about retrieval: a model past it can keep a low perplexity while it cannot retrieve ("superficial"
long-context ability); perplexity alone cannot show that, so its comparison with the perplexity onset is
indicative. Passkey runs trained at several bases test it where it speaks (posbench/report/rope_base/
retrieval.py: each grid cell's needle distance within or beyond the bound). Plain RoPE only: p-RoPE (a
quarter of the frequencies removed) is outside both theories and its rows are shown without a prediction.

**Words** (per row and theory): *inside* where the prediction falls in the measured bracket; *earlier
than measured* where it falls at or before the last flat multiple (the model stays flat past it); *later
than measured* where it falls after the onset; *cannot be told* where the onset is not resolved.
"""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.analysis.tables import main_table
from posbench.report.analysis import sweep
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.records.load import base_of, base_text
from posbench.report.rope_base import retrieval
from posbench.report.rope_base.theory import head_dim_of, liu_extrapolation_limit, men_supported_length
from posbench.report.section import SECTIONS, Output, Section

THEORY_ENCODINGS = ("rope",)  # the theories are about plain RoPE's frequencies
ONSET = ("mild", "broken")
INSIDE, EARLIER, LATER, UNTOLD = "inside", "earlier than measured", "later than measured", "cannot be told"


def multiples_past_1x(evals: pd.DataFrame) -> list[float]:
    return sorted(m for m in evals["multiple"].dropna().unique() if float(m) > 1)


def at_multiples(ctx) -> pd.DataFrame:
    """One row per unwindowed row with a RoPE base x multiple past 1x: the verdict statistic at that
    multiple (``stat``, ``stat_lo``, ``stat_hi``: on equal context where the row has the window control,
    else M/1x) and its class (``verdict``)."""
    rows = []
    for m in multiples_past_1x(ctx.evals):
        # the verdict's own multiple is the report's main table, computed once for every section
        table = ctx.table if m == ctx.multiple else main_table(ctx.evals, ctx.options.tolerance, ctx.token_sets, multiple=m)
        ratio = f"{m:g}x/1x"
        for _, r in table[~table["windowed"].astype(bool)].iterrows():
            plain, base = base_of(r["model"])
            if base is None:
                continue
            equal = pd.notna(r.get("equal_ctx"))
            col = "equal_ctx" if equal else ratio
            rows.append({"protocol": r["protocol"], "variant": r["variant"], "model": plain, "rope_base": base,
                         "label": r["model"], "train_len": int(r["train_len"]), "multiple": float(m),
                         "seeds": r.get("seeds"), "stat": r.get(col), "stat_lo": r.get(f"{col}_lo"),
                         "stat_hi": r.get(f"{col}_hi"), "verdict": sweep.verdict_class(r.get("verdict")),
                         "basis": "equal context" if equal else ratio})
    return pd.DataFrame(rows)


def onset(steps: pd.DataFrame) -> dict:
    """A row's measured onset from its multiples (ascending): {last_flat, onset, resolved, at}."""
    last_flat = 1.0
    for _, s in steps.sort_values("multiple").iterrows():
        if s["verdict"] in ONSET:
            return {"last_flat": last_flat, "onset": s["multiple"], "resolved": True, "at": s}
        if s["verdict"] != "flat":
            return {"last_flat": last_flat, "onset": math.nan, "resolved": False, "at": s}
        last_flat = s["multiple"]
    return {"last_flat": last_flat, "onset": math.inf, "resolved": True, "at": None}


def word(predicted: float, measured: dict) -> str:
    """Where a predicted multiple falls against the measured bracket (last flat, onset]."""
    if not measured["resolved"] or math.isnan(predicted):
        return UNTOLD
    if predicted <= measured["last_flat"]:
        return EARLIER
    if predicted > measured["onset"]:
        return LATER
    return INSIDE


def head_dim(ctx, label: str, train_len: int) -> int | None:
    """d_model / n_heads of the runs of a cell (their configs)."""
    runs = ctx.completed[(ctx.completed["model"] == label) & (ctx.completed["train_len"] == train_len)]
    for d in runs["run_dir"]:
        cfg = ctx.configs.get(d)
        if cfg is not None and cfg.get("model") is not None:
            return head_dim_of(cfg)
    return None


def theory_frame(ctx) -> pd.DataFrame:
    """One row per (protocol, variant, RoPE base, train_len): the measured onset and each theory's
    prediction with its word (the module doc)."""
    steps = at_multiples(ctx)
    if steps.empty:
        return pd.DataFrame()
    rows = []
    for (protocol, variant, label, train_len), g in steps.groupby(["protocol", "variant", "label", "train_len"]):
        measured, base = onset(g), float(g["rope_base"].iloc[0])
        d = head_dim(ctx, label, train_len)
        theory = variant in THEORY_ENCODINGS and d is not None
        liu = liu_extrapolation_limit(d, base, train_len) / train_len if theory else math.nan
        cap = 64 * train_len  # the bound past 64x is no prediction about lengths scored up to 16x
        supported = men_supported_length(d, base, max_len=cap) if theory else math.nan
        men = math.inf if supported == cap else supported / train_len
        at = measured["at"]
        rows.append({"protocol": protocol, "variant": variant, "model": g["model"].iloc[0], "rope_base": base,
                     "train_len": train_len, "d_head": d, "seeds": g["seeds"].max(),
                     "last_flat": measured["last_flat"], "onset": measured["onset"], "resolved": measured["resolved"],
                     "onset_stat": None if at is None else at["stat"],
                     "onset_stat_lo": None if at is None else at["stat_lo"],
                     "onset_stat_hi": None if at is None else at["stat_hi"],
                     "onset_verdict": None if at is None else at["verdict"],
                     "liu_multiple": liu, "liu_word": word(liu, measured) if theory else "",
                     "men_multiple": men, "men_word": word(men, measured) if theory else ""})
    return pd.DataFrame(rows).sort_values(["protocol", "variant", "train_len", "rope_base"], kind="stable")


def _multiple(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "none up to 64x" if math.isinf(v) else f"{v:.2f}x"


def _bracket(r) -> str:
    if not r["resolved"]:
        return f"not resolved (flat to {r['last_flat']:g}x, then {r['onset_verdict']})"
    if math.isinf(r["onset"]):
        return f"none: flat to {r['last_flat']:g}x"
    stat = f"{r['onset_stat']:.2f} [{r['onset_stat_lo']:.2f}, {r['onset_stat_hi']:.2f}]" if pd.notna(r["onset_stat_lo"]) \
        else f"{r['onset_stat']:.2f}"
    return f"({r['last_flat']:g}x, {r['onset']:g}x]: {r['onset_verdict']} {stat} at {r['onset']:g}x"


@SECTIONS.register("rope_base")
class RopeBase(Section):
    order = 44  # after the map (43), whose base axis it reads against the theories
    files = (Output("rope_base.csv", "per row at a RoPE base: the measured onset of its perplexity's climb and "
                                     "Liu et al.'s and Men et al.'s predictions, with the words"),
             Output("rope_base_passkey.csv", "with passkey runs at several RoPE bases: per base and grid cell the "
                                             "needle's distance against Men et al.'s bound and the exact match"),
             Output("rope_base_passkey_words.csv", "per base: the cells beyond Men et al.'s bound and the word"))

    def applies(self, ctx) -> bool:
        # every completed run: with LM runs in the report ctx.completed holds those alone, not the passkey runs
        at_bases = ctx.all_completed["model"].map(lambda m: base_of(m)[1] is not None).any()
        return bool(at_bases and ((ctx.has_lm and ctx.ratio_column is not None) or not ctx.task_records.empty))

    def build(self, ctx, out) -> list:
        frame = theory_frame(ctx) if ctx.has_lm and ctx.ratio_column is not None else pd.DataFrame()
        blocks = self._perplexity(frame, out) if not frame.empty else []
        cells = retrieval.passkey_cells(ctx.task_records, ctx.configs, ctx.all_completed)
        if not cells.empty:
            if not blocks:
                blocks.append(Heading("RoPE's base against the theories"))
            blocks += _retrieval_blocks(cells, out)
        return blocks

    def _perplexity(self, frame: pd.DataFrame, out) -> list:
        out.csv("rope_base.csv", frame)
        shown = pd.DataFrame({
            "row": frame["variant"], "base": frame["rope_base"].map(base_text),
            "train_len": frame["train_len"],
            "seeds": frame["seeds"], "measured onset": [_bracket(r) for _, r in frame.iterrows()],
            "Liu et al. T_extra": [f"{_multiple(r['liu_multiple'])} {r['liu_word']}".strip() for _, r in frame.iterrows()],
            "Men et al. bound": [f"{_multiple(r['men_multiple'])} {r['men_word']}".strip() for _, r in frame.iterrows()]})
        theory = frame[frame["liu_word"] != ""]
        counts = {t: theory[f"{t}_word"].value_counts().to_dict() for t in ("liu", "men")}

        def said(t: str) -> str:
            c = counts[t]
            return ", ".join(f"{n} {w}" for w, n in sorted(c.items(), key=lambda x: -x[1])) or "no row"
        return [Heading("RoPE's base against the theories"),
                Para("Each row trained at a RoPE base: where its perplexity starts to climb, measured at every multiple "
                     "past 1x on equal context (the first multiple whose class is mild or broken, after the last flat "
                     "one), beside the length Liu et al. 2023 (arXiv 2310.05209: the critical dimension's extrapolation "
                     "limit T_extra) and Men et al. 2024 (arXiv 2405.14591: the longest context the base supports, "
                     "from its long-term decay) predict from the base, the head dimension and train_len, as multiples "
                     "of train_len (posbench/report/rope_base/theory.py has the formulas, sources and deviations). "
                     "Men et al.'s bound is about retrieval, so its comparison with the perplexity onset is indicative "
                     "only (passkey runs trained at several bases test it directly: their table in this section). "
                     "p-RoPE is outside both theories."),
                Para(f"Liu et al.'s prediction: {said('liu')}; Men et al.'s: {said('men')} (rows of plain RoPE; "
                     "the measured bracket is as coarse as the multiples scored)."),
                Table(shown.reset_index(drop=True))]


def _retrieval_blocks(cells: pd.DataFrame, out) -> list:
    """Men et al.'s bound against passkey retrieval (posbench/report/rope_base/retrieval.py)."""
    words = retrieval.verdicts(cells)
    out.csv("rope_base_passkey.csv", cells.assign(retrieved_by=cells["retrieved_by"].map(_seeds),
                                                  failed_by=cells["failed_by"].map(_seeds)))
    out.csv("rope_base_passkey_words.csv", words)
    shown = pd.DataFrame({
        "base": cells["rope_base"].map(base_text), "train_len": cells["train_len"],
        "length": [f"{L} ({m:g}x)" for L, m in zip(cells["length"], cells["multiple"])], "depth": cells["depth"],
        "distance": cells["distance"],
        "Men et al. bound": [f"none up to {b}" if c else str(b) for b, c in zip(cells["bound"], cells["bound_capped"])],
        "where": ["beyond" if b else "within" for b in cells["beyond"]],
        "exact match [95%]": [f"{a:.2f} [{lo:.2f}, {hi:.2f}]" for a, lo, hi in zip(cells["accuracy"], cells["lo"], cells["hi"])],
        "seeds retrieving": [f"{len(r)} of {n}" for r, n in zip(cells["retrieved_by"], cells["seeds"])]})
    said = []
    for _, r in words.iterrows():
        bound = f"no bound up to {r['bound']} tokens" if r["bound_capped"] else f"bound {r['bound']} tokens"
        text = f"base {base_text(r['rope_base'])} at train_len {r['train_len']} ({bound}, m = {r['tests']}): **{r['word']}**"
        if r["word"] == retrieval.CONTRADICTED:
            text += (f" ({r['beyond_retrieved']} of {r['cells_beyond']} cells beyond the bound retrieved by some seed, "
                     f"the farthest {int(r['farthest_retrieved'])} tokens back)")
        elif r["word"] == retrieval.CONSISTENT:
            text += (f" ({r['seeds_superficial']} of the {_count(r['seeds_learned_at_1x'], 'seed')} that retrieve within "
                     "the bound at train_len fail beyond it there)")
        else:
            text += (f" ({_count(r['cells_beyond_at_1x'], 'cell')} beyond the bound at train_len, "
                     f"{_count(r['seeds_learned_at_1x'], 'seed')} retrieving within it there)")
        said.append(text)
    return [Para("**Men et al.'s bound against retrieval** (passkey runs trained at these bases; "
                 "posbench/report/rope_base/retrieval.py): each cell of the passkey grid has a distance from the question "
                 "back to the needle, in tokens; Men et al. say no model of a base retrieves past the base's bound. One "
                 "model is the unit of evidence: a seed retrieves a cell where its exact (Clopper-Pearson) interval over the "
                 "cell's examples lies above halfway from chance to 100%, and fails it where the interval lies below; each "
                 "such interval is Bonferroni-corrected over its row's tests, one per cell and seed (m of them: level "
                 "1 - 0.05/m), so that the retrieves and fails a row's word rests on are all right with probability at "
                 "least 95% (at the price of missing a weak retrieval). The table's `exact match [95%]` is the cell's mean "
                 "over seeds with its uncorrected interval over examples and seeds; `seeds retrieving` counts the corrected "
                 "tests. A cell beyond the bound that some seed retrieves contradicts "
                 "the bound; a seed that retrieves within it at train_len and fails beyond it there is Men et al.'s "
                 "\"superficial\" case; a failure within the bound says nothing about it. " + "; ".join(said) + "."),
            Table(shown)]


def _seeds(seeds: list) -> str:
    return " ".join(str(s) for s in seeds)


def _count(n: int, noun: str) -> str:
    return f"{int(n)} {noun}" + ("" if int(n) == 1 else "s")

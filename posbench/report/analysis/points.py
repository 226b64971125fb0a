"""The map's points and lines: where each main-table row sits on every axis, and the rows that move
one setting at a time.

A main-table row (protocol, variant, model, train_len; report/analysis/tables.py) is a point with
coordinates: its training length, its model's size (the size's name, ordered by its parameters),
its corpus (the ``@<corpus>`` part of the model's name: report/records/load.py names the corpus where the
runs hold more than one), its tokenizer (the ``/<tokenizer>`` part; bytes without), its RoPE base (the
``|base=<b>`` part, where the runs were trained at more than one: experiment=rope_base) and its layer
pattern (``model.mixers``: ``attention``, or e.g. ``gdn-gdn-gdn-attention``), which every line holds
fixed and which is no axis: a pure Gated DeltaNet model and a 3 : 1 hybrid of the same width are
different architectures, not two sizes of one. A **line**
along an axis is the points of one protocol and row that agree on every other coordinate; an axis
is **spanned** where some line has two or more points. Along a line the verdict's statistic (on
equal context where the row has a window control: ``basis``; else its M/1x ratio) is compared
between consecutive points (report/analysis/axis.py: per doubling of the training length or of the
parameters; per step between categories), paired by seed where the points share seeds, else unpaired.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from posbench.report.analysis import sweep

from posbench.report.analysis import axis, bootstrap
from posbench.report.records.load import base_of, base_text, corpus_of
from posbench.report.analysis.tokenizers import BYTE
from posbench.report.analysis.tables import EQUAL_CONTEXT

TRAIN_LEN, SIZE, CORPUS, TOKENIZER, PATTERN = "train_len", "size", "corpus", "tokenizer", "pattern"
ROPE_BASE = "rope_base"
AXES = (TRAIN_LEN, SIZE, CORPUS, TOKENIZER, ROPE_BASE)
# an axis measured in a number: its changes are per doubling
NUMERIC = {TRAIN_LEN: "train_len", SIZE: "params", ROPE_BASE: "rope_base"}
AXIS_NAMES = {TRAIN_LEN: "training length", SIZE: "model size (parameters)", CORPUS: "corpus", TOKENIZER: "tokenizer",
              ROPE_BASE: "RoPE base"}
COORDS = ["protocol", "variant", SIZE, CORPUS, TOKENIZER, ROPE_BASE, TRAIN_LEN, PATTERN]
NO_BASE = "-"  # a model label that names no RoPE base (report/records/load.py with_base_labels: one base, or none)
PLAIN = "attention"  # the layer pattern of a model with attention in every layer (the default)
DEFAULT_CORPUS = "-"  # the runs were trained on one corpus (its name is not in the model's)


def coordinates(model: str) -> tuple[str, str, str]:
    """(size, corpus, tokenizer) of a model's name ``<size>[|base=<b>][@<corpus>][/<tokenizer>]``."""
    plain, _ = base_of(model)
    base, _, tokenizer = plain.partition("/")
    return base.split("@", 1)[0], corpus_of(plain) or DEFAULT_CORPUS, tokenizer or BYTE


def rope_base(model: str) -> str:
    """The RoPE base a model's name carries, as text ("500", "1000000"), or NO_BASE: one column of text, so
    that rows with and without a base group and sort together (axis_value reads the number)."""
    _, base = base_of(model)
    return NO_BASE if base is None else base_text(base)


def approx_params(model: dict) -> float:
    """A decoder's parameters from its settings, for runs whose count was not recorded (a report rebuilt
    from its records keeps configs, not metrics): attention 4 d^2 and MLP 2 r d^2 per layer, embeddings
    and head 2 V d (V: 256 bytes where not set). Within 10% of the recorded counts of tiny, small and base;
    the size axis needs only their order and ratios."""
    d, layers = float(model.get("d_model") or math.nan), float(model.get("n_layers") or math.nan)
    ratio, vocab = float(model.get("mlp_ratio") or 4), float(model.get("vocab_size") or 256)
    return layers * (4 + 2 * ratio) * d * d + 2 * vocab * d


def pattern_of(model: dict) -> str:
    """A model's layer pattern from its settings: its ``mixers`` joined by ``-`` (PLAIN where unset)."""
    mixers = model.get("mixers") or [PLAIN]
    return "-".join(str(m) for m in mixers)


def with_params(runs: pd.DataFrame, configs: dict) -> pd.DataFrame:
    """``runs`` with ``params`` filled from each run's config where not recorded (approx_params), and
    each run's layer ``pattern`` (pattern_of)."""
    recorded = pd.to_numeric(runs["params"], errors="coerce") if "params" in runs else pd.Series(math.nan, index=runs.index)
    models = [dict((configs.get(d) or {}).get("model") or {}) for d in runs.get("run_dir", [None] * len(runs))]
    return runs.assign(params=recorded.fillna(pd.Series([approx_params(m) for m in models], index=runs.index)),
                       pattern=[pattern_of(m) for m in models])


def points(table: pd.DataFrame, runs: pd.DataFrame, ratio: str) -> pd.DataFrame:
    """One row per unwindowed main-table row (``table``: the main table, at each row's largest budget):
    its coordinates (COORDS), ``model``, ``params`` (its runs' mean), ``budget_steps`` where the runs
    have budgets, ``seeds``, the verdict (``verdict``: its class; ``label``), ``basis`` (EQUAL_CONTEXT
    or ``ratio``), the verdict statistic ``stat`` with ``stat_lo`` / ``stat_hi`` (95%), and the perplexity
    at the training length (the main table's 1x) ``ppl_1x`` with ``ppl_1x_lo`` / ``ppl_1x_hi``: a ratio
    that falls along an axis because its baseline got worse is not better extrapolation, so the
    baseline stands beside it."""
    if table.empty:
        return pd.DataFrame(columns=COORDS + ["model", "params", "seeds", "verdict", "basis", "stat"])
    plain = table[~table["windowed"].astype(bool)] if "windowed" in table else table
    params = runs.groupby(["model", "train_len"])["params"].mean() if "params" in runs else pd.Series(dtype=float)
    patterns = runs.groupby(["model", "train_len"])["pattern"].first() if "pattern" in runs else pd.Series(dtype=object)
    rows = []
    for _, r in plain.iterrows():
        size, corpus, tokenizer = coordinates(r["model"])
        equal = r.get("verdict_basis") == EQUAL_CONTEXT and pd.notna(r.get("equal_ctx"))
        col = "equal_ctx" if equal else ratio
        rows.append({"protocol": r["protocol"], "variant": r["variant"], SIZE: size, CORPUS: corpus,
                     TOKENIZER: tokenizer, ROPE_BASE: rope_base(r["model"]), TRAIN_LEN: int(r["train_len"]),
                     PATTERN: patterns.get((r["model"], r["train_len"]), PLAIN), "model": r["model"],
                     "params": float(params.get((r["model"], r["train_len"]), math.nan)),
                     **({sweep.BUDGET: r[sweep.BUDGET]} if sweep.BUDGET in r else {}),
                     "seeds": r.get("seeds"), "verdict": sweep.verdict_class(r.get("verdict")),
                     "label": r.get("label", r.get("verdict")), "basis": EQUAL_CONTEXT if equal else ratio,
                     "stat": r[col], "stat_lo": r.get(f"{col}_lo"), "stat_hi": r.get(f"{col}_hi"),
                     "ppl_1x": r.get("1x", math.nan), "ppl_1x_lo": r.get("1x_lo", math.nan),
                     "ppl_1x_hi": r.get("1x_hi", math.nan)})
    return pd.DataFrame(rows)


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as written and shown: without the pattern column where every row is PLAIN and without the
    RoPE base where no row names one (the reports made before either read as they did)."""
    if PATTERN in frame and (frame[PATTERN] == PLAIN).all():
        frame = frame.drop(columns=PATTERN)
    if ROPE_BASE in frame and (frame[ROPE_BASE] == NO_BASE).all():
        frame = frame.drop(columns=ROPE_BASE)
    return frame


# the 1x perplexity's change over a step, beside the statistic's (axis_changes)
BASE_COLUMNS = {"change": "base_change", "change_lo": "base_change_lo", "change_hi": "base_change_hi", "p": "base_p"}


def line_keys(axis_name: str) -> list[str]:
    """The coordinates a line along ``axis_name`` holds fixed."""
    return [c for c in COORDS if c != axis_name]


def spanned(pts: pd.DataFrame) -> list[str]:
    """The axes (AXES' order) along which some line has two or more points with a statistic (a point
    not evaluated at the verdict's multiple, e.g. extension's runs from scratch at 256 scored to 4x only,
    maps nothing)."""
    if pts.empty:
        return []
    evaluated = pts[pts["stat"].notna()]
    return [a for a in AXES if not evaluated.empty and (evaluated.groupby(line_keys(a))[a].nunique() > 1).any()]


def size_order(pts: pd.DataFrame) -> dict[str, float]:
    """Each size's parameters (the mean over its points; NaN where not recorded)."""
    return pts.groupby(SIZE)["params"].mean().to_dict()


def axis_value(pts: pd.DataFrame, axis_name: str, point) -> float:
    """A point's number on a numeric axis: its training length or RoPE base, or its size's parameters."""
    return float(point) if axis_name in (TRAIN_LEN, ROPE_BASE) else float(size_order(pts).get(point, math.nan))


def order_key(pts: pd.DataFrame, axis_name: str):
    """How a line's points are ordered: by training length, by parameters (then name), by name."""
    if axis_name == TRAIN_LEN:
        return lambda v: int(v)
    if axis_name == ROPE_BASE:
        return lambda v: float(v)
    if axis_name == SIZE:
        sizes = size_order(pts)
        return lambda v: (sizes.get(v, math.inf) if np.isfinite(sizes.get(v, math.nan)) else math.inf, str(v))
    if axis_name == CORPUS:  # the runs' one corpus first: the centre the others move from
        return lambda v: (v != "stdlib", str(v))
    return lambda v: (v != BYTE, str(v))  # bytes first: the house's tokenizer


def distance(pts: pd.DataFrame, axis_name: str):
    """The number of doublings between two points of a numeric axis; one step between categories."""
    if axis_name in NUMERIC:
        return lambda a, b: abs(math.log2(axis_value(pts, axis_name, b) / axis_value(pts, axis_name, a)))
    return lambda a, b: 1.0


def axis_parts(evals: pd.DataFrame, pts: pd.DataFrame, axis_name: str, token_sets: dict | None = None,
               replicates: int = bootstrap.REPLICATES, multiple: float | None = None,
               parts: dict | None = None, level: bool = False) -> dict[tuple, tuple[str, bootstrap.Parts | None]]:
    """The verdict statistic per seed of every point on a line along ``axis_name`` (``level``: the
    perplexity at 1x): {(*line_keys, point): (statistic, Parts)} from sweep.row_parts_and_levels (one
    budget per row: ``evals`` at each row's largest). ``parts``: its dict already computed (one
    computation for every axis)."""
    if parts is None:
        parts = sweep.row_parts_and_levels(evals, token_sets, replicates, multiple)[1 if level else 0]
    by_cell = {k[:4]: v for k, v in parts.items()}  # (protocol, variant, model, train_len)
    keys = line_keys(axis_name)
    lines = pts.groupby(keys)[axis_name].transform("nunique") > 1
    out = {}
    for _, p in pts[lines].iterrows():
        cell = by_cell.get((p["protocol"], p["variant"], p["model"], p["train_len"]))
        if cell is not None:
            out[(*[p[k] for k in keys], p[axis_name])] = cell
    return out


def axis_changes(evals: pd.DataFrame, pts: pd.DataFrame, axis_name: str, token_sets: dict | None = None,
                 replicates: int = bootstrap.REPLICATES, multiple: float | None = None,
                 parts: dict | None = None, base_parts: dict | None = None) -> pd.DataFrame:
    """Every line's changes along ``axis_name`` (report/analysis/axis.py's rows, consecutive points and the
    whole line), per doubling on a numeric axis, with the line's coordinates and ``axis``; beside each,
    the change of the perplexity at 1x over the same step, tested alike (BASE_COLUMNS: a ratio that
    falls while its baseline rises is read with that beside it; not along the tokenizer, whose points'
    perplexities are per token of different units). ``parts``, ``base_parts``: sweep.row_parts_and_levels'
    two, already computed (one computation for every axis)."""
    if parts is None or base_parts is None:
        parts, base_parts = sweep.row_parts_and_levels(evals, token_sets, replicates, multiple)
    keys, dist, order = line_keys(axis_name), distance(pts, axis_name), order_key(pts, axis_name)
    found = axis_parts(evals, pts, axis_name, token_sets, replicates, multiple, parts)
    out = axis.step_changes(found, keys, dist, order, unpaired=True, whole=True)
    if axis_name == TOKENIZER:  # perplexities per token of different units: no baseline to compare
        return out.assign(axis=axis_name)
    base = axis.step_changes(axis_parts(evals, pts, axis_name, token_sets, replicates, multiple, base_parts, level=True),
                             keys, dist, order, unpaired=True, whole=True)
    if not out.empty and not base.empty:
        on = keys + ["from", "to", "whole"]
        base = base[on + list(BASE_COLUMNS)].rename(columns=BASE_COLUMNS)
        out = out.merge(base, on=on, how="left")
    return out.assign(axis=axis_name)

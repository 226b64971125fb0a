"""The report's words, generated from the main table: what each protocol scores, and per training
length and protocol which encodings stayed flat, which broke and at what multiple, and which was
best, as short items that the summary lists."""

from __future__ import annotations

import pandas as pd

from posbench.evaluation.perplexity import SMALL_TOKEN_SET
from posbench.evaluation.protocols import PROTOCOLS
from posbench.report.analysis.stats import ALPHA, p_phrase
from posbench.report.analysis.tables import NOT_DEFINED, multiple_columns
from posbench.report.analysis.verdicts import FAR_MARGIN, LOCAL, MILD_LIMIT, USES_FAR


def protocol_items(evals: pd.DataFrame) -> tuple[list[str], str]:
    """What each protocol in the report scores (each protocol's own note, posbench/evaluation/protocols/: the one description), one
    item each, and which of them score the same tokens (their records name the same token set)."""
    protocols = sorted(evals["protocol"].unique(), key=lambda p: list(PROTOCOLS).index(p) if p in PROTOCOLS else 99)
    notes = [f"`{p}`: {PROTOCOLS[p].note}" if p in PROTOCOLS else f"`{p}`" for p in protocols]
    text = ""
    if len(protocols) > 1:
        sets = evals.groupby("protocol")["token_set"].agg(lambda x: frozenset(x.dropna()))
        groups: dict[frozenset, list[str]] = {}
        for p in protocols:
            groups.setdefault(sets[p], []).append(p)
        shared = [g for g in groups.values() if len(g) > 1]
        alone = [g[0] for g in groups.values() if len(g) == 1]
        moving = [p for p in protocols if p in PROTOCOLS and not PROTOCOLS[p].fixed_targets]
        fixed = [p for p in protocols if p not in moving]
        if not moving:
            text += "Each protocol scores the same tokens at every length."
        else:
            text += (f"{_names(fixed)} {'scores' if len(fixed) == 1 else 'score'} the same tokens at every length; "
                     if fixed else "") + (f"{_names(moving)} {'does' if len(moving) == 1 else 'do'} not (the tokens "
                                          "scored, or how often, change with the length), so "
                                          f"{'its' if len(moving) == 1 else 'their'} ratios between lengths mix text with length.")
        if shared:
            text += " " + "; ".join(f"{_names(g)} score the same tokens, so their numbers can be compared with each other"
                                    for g in shared) + "."
        if alone:
            text += (f" {_names(alone)} {'scores' if len(alone) == 1 else 'score'} other tokens "
                     "(fixed targets are document ends): compare within a protocol there.")
    return notes, text


def scored_text_note(evals: pd.DataFrame, token_sets: dict) -> str:
    """Which text the compared records score: per token set, the documents and tokens (bytes)."""
    parts = []
    for name in sorted(evals["token_set"].dropna().unique()) if "token_set" in evals else []:
        info = token_sets.get(name)
        if not info or "docs" not in info:  # older runs, or a rebuilt report whose records do not name them
            n = f", {len(info['doc_tokens'])} documents" if info else ""
            parts.append(f"`{name}` (scored documents not recorded{n})")
            continue
        where = f"{len(info['docs'])} of the {info['documents_in_split']} validation documents"
        small = (f"; **a small validation set**: fewer than {SMALL_TOKEN_SET:,} tokens at each length, so differences "
                 "of about a percent may be chance") if info["tokens"] < SMALL_TOKEN_SET else ""
        amount = f"{info['tokens']:,} tokens ({info['bytes']:,} bytes)" if "bytes" in info else f"{info['tokens']:,} bytes"
        parts.append(f"`{name}`: {amount} from {where} "
                     f"(documents {_doc_ranges(info['docs'])}, numbered in the split's order){small}")
    return ("Scored text: " + "; ".join(parts) + ".") if parts else ""


def _doc_ranges(docs: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2, 5, 7-8"."""
    out, start = [], None
    for i, d in enumerate(docs):
        if start is None:
            start = d
        if i + 1 == len(docs) or docs[i + 1] != d + 1:
            out.append(str(start) if start == d else f"{start}-{d}")
            start = None
    return ", ".join(out)


def join_words(items) -> str:
    """"a", "a and b", "a, b and c"."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _names(items: list[str]) -> str:
    return join_words(f"`{x}`" for x in items)


VERDICTS = ("flat, uses far context", "flat, local", "flat", "mild", "broken", "undecided")


def verdict_entry(r: pd.Series, ratio: str, n: int) -> str:
    """"`rope` 1.80 [1.62, 2.01] (1x 8.04, rank at 1x 4/15)": a row's ratio with its interval, beside
    its absolute 1x perplexity and where that ranks in the panel (so a row bad at 1x is never
    called flat without saying so)."""
    span = f" [{r[f'{ratio}_lo']:.2f}, {r[f'{ratio}_hi']:.2f}]" if pd.notna(r.get(f"{ratio}_lo")) else " (no interval)"
    # "rank at 1x": the headline's and the main table's rank is another, over lengths (RANK_OVER_LENGTHS)
    rank = f", rank at 1x {int(r['rank_1x'])}/{n}" if pd.notna(r.get("rank_1x")) else ""
    far = (f"; window control x{r['far_gain']:.3f} [{r['far_gain_lo']:.3f}, {r['far_gain_hi']:.3f}]"
           if pd.notna(r.get("far_gain")) and pd.notna(r.get("far_gain_lo")) else "")
    if pd.notna(r.get("equal_ctx")):  # the verdict's own statistic first, the descriptive ratio beside it
        eq = f"{r['equal_ctx']:.2f} [{r['equal_ctx_lo']:.2f}, {r['equal_ctx_hi']:.2f}]" if pd.notna(r.get("equal_ctx_lo")) \
            else f"{r['equal_ctx']:.2f} (no interval)"
        seeds = f"; {int(r['verdict_seeds'])} seed{'s' if r['verdict_seeds'] != 1 else ''}" \
            if pd.notna(r.get("verdict_seeds")) else ""
        note = f"; {r['verdict_note']}" if r.get("verdict_note") else ""
        return (f"`{r['variant']}` {eq} on equal context ({ratio} {r[ratio]:.2f}{span}; 1x {r['1x']:.2f}{rank}{far}"
                f"{seeds}{note})")
    seeds = f"; {int(r['seeds'])} seed{'s' if r['seeds'] != 1 else ''}" if pd.notna(r.get("seeds")) else ""
    return f"`{r['variant']}` {r[ratio]:.2f}{span} (1x {r['1x']:.2f}{rank}{far}{seeds})"


def verdict_group(r: pd.Series) -> str:
    """The class a row is listed under: its verdict, a flat one split by its far-context use."""
    word = str(r["verdict"]).split(",")[0]
    if word == "flat" and str(r.get("far_context") or "") in (USES_FAR, LOCAL):
        return f"flat, {r['far_context']}"
    return word


def describe_panel(sub: pd.DataFrame, tolerance: float) -> str:
    """One paragraph for one (protocol, model, train_len) panel: panel_items' lead and items in a row."""
    lead, items = panel_items(sub, tolerance)
    return " ".join([lead, *items]).strip()


def panel_items(sub: pd.DataFrame, tolerance: float) -> tuple[str, list[str]]:
    """One (protocol, model, train_len) panel of the main table as a lead line and a list: the verdict
    of every unwindowed row from its ratio's interval (flat / mild / broken only when the interval lies
    in one class, else undecided; one item per class), the ranking by mean log-perplexity over the
    lengths, the best at 1x and at the longest multiple with their Holm-corrected tests, then the
    windowed controls apart. Each item ends with a full stop."""
    # only the multiples this panel has numbers (or "not defined") for: nothing is claimed about the rest
    cols = [c for c in multiple_columns(sub) if sub[c].notna().any() or (sub[f"{c}_note"] == NOT_DEFINED).any()]
    first = sub.iloc[0]
    protocol, model, train_len, seeds = first["protocol"], first["model"], int(first["train_len"]), int(sub["seeds"].max())
    # the verdict's multiple (tables.verdict_multiple): the ratio column's, not a longer column some rows have
    ratio = next((c for c in sub.columns if c.endswith("/1x") and c.split("/")[0] in cols), f"{cols[-1]}/1x")
    longest = ratio.split("/")[0]
    cols = cols[:cols.index(longest) + 1]
    max_len = round(train_len * float(longest[:-1]))
    over = first.get("interval", "seeds")
    if seeds == 1 and over == "text and seeds":
        over = "the scored text"
    words = PROTOCOLS[protocol].words if protocol in PROTOCOLS else protocol
    strides = set(sub["stride"]) - {""} if "stride" in sub else set()
    if protocol in PROTOCOLS and PROTOCOLS[protocol].shows_stride and len(strides) == 1:
        words += f" (stride {strides.pop()})"  # the stride the records were scored with
    lead = (f"**train_len {train_len}, model {model}, {words}** "
            f"({str(seeds) + ' seeds' if seeds > 1 else 'one seed'}; 95% intervals over {over})")
    windowed = sub["windowed"].fillna(False).astype(bool) if "windowed" in sub else pd.Series(False, index=sub.index)
    plain, controls = sub[~windowed], sub[windowed]
    items = []
    if ratio in sub and len(cols) > 1:
        if "equal_ctx" in plain and plain["equal_ctx"].notna().any():
            lead += (f", the verdict on equal context at {max_len} tokens (against the best the same weights do with at "
                     f"most {train_len} keys per token), {ratio} beside it:")
        else:
            lead += f", {ratio} ({max_len} tokens against {train_len}):"
        n = int(plain["1x"].notna().sum())
        classes = {v: [] for v in VERDICTS}
        undefined, unevaluated = [], []
        for _, r in plain.sort_values(ratio, na_position="last").iterrows():
            if pd.isna(r["1x"]):
                continue
            if pd.isna(r[ratio]):
                note = r.get(f"{longest}_note")
                (undefined if note == NOT_DEFINED else unevaluated).append(f"`{r['variant']}`")
                continue
            classes.setdefault(verdict_group(r), []).append(verdict_entry(r, ratio, n))
        flat = f"interval within {1 + tolerance:g}"
        limits = {"flat, uses far context": f"{flat}; its window control's interval above {1 + FAR_MARGIN:g}: keys past "
                                            "train_len lower its perplexity",
                  "flat, local": f"{flat}; its window control's interval below {1 + FAR_MARGIN:g}: it gains nothing "
                                 "past train_len",
                  "flat": flat, "mild": f"interval inside ({1 + tolerance:g}, {MILD_LIMIT:g}]",
                  "broken": f"interval above {MILD_LIMIT:g}", "undecided": "interval across a border"}
        items += [f"**{v}** ({limits[v]}): " + ", ".join(entries) + "."
                  for v, entries in classes.items() if entries and v in limits]
        if undefined:
            items.append(f"Not defined at {longest}: {', '.join(undefined)}.")
        if unevaluated:
            items.append(f"Not evaluated at {longest}: {', '.join(unevaluated)}.")
    else:
        lead += ":"
    ranked = plain.dropna(subset=["mean_log_ppl"]).sort_values("mean_log_ppl") if "mean_log_ppl" in plain else plain.iloc[:0]
    if len(ranked) > 1:
        items.append(f"Rank over lengths (by mean log-perplexity over {cols[0]} ... {longest}; rows equal at the "
                     "printed three decimals share a rank): " + ", ".join(f"{_rank(r)}`{r['variant']}` ({r['mean_log_ppl']:.3f})" for _, r in ranked.iterrows())
                     + ".")
    for col in dict.fromkeys(["1x", longest]):
        if sentence := _best_sentence(plain, col).strip():
            items.append(sentence)
    if not controls.empty and ratio in controls:
        items.append("Windowed controls (an evaluation-time window limits what each query sees; not in the verdicts "
                     "above): " + ", ".join(f"{verdict_entry(r, ratio, len(controls))} {r['verdict']}" for _, r in
                                             controls.sort_values(ratio).iterrows() if pd.notna(r[ratio])) + ".")
    return lead, items


def _rank(r: pd.Series) -> str:
    return f"{int(r['rank_mean_log_ppl'])}. " if pd.notna(r.get("rank_mean_log_ppl")) else ""


def _best_sentence(sub: pd.DataFrame, col: str) -> str:
    if sub[col].notna().sum() == 0:
        return ""
    ranked = sub.sort_values(col).dropna(subset=[col])
    best = ranked.iloc[0]
    s = f"Lowest at {col}: `{best['variant']}` ({best[col]:.2f})"
    if len(ranked) > 1:
        runner = ranked.iloc[1]
        p = runner.get(f"{col}_p_holm")
        if pd.notna(p):
            verdict = "significantly" if p < ALPHA else "not significantly"
            s += f", {verdict} ahead of `{runner['variant']}` ({runner[col]:.2f}, Holm-adjusted p {p_phrase(p, 3)})"
        elif runner.get(f"{col}_unresolved"):
            s += f", ahead of `{runner['variant']}` ({runner[col]:.2f}; {runner[f'{col}_unresolved']})"
        else:
            s += f", ahead of `{runner['variant']}` ({runner[col]:.2f}; no test)"
    return s + ". "


def fmt_len(v) -> str:
    return "n/d" if pd.isna(v) else str(int(v))


def _panels(table: pd.DataFrame) -> list[pd.DataFrame]:
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    keys = sorted(table.groupby(["protocol", "model", "train_len"]).groups,
                  key=lambda k: (k[1], k[2], order.get(k[0], 99)))
    return [table[(table["protocol"] == p) & (table["model"] == m) & (table["train_len"] == t)] for p, m, t in keys]


def summary_paragraphs(table: pd.DataFrame, tolerance: float) -> list[str]:
    return [describe_panel(sub, tolerance) for sub in _panels(table)]


def summary_lists(table: pd.DataFrame, tolerance: float) -> list[tuple[str, list[str]]]:
    """Per panel, its lead line and items (panel_items): what the summary shows as lists."""
    return [panel_items(sub, tolerance) for sub in _panels(table)]

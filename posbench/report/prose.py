"""The report's words, generated from the main table: the introduction's note on protocols, and
per training length and protocol which encodings stayed flat, which broke and at what multiple,
and which was best."""

from __future__ import annotations

import pandas as pd

from posbench.protocols import PROTOCOLS
from posbench.report.stats import ALPHA
from posbench.report.tables import NOT_DEFINED, multiple_columns


def protocol_note(evals: pd.DataFrame) -> str:
    """What each protocol in the report scores (from posbench.protocols, the one description), and
    which of them score the same tokens (their records name the same token set)."""
    protocols = sorted(evals["protocol"].unique(), key=lambda p: list(PROTOCOLS).index(p) if p in PROTOCOLS else 99)
    notes = [f"`{p}`: {PROTOCOLS[p].note}" if p in PROTOCOLS else f"`{p}`" for p in protocols]
    text = "Protocols: " + "; ".join(notes) + "."
    if len(protocols) > 1:
        sets = evals.groupby("protocol")["token_set"].agg(lambda x: frozenset(x.dropna()))
        groups: dict[frozenset, list[str]] = {}
        for p in protocols:
            groups.setdefault(sets[p], []).append(p)
        shared = [g for g in groups.values() if len(g) > 1]
        alone = [g[0] for g in groups.values() if len(g) == 1]
        text += " Each protocol scores the same tokens at every length."
        if shared:
            text += " " + "; ".join(f"{_names(g)} score the same tokens, so their numbers can be compared with each other"
                                    for g in shared) + "."
        if alone:
            text += (f" {_names(alone)} {'scores' if len(alone) == 1 else 'score'} other tokens "
                     "(fixed targets are document ends): compare within a protocol there.")
    return text


def join_words(items) -> str:
    """"a", "a and b", "a, b and c"."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _names(items: list[str]) -> str:
    return join_words(f"`{x}`" for x in items)


def describe_panel(sub: pd.DataFrame, tolerance: float) -> str:
    """One paragraph for one (protocol, model, train_len) panel of the main table."""
    # only the multiples this panel has numbers (or "not defined") for: nothing is claimed about the rest
    cols = [c for c in multiple_columns(sub) if sub[c].notna().any() or (sub[f"{c}_note"] == NOT_DEFINED).any()]
    first = sub.iloc[0]
    protocol, model, train_len, seeds = first["protocol"], first["model"], int(first["train_len"]), int(sub["seeds"].max())
    longest = cols[-1]
    max_len = round(train_len * float(longest[:-1]))
    head = (f"**train_len {train_len}, model {model}, {PROTOCOLS[protocol].words if protocol in PROTOCOLS else protocol}** "
            f"({'mean of ' + str(seeds) + ' seeds' if seeds > 1 else 'one seed'}): ")
    flat, broke, undefined, unevaluated = [], [], [], []
    for _, r in sub.sort_values(longest, na_position="last").iterrows():
        ext = r.get("extrapolation_len")
        if pd.isna(r["1x"]):
            continue
        if pd.notna(ext) and ext >= max_len:
            flat.append(r["variant"])
            continue
        after = next((c for c in cols if round(train_len * float(c[:-1])) > (ext if pd.notna(ext) else 0)), None)
        if after is not None and pd.isna(r[after]) and r[f"{after}_note"] == NOT_DEFINED:
            undefined.append(f"`{r['variant']}` (not defined past {fmt_len(ext)} tokens)")
        elif after is not None and pd.isna(r[after]):
            unevaluated.append(f"`{r['variant']}` (not evaluated past {fmt_len(ext)} tokens)")
        elif after is not None:
            at_longest = f"; {r[longest] / r['1x']:.2f}× 1x at {longest}" if pd.notna(r[longest]) else ""
            broke.append(f"`{r['variant']}` at {after} ({r['1x']:.2f} → {r[after]:.2f}{at_longest})")
    parts = []
    if flat:
        parts.append(f"{_names(flat)} stayed within {tolerance:.0%} of their 1x perplexity up to {longest} ({max_len} tokens)")
    else:
        parts.append(f"no encoding stayed within {tolerance:.0%} of its 1x perplexity up to {longest}")
    if broke:
        parts.append("broke (first multiple past the tolerance): " + "; ".join(broke))
    if undefined:
        parts.append(", ".join(undefined))
    if unevaluated:
        parts.append(", ".join(unevaluated))
    text = head + "; ".join(parts) + ". "
    for col in dict.fromkeys(["1x", longest]):
        text += _best_sentence(sub, col)
    return text.strip()


def _best_sentence(sub: pd.DataFrame, col: str) -> str:
    if sub[col].notna().sum() == 0:
        return ""
    ranked = sub.sort_values(col).dropna(subset=[col])
    best = ranked.iloc[0]
    s = f"Lowest at {col}: `{best['variant']}` ({best[col]:.2f})"
    if len(ranked) > 1:
        runner = ranked.iloc[1]
        p = runner.get(f"{col}_p_vs_best")
        if pd.notna(p):
            verdict = "significantly" if p < ALPHA else "not significantly"
            s += f", {verdict} ahead of `{runner['variant']}` ({runner[col]:.2f}, paired p = {p:.3f})"
        else:
            s += f", ahead of `{runner['variant']}` ({runner[col]:.2f}; one seed, no test)"
    return s + ". "


def fmt_len(v) -> str:
    return "n/d" if pd.isna(v) else str(int(v))


def summary_paragraphs(table: pd.DataFrame, tolerance: float) -> list[str]:
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    keys = sorted(table.groupby(["protocol", "model", "train_len"]).groups,
                  key=lambda k: (k[1], k[2], order.get(k[0], 99)))
    out = []
    for protocol, model, train_len in keys:
        sub = table[(table["protocol"] == protocol) & (table["model"] == model) & (table["train_len"] == train_len)]
        out.append(describe_panel(sub, tolerance))
    return out

"""posbench/report/analysis/headline.py: each encoding beside its verdict, interval, rank and budget; each task
against its chance row; several panels named by what differs."""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.analysis.headline import lm_headline, task_headline, verdict_cells


def _main_table() -> pd.DataFrame:
    rows = []
    for variant, ratio, lo, hi, label, rank, windowed in [
            ("rope", 2.46, 2.36, 2.57, "broken", 2, False), ("alibi", 0.97, 0.97, 0.98, "flat, local (gains nothing past train_len)", 1, False),
            ("learned", math.nan, math.nan, math.nan, "n/a", math.nan, False), ("alibi+swaL", 0.97, 0.96, 0.98, "flat", 1, True)]:
        rows.append({"protocol": "nonoverlapping", "variant": variant, "model": "small", "train_len": 64, "windowed": windowed,
                     "1x": 6.5, "1x_lo": 6.0, "1x_hi": 7.1, "16x": 6.4, "16x_note": "n/d" if variant == "learned" else "",
                     "16x/1x": ratio, "16x/1x_lo": lo, "16x/1x_hi": hi, "label": label, "verdict": label.split(" (")[0],
                     "rank_mean_log_ppl": rank, "far_gain": 1.002 if variant == "alibi" else math.nan,
                     "far_gain_lo": 0.999, "far_gain_hi": 1.004})
    return pd.DataFrame(rows)


def test_the_headline_puts_each_encoding_beside_its_verdict_interval_rank_and_budget():
    conv = pd.DataFrame({"encoding": ["rope", "alibi", "learned"], "model": "small", "train_len": 64, "steps": 600,
                         "train_tokens": 1228800})
    shown, keys, _ = lm_headline(_main_table(), conv)
    assert list(shown["encoding"]) == ["alibi", "rope", "learned"]  # by rank; the windowed control is apart
    alibi = shown.iloc[0]
    assert alibi["verdict"] == "flat, local (gains nothing past train_len)" and alibi["16x/1x [95%]"] == "0.97 [0.97, 0.98]"
    assert alibi["1x perplexity [95%]"] == "6.50 [6.00, 7.10]" and alibi["rank over lengths"] == "1"
    assert alibi["window / full"] == "1.002 [0.999, 1.004]" and alibi["budget"] == "600 steps, 1.23M tokens"
    assert shown.iloc[2]["verdict"] == "not defined at 16x" and shown.iloc[2]["16x/1x [95%]"] == "n/d"
    assert keys.iloc[1]["16x/1x [95%]"] == 2.46 and "panel" not in shown  # one panel: no panel column
    controls, _, _ = lm_headline(_main_table(), conv, windowed=True)
    assert list(controls["encoding"]) == ["alibi+swaL"]


def test_with_several_budgets_each_row_names_its_largest_budget_and_its_trend():
    conv = pd.DataFrame({"encoding": ["rope", "alibi", "learned"], "model": "small", "train_len": 64, "steps": 4800,
                         "train_tokens": 9830400})  # the runs of the largest budget (budget.at_largest_budget)
    trends = pd.DataFrame({"protocol": "nonoverlapping", "variant": ["rope", "alibi"], "model": "small", "train_len": 64,
                           "trend": ["settled since 1200 steps", "still moving (up: 1.01 at 2400 to 1.07 at 4800)"]})
    shown, _, _ = lm_headline(_main_table(), conv, trends=trends)
    rows = shown.set_index("encoding")
    assert rows.loc["rope", "budget"] == "4800 steps, 9.83M tokens" and rows.loc["rope", "trend"] == "settled since 1200 steps"
    assert rows.loc["alibi", "trend"].startswith("still moving (up") and rows.loc["learned", "trend"] == ""
    assert "trend" not in lm_headline(_main_table(), conv)[0]  # one budget: no trend column


def test_the_task_headline_reads_each_task_against_its_chance_row():
    table = pd.DataFrame([{"task": "passkey", "variant": v, "model": "small", "train_len": 64, "1x": a, "1x_lo": a - .1,
                           "1x_hi": min(1, a + .1), "4x": b, "4x_lo": b - .05, "4x_hi": b + .05, "chance": 0.001,
                           "beyond train_len": b, "effective length": e, "seeds": 1}
                          for v, a, b, e in [("rope", 1.0, 0.2, 64), ("alibi", 0.98, 0.6, 128)]])
    shown, keys, classes = task_headline(table, pd.DataFrame())
    assert list(shown["encoding"]) == ["alibi", "rope", "chance (no retrieval)"] and classes[-1] == "control"
    assert shown.iloc[0]["4x accuracy % [95%]"] == "60 [55, 65]" and shown.iloc[2]["1x accuracy % [95%]"] == "0"


def test_several_panels_are_named_first_by_what_differs_and_their_rows_kept_together():
    two = pd.concat([_main_table().assign(protocol="sliding"), _main_table()], ignore_index=True)
    shown, _, _ = lm_headline(two, pd.DataFrame())
    assert list(shown.columns[:2]) == ["protocol", "encoding"] and set(shown["protocol"]) == {"nonoverlapping", "sliding"}
    three = pd.concat([two, _main_table().assign(train_len=128)], ignore_index=True)
    shown, _, _ = lm_headline(three, pd.DataFrame())
    assert shown.columns[0] == "panel" and "sliding, L=64" in set(shown["panel"])
    # grouped: each panel's rows in one run, not interleaved with another panel's
    runs = [p for i, p in enumerate(shown["panel"]) if i == 0 or p != shown["panel"].iloc[i - 1]]
    assert len(runs) == len(set(runs)) == 3
    assert list(shown["panel"]) == sorted(shown["panel"], key=lambda p: ("L=128" in p, "sliding" in p))


def test_each_verdict_cell_is_coloured_by_its_class():
    shown, _, _ = lm_headline(_main_table(), pd.DataFrame())
    classes = verdict_cells(shown).set_index(shown["encoding"])
    assert classes.loc["alibi", "verdict"] == "v-flat" and classes.loc["rope", "verdict"] == "v-broken"
    assert classes.loc["learned", "verdict"] == ""  # "not defined at 16x": no verdict, no colour
    assert (classes.drop(columns="verdict") == "").all().all()  # only the verdicts are coloured


def test_panels_of_rope_bases_follow_the_base_s_number():
    """small|base=500 before small|base=10000 before small|base=1000000 (as text, 10000 came first)."""
    bases = ("1000000", "10000", "500")
    table = pd.concat([_main_table().assign(model=f"small|base={b}") for b in bases], ignore_index=True)
    shown, _, _ = lm_headline(table, pd.DataFrame())
    rope = [m for m, e in zip(shown["model"], shown["encoding"]) if e == "rope"]
    assert rope == ["small|base=500", "small|base=10000", "small|base=1000000"]

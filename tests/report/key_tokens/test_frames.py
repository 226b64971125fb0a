"""Key tokens (posbench/report/analysis/key_tokens.py, the rule and each seed's counts;
posbench/report/key_tokens/frames.py, the statistics): exactly the tokens meeting the rule are chosen, none
where the two passes agree, and the statistics find a made-up far-context gain with its sign and
invent none."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.report.analysis.bootstrap import panel_draws
from posbench.report.analysis.key_tokens import KeyTokenRule, key_counts, mirror, paired_rows, select
from posbench.report.key_tokens.frames import key_stats, key_token_frames
from posbench.store.rundir import token_loss_keys


def test_exactly_the_tokens_meeting_both_thresholds_are_chosen():
    full = np.array([1.0, 0.2, 0.2, 3.0, 0.1, 0.25, 0.4])
    window = np.array([1.0, 1.0, 0.6, 5.0, 0.1, 0.75, 0.1])
    # LSD:              0   0.8  0.4  2.0  0    0.5  -0.3 ; LCL = -full: -1 -0.2 -0.2 -3 -0.1 -0.25 -0.4
    assert select(full, window, 0.5, -0.5).tolist() == [False, True, False, False, False, False, False]
    assert select(full, window, 0.3, -3.5).tolist() == [False, True, True, True, False, True, False]
    # the mirror rule: the window pass better by the margin, and confident
    assert mirror(full, window, 0.25, -0.5).tolist() == [False, False, False, False, False, False, True]
    same = np.linspace(0.01, 6, 50)
    assert not select(same, same, 0.0, -10).any() and not mirror(same, same, 0.0, -10).any()


def test_the_rule_is_the_papers_per_byte_unless_the_papers_own_numbers_are_asked_for():
    rule = KeyTokenRule()
    assert rule.thresholds(1.0) == pytest.approx((2 / 3.94, -2 / 3.94))  # a byte
    assert rule.thresholds(3.94) == pytest.approx((2.0, -2.0))  # a token as long as a Llama-3 token
    assert KeyTokenRule.paper().thresholds(1.0) == (2.0, -2.0) == KeyTokenRule.paper().thresholds(4.0)


def made_up(n_docs=12, per_doc=40, shift=1.0, key_every=5, seed=0):
    """One seed's (full, window, doc): every ``key_every``-th token has a full loss of 0.25 and a
    window loss ``shift`` above it; every other token has the same loss in both passes."""
    rng = np.random.default_rng(seed)
    doc = np.repeat(np.arange(n_docs), per_doc)
    full = rng.uniform(0.5, 4.0, size=len(doc)).astype(np.float16)
    chosen = np.arange(len(doc)) % key_every == 0
    full[chosen] = 0.25
    window = full.copy()
    window[chosen] = np.float16(0.25 + shift)
    return full, window, doc


def test_a_made_up_gain_is_found_with_its_sign_and_none_is_invented_when_the_passes_agree():
    draws = panel_draws(12, replicates=500)
    counts = [key_counts(*made_up(seed=s), 12, 0.5, -0.5) for s in range(3)]
    st = key_stats((0, 1, 2), counts, draws)
    assert st.share[0] == pytest.approx(0.2) and st.share[1] <= 0.2 <= st.share[2]
    assert st.mirror_share == (0.0, 0.0, 0.0)
    assert st.gain[0] == pytest.approx(math.e, rel=1e-3) and st.gain[1] > 1  # the window loses 1 nat on each
    assert st.key_ppl[0] == pytest.approx(math.exp(0.25)) and st.key_ppl_window[0] == pytest.approx(math.exp(1.25))
    assert st.seeds_with_keys == 3 and st.key_tokens == 3 * 96
    # the window better by the same margin: no key token, only mirror ones
    hurt = [key_counts(w, f, d, 12, 0.5, -0.5) for f, w, d in (made_up(seed=s) for s in range(3))]
    st = key_stats((0, 1, 2), hurt, draws)
    assert st.share == (0.0, 0.0, 0.0) and st.mirror_share[0] == pytest.approx(0.2)
    assert st.seeds_with_keys == 0 and all(math.isnan(v) for v in (*st.gain, *st.key_ppl))
    # equal passes: nothing chosen, nothing gained
    equal = [key_counts(f, f, d, 12, 0.5, -0.5) for f, _, d in (made_up(seed=s) for s in range(3))]
    st = key_stats((0, 1, 2), equal, draws)
    assert st.share == (0.0, 0.0, 0.0) == st.mirror_share and st.key_tokens == 0 and math.isnan(st.gain[0])


def made_up_records(shift: float, seeds=(0, 1)):
    """Evaluation records of ``rope`` and its window control at 1x and 2x (train_len 8) and their
    runs' per-token losses: at 2x, one token in five gains ``shift`` nats from the far context."""
    rows, losses = [], {}
    for s in seeds:
        rid = f"rope_s{s}"
        losses[rid] = {}
        for m in (1.0, 2.0):
            L = int(8 * m)
            full, window, doc = made_up(seed=s, shift=shift if m > 1 else 0.0)
            for variant, loss in (("rope", full), ("rope+swaL", window)):
                key, doc_key, pos_key = token_loss_keys(variant, "nonoverlapping", L)
                losses[rid][key], losses[rid][doc_key] = loss, doc.astype(np.int32)
                losses[rid][pos_key] = (np.arange(len(doc)) % L).astype(np.int32)
                mean = float(loss.astype(float).mean())
                rows.append(dict(run_id=rid, encoding="rope", variant=variant, model="m", train_len=8, seed=s,
                                 status="completed", protocol="nonoverlapping", length=L, multiple=m, ppl=math.exp(mean),
                                 token_set="t", tokens_scored=len(doc), bytes_scored=len(doc)))
    return pd.DataFrame(rows), losses, {"t": {"doc_tokens": [40] * 12}}


def test_the_table_pairs_each_row_with_its_window_control_above_1x():
    evals, losses, sets = made_up_records(shift=1.0)
    assert paired_rows(evals) == [("nonoverlapping", "rope", "m", 8)]
    read = []
    table = key_token_frames(evals, lambda rid: read.append(rid) or losses.get(rid), sets, KeyTokenRule(0.5, -0.5),
                             replicates=300).table
    assert sorted(read) == ["rope_s0", "rope_s1"]  # each run's file read once
    assert len(table) == 1 and table.loc[0, "multiple"] == 2.0 and table.loc[0, "seeds_with_keys"] == 2
    assert table.loc[0, "gain"] == pytest.approx(math.e, rel=1e-3) and table.loc[0, "share"] == pytest.approx(0.2)
    assert table.loc[0, "gain_lo"] > 1 and table.loc[0, "share_lo"] <= 0.2 <= table.loc[0, "share_hi"]
    evals0, losses0, _ = made_up_records(shift=0.0)
    equal = key_token_frames(evals0, losses0.get, sets, KeyTokenRule(0.5, -0.5), replicates=300).table
    assert equal.loc[0, "seeds_with_keys"] == 0 and equal.loc[0, "share"] == 0 and math.isnan(equal.loc[0, "gain"])
    # the paper's numbers, unscaled on bytes, ask for 2 nats: a 1-nat gain makes no key token
    assert key_token_frames(evals, losses.get, sets, KeyTokenRule.paper(), replicates=300).table.loc[0, "seeds_with_keys"] == 0
    # runs that kept no per-token losses: no table, no curves
    none = key_token_frames(evals, lambda rid: None, sets)
    assert none.table.empty and none.curves == {}


def test_window_curves_average_each_position_over_seeds_at_the_longest_length():
    evals, losses, sets = made_up_records(shift=1.0)
    (cell, (L, full, window)), = key_token_frames(evals, losses.get, sets, replicates=10).curves.items()
    assert cell == ("nonoverlapping", "rope", "m", 8) and L == 16 and len(full) == len(window) == 16
    f = np.concatenate([losses[r]["rope/nonoverlapping/L16"].astype(float) for r in ("rope_s0", "rope_s1")])
    pos = np.concatenate([losses[r]["nonoverlapping/L16/position"] for r in ("rope_s0", "rope_s1")])
    assert full[3] == pytest.approx(f[pos == 3].mean()) and (window >= full - 1e-9).all()

"""The RoPE-base section (posbench/report/rope_base/section.py) on made-up records: the measured onset is
the first multiple whose class is mild or broken after the last flat one; an undecided multiple before it
leaves it unresolved; each theory's prediction is placed against that bracket."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from posbench.report.rope_base import section as S
from posbench.report.rope_base.theory import liu_extrapolation_limit


def steps(classes: dict[float, str]) -> pd.DataFrame:
    return pd.DataFrame([{"multiple": m, "verdict": v, "stat": 1.0, "stat_lo": 0.9, "stat_hi": 1.1}
                         for m, v in classes.items()])


def test_the_onset_is_the_first_mild_or_broken_multiple_after_the_last_flat_one():
    found = S.onset(steps({2.0: "flat", 4.0: "flat", 8.0: "broken", 16.0: "broken"}))
    assert (found["last_flat"], found["onset"], found["resolved"]) == (4.0, 8.0, True)
    assert S.word(5.0, found) == S.INSIDE and S.word(8.0, found) == S.INSIDE
    assert S.word(3.0, found) == S.EARLIER and S.word(9.0, found) == S.LATER
    none = S.onset(steps({2.0: "flat", 4.0: "flat"}))
    assert none["onset"] == math.inf and S.word(100.0, none) == S.INSIDE and S.word(3.0, none) == S.EARLIER
    unresolved = S.onset(steps({2.0: "flat", 4.0: "undecided", 8.0: "broken"}))
    assert not unresolved["resolved"] and S.word(3.0, unresolved) == S.UNTOLD


def records(ratios: dict[tuple[float, int], dict[float, float]], seeds: int = 3) -> pd.DataFrame:
    """{(base, train_len): {multiple: ratio}} -> records of rope runs (model label small|base=<b>) with a
    window control flat at every multiple, each seed's perplexity with a little noise of its own."""
    rng = np.random.default_rng(0)
    out = []
    for (base, train_len), by_m in ratios.items():
        label = f"small|base={int(base)}"
        for seed in range(seeds):
            rid = f"rope_{int(base)}_{train_len}_{seed}"
            one = 5.0 * (1 + 0.01 * (seed - 1))
            for m, ratio in {1.0: 1.0, **by_m}.items():
                for variant, r in (("rope", ratio), ("rope+swaL", 1.0)):
                    out.append(dict(run_id=rid, encoding="rope", variant=variant, model=label, train_len=train_len,
                                    seed=seed, status="completed", protocol="nonoverlapping", length=int(train_len * m),
                                    multiple=m, ppl=one * r * float(np.exp(rng.normal(0, 0.003))),
                                    token_set=f"t{train_len}", windowed=variant.endswith("+swaL")))
    return pd.DataFrame(out)


def test_each_row_is_placed_against_both_theories():
    evals = records({(500.0, 64): {2.0: 1.0, 4.0: 1.6, 8.0: 2.0}, (1e6, 64): {2.0: 1.6, 4.0: 2.0, 8.0: 2.5}})
    completed = evals.drop_duplicates("run_id")[["run_id", "model", "train_len"]].assign(
        run_dir=lambda f: f["run_id"])
    configs = {d: OmegaConf.create({"model": {"d_model": 128, "n_heads": 4}}) for d in completed["run_dir"]}
    ctx = SimpleNamespace(evals=evals, options=SimpleNamespace(tolerance=0.05), token_sets=None, completed=completed,
                          configs=configs, multiple=None, table=None)  # no verdict multiple: every table computed here
    frame = S.theory_frame(ctx).set_index("rope_base")
    assert frame.loc[500.0, "last_flat"] == 2.0 and frame.loc[500.0, "onset"] == 4.0 and frame.loc[500.0, "d_head"] == 32
    assert frame.loc[1e6, "last_flat"] == 1.0 and frame.loc[1e6, "onset"] == 2.0
    liu = liu_extrapolation_limit(32, 1e6, 64) / 64  # 83.79 tokens: 1.31x (theory.py's toy values)
    assert frame.loc[1e6, "liu_multiple"] == pytest.approx(liu) and frame.loc[1e6, "liu_word"] == S.INSIDE
    assert frame.loc[500.0, "liu_multiple"] == pytest.approx(64.61 / 64, rel=1e-3)
    assert frame.loc[500.0, "liu_word"] == S.EARLIER  # flat at 2x, past Liu's 1.01x
    assert frame.loc[500.0, "men_multiple"] == pytest.approx(102 / 64) and frame.loc[500.0, "men_word"] == S.EARLIER

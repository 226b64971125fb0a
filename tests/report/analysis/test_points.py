"""posbench/report/analysis/points.py and map/words.py on made-up records: a verdict that changes along the
training length is found as "changes" (the right place and direction), one that holds is found as
"holds" (no change invented), and too few seeds or undecided points are "cannot be told"."""

import numpy as np
import pandas as pd
import pytest

from posbench.report.analysis import sweep

from posbench.report.analysis import axis
from posbench.report.analysis import points as P
from posbench.report.map import words as W
from posbench.report.analysis.tables import main_table


def map_records(spec, seeds=3, noise=0.005, models=None, base=None, base_noise=0.0):
    """spec: {(variant, train_len): 2x/1x ratio} (or {(variant, model, train_len): ratio}) -> evaluation
    records of one budget (1x: 5.0, or ``base``[key], times each seed's own 1 +- 2% and, with
    ``base_noise``, its own noise at each point), each seed's ratio multiplied by its own small noise,
    and the runs (params: 0.1M for "tiny", 0.8M for "small", 4.8M for "base")."""
    rng = np.random.default_rng(0)
    out, runs = [], []
    params = {"tiny": 1e5, "small": 8e5, "base": 4.8e6, "m": 8e5}
    for key, ratio in spec.items():
        variant, model, train_len = key if len(key) == 3 else (key[0], "m", key[1])
        for seed in range(seeds):
            rid = f"{variant}_{model}_{train_len}_{seed}"
            one = (base or {}).get(key, 5.0) * (1 + 0.02 * (seed - 1)) * float(np.exp(rng.normal(0, base_noise)))
            for mult, ppl in ((1.0, one), (2.0, one * ratio * float(np.exp(rng.normal(0, noise))))):
                out.append(dict(run_id=rid, encoding=variant, variant=variant, model=model, train_len=train_len,
                                seed=seed, status="completed", protocol="nonoverlapping", length=int(train_len * mult),
                                multiple=mult, ppl=ppl, token_set=f"t{train_len}", windowed=False))
            runs.append(dict(run_id=rid, model=model, train_len=train_len, params=params[model.split("/")[0].split("|")[0]], train_steps=600,
                             train_tokens=600 * 2048))
    runs = pd.DataFrame(runs)
    return sweep.with_budgets(pd.DataFrame(out), runs), runs


def words_along(evals, runs, axis_name):
    table = main_table(evals, 0.05)
    pts = P.points(table, runs, "2x/1x")
    changes = P.axis_changes(evals, pts, axis_name)
    out = {}
    for key, line in pts.groupby(P.line_keys(axis_name)):
        order = P.order_key(pts, axis_name)
        line = line.iloc[sorted(range(len(line)), key=lambda i: order(line[axis_name].iloc[i]))]
        mine = changes[changes["variant"] == key[1]]
        out[key[1]] = W.word(line, mine, axis_name, axis_name in P.NUMERIC)
    return pts, changes, out


def test_a_change_along_the_training_length_is_found_and_none_is_invented():
    evals, runs = map_records({("shifts", 32): 1.00, ("shifts", 64): 1.00, ("shifts", 128): 1.60,
                               ("steady", 32): 1.00, ("steady", 64): 1.00, ("steady", 128): 1.00})
    pts, changes, found = words_along(evals, runs, P.TRAIN_LEN)
    assert P.spanned(pts) == [P.TRAIN_LEN]
    shifts = changes[(changes["variant"] == "shifts") & ~changes["whole"]].set_index("to")
    assert shifts.loc[128, "change"] == pytest.approx(1.6, rel=0.02)  # one doubling, 64 -> 128
    assert shifts.loc[128, "change_lo"] > 1 and shifts["paired"].all()  # the points share seeds 0, 1, 2
    word, detail = found["shifts"]
    assert word == W.CHANGES
    # the whole line first where it moved (the sturdier evidence), then the step that moved; no other step
    assert detail.startswith("32 -> 128 (whole axis): flat to broken, rises x1.2") and "32 -> 64:" not in detail
    assert "; 64 -> 128: flat to broken, rises x1.6" in detail
    word, detail = found["steady"]
    assert word == W.HOLDS and detail.startswith("flat at every point")
    steady = changes[changes["variant"] == "steady"]
    assert all(axis.as_change(c).within(W.MARGIN) for _, c in steady.iterrows())


def test_each_step_is_said_with_its_1x_perplexity_at_both_points():
    """A ratio that falls because the baseline rose (1x 5 -> 8 while 2x stays near 8): the word rests on the
    ratio's test, and the step names the 1x at both points so that a reader sees why."""
    evals, runs = map_records({("worse", 64): 1.6, ("worse", 128): 1.0, ("worse", 256): 1.0},
                              base={("worse", 64): 5.0, ("worse", 128): 8.0, ("worse", 256): 8.0}, base_noise=0.02)
    pts, changes, found = words_along(evals, runs, P.TRAIN_LEN)
    assert pts.set_index(P.TRAIN_LEN)["ppl_1x"].round(0).to_dict() == {64: 5.0, 128: 8.0, 256: 8.0}
    word, detail = found["worse"]
    assert word == W.CHANGES and "64 -> 128: broken to flat, falls x0.6" in detail
    step = changes[(changes["from"] == 64) & (changes["to"] == 128)].iloc[0]
    # the 1x change tested over the seeds, with an interval of its own (each seed's 1x has its noise)
    assert step["base_change_lo"] < step["base_change"] < step["base_change_hi"] and step["base_change_lo"] > 1.3
    assert f"1x ppl {pts['ppl_1x'].iloc[0]:.2f} -> " in detail and f"(x{step['base_change']:.2f} per doubling [" in detail
    whole = changes[changes["whole"].astype(bool)].iloc[0]  # 64 -> 256: two doublings, x1.6 over them
    assert (whole["from"], whole["to"]) == (64, 256) and whole["base_change"] == pytest.approx(1.6 ** 0.5, rel=0.05)


def test_between_tokenizers_no_1x_change_is_said():
    """A BPE token's perplexity and a byte's are of different units: along the tokenizer the step names
    no 1x perplexities and no change of them (the points' table still lists each in its own unit)."""
    evals, runs = map_records({("r", "small", 64): 1.0, ("r", "small/bpe1024", 64): 1.6},
                              base={("r", "small", 64): 5.0, ("r", "small/bpe1024", 64): 40.0})
    pts, changes, found = words_along(evals, runs, P.TOKENIZER)
    assert sorted(pts["ppl_1x"].round(1)) == [5.0, 40.0]
    word, detail = found["r"]
    assert word == W.CHANGES and detail.startswith("byte -> bpe1024: flat to broken, rises x1.6") and "1x ppl" not in detail
    assert "base_change" not in changes


def test_model_size_is_ordered_by_parameters_and_changes_are_per_doubling_of_them():
    evals, runs = map_records({("r", "base", 64): 1.0, ("r", "tiny", 64): 1.0, ("r", "small", 64): 1.0})
    pts = P.points(main_table(evals, 0.05), runs, "2x/1x")
    assert P.spanned(pts) == [P.SIZE]
    assert sorted(pts[P.SIZE], key=P.order_key(pts, P.SIZE)) == ["tiny", "small", "base"]
    assert P.distance(pts, P.SIZE)("tiny", "small") == pytest.approx(3.0)  # 0.1M -> 0.8M: three doublings


def test_unpaired_points_are_compared_by_their_own_intervals():
    """Two points with no seed in common (trained apart): an unpaired change, still found."""
    evals, runs = map_records({("u", 32): 1.0, ("u", 64): 1.6})
    later = evals["train_len"] == 64
    evals.loc[later, "seed"] += 10
    _, changes, found = words_along(evals, runs, P.TRAIN_LEN)
    assert not changes["paired"].any() and found["u"][0] == W.CHANGES and "unpaired" in found["u"][1]


def test_corpus_and_tokenizer_are_read_from_the_model_name():
    assert P.coordinates("small@pydocs/bpe1024") == ("small", "pydocs", "bpe1024")
    assert P.coordinates("small") == ("small", P.DEFAULT_CORPUS, "byte")


def test_parameters_not_recorded_are_estimated_from_the_model_s_settings():
    """A report rebuilt from its records has configs, not parameter counts: within 10% of the recorded ones."""
    sizes = {"tiny": ({"d_model": 64, "n_layers": 2, "mlp_ratio": 4}, 120_000),
             "small": ({"d_model": 128, "n_layers": 4, "mlp_ratio": 4}, 821_504),
             "base": ({"d_model": 256, "n_layers": 6, "mlp_ratio": 4}, 4_800_000)}
    for model, recorded in sizes.values():
        assert P.approx_params(model) == pytest.approx(recorded, rel=0.1)
    runs = pd.DataFrame({"run_id": ["a", "b"], "run_dir": ["da", "db"], "params": [None, 5.0]})
    filled = P.with_params(runs, {"da": {"model": sizes["small"][0]}})
    assert filled["params"].iloc[0] == pytest.approx(P.approx_params(sizes["small"][0])) and filled["params"].iloc[1] == 5.0


def test_points_not_evaluated_at_the_verdict_s_multiple_span_no_axis():
    """A line whose second point has no statistic (extension's runs from scratch at 256, scored to 4x only)
    maps nothing: no map section of n/e rows."""
    evals, runs = map_records({("r", 32): 1.00, ("r", 64): 1.00})
    pts = P.points(main_table(evals, 0.05), runs, "2x/1x")
    assert P.spanned(pts) == [P.TRAIN_LEN]
    assert P.spanned(pts.assign(stat=[1.0 if L == 32 else float("nan") for L in pts[P.TRAIN_LEN]])) == []


def test_layer_patterns_are_held_fixed_and_are_no_size_axis():
    """A pure Gated DeltaNet model and a 3 : 1 hybrid (experiment=hybrids: small_gdn, small_hybrid) are two
    architectures, not two sizes: no line joins them, so the map spans no size axis (the hybrids' report
    once said nope 'changes' from small_hybrid to small_gdn, x0.47 per doubling of parameters)."""
    evals, runs = map_records({("nope", "small", 64): 1.0, ("nope", "base", 64): 1.0})
    configs = {f"d_{m}": {"model": {"mixers": mixers}} for m, mixers in (("small", ["gdn"]), ("base", ["gdn", "gdn", "gdn", "attention"]))}
    runs = P.with_params(runs.assign(run_dir=[f"d_{m}" for m in runs["model"]]), configs)
    pts = P.points(main_table(evals, 0.05), runs, "2x/1x")
    assert set(pts[P.PATTERN]) == {"gdn", "gdn-gdn-gdn-attention"} and P.spanned(pts) == []
    plain = P.points(main_table(evals, 0.05), P.with_params(runs.drop(columns="pattern"), {}), "2x/1x")
    assert (plain[P.PATTERN] == P.PLAIN).all() and P.spanned(plain) == [P.SIZE]  # attention in every layer: sizes
    assert P.PATTERN not in P.shown(plain) and P.PATTERN in P.shown(pts)


def test_the_rope_base_is_an_axis_whose_changes_are_per_doubling_of_the_base():
    """Runs at several RoPE bases (model labels ``small|base=<b>``, report/records/load.py): the base is a numeric
    axis of the map; a ratio that climbs from base 100 to 1600 (4 doublings) is a change of about
    (1.6)^(1/4) per doubling, and the line holds train_len and everything else fixed."""
    evals, runs = map_records({("rope", "small|base=100", 64): 1.00, ("rope", "small|base=1600", 64): 1.60})
    table = main_table(evals, 0.05)
    pts = P.points(table, runs, "2x/1x")
    assert sorted(pts[P.ROPE_BASE]) == ["100", "1600"] and set(pts[P.SIZE]) == {"small"}
    assert P.spanned(pts) == [P.ROPE_BASE]
    changes = P.axis_changes(evals, pts, P.ROPE_BASE)
    (step,) = changes.to_dict("records")  # two points: one step, the whole line
    assert (step["from"], step["to"]) == ("100", "1600")
    assert step["change"] == pytest.approx(1.6 ** 0.25, rel=0.02) and step["change_lo"] > 1

"""posbench/report/rope_base/retrieval.py: Men et al.'s bound (a necessary condition for retrieval) against
passkey cells whose needle distance is known. One model is the unit of evidence: a cell beyond the bound
that one seed retrieves contradicts it; a seed that retrieves within the bound at train_len and fails beyond
it there is the "superficial" case; a failure within the bound says nothing."""

import pandas as pd
from omegaconf import OmegaConf

from posbench.report.rope_base.retrieval import CONSISTENT, CONTRADICTED, UNTOLD, passkey_cells, verdicts
from posbench.report.rope_base.theory import men_supported_length

DEPTHS = (0.0, 0.5, 1.0)


def records(accuracy) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """Passkey records at train_len 64 of tiny models (head dimension 32) at bases 100 and 10^4, 2 seeds, 64
    examples a cell; ``accuracy(base, length, depth, seed)`` gives each seed's exact match."""
    rows, configs, runs = [], {}, []
    for base in (100.0, 10000.0):
        for seed in (0, 1):
            rid = f"b{base:g}s{seed}"
            configs[f"/runs/{rid}"] = OmegaConf.create({"model": {"d_model": 64, "n_heads": 2},
                                                       "task": {"name": "passkey", "digits": 5}})
            runs.append({"run_id": rid, "run_dir": f"/runs/{rid}"})
            for m in (1, 4):
                for depth in DEPTHS:
                    rows.append({"task": "passkey", "variant": "rope", "encoding": "rope", "model": f"tiny|base={base:g}",
                                 "train_len": 64, "seed": seed, "run_id": rid, "length": 64 * m, "multiple": float(m),
                                 "condition": depth, "examples": 64, "accuracy": accuracy(base, 64 * m, depth, seed)})
    return pd.DataFrame(rows), configs, pd.DataFrame(runs)


def test_each_cell_has_its_needle_distance_and_the_base_s_bound():
    cells = passkey_cells(*records(lambda *_: 1.0))
    low = cells[cells["rope_base"] == 100.0]
    assert (low["bound"] == men_supported_length(32, 100.0, max_len=64 * 64)).all()
    assert (cells[cells["rope_base"] == 10000.0]["bound"] == men_supported_length(32, 10000.0, max_len=64 * 64)).all()
    # the needle at depth 0 of a 64-token window lies further back than at depth 1 (passkey.py answer_distance)
    one = low[low["multiple"] == 1.0].set_index("depth")["distance"]
    assert one.tolist() == [54, 32, 10]
    assert (cells["beyond"] == (cells["distance"] > cells["bound"])).all()
    assert all(r == [0, 1] for r in cells["retrieved_by"]) and (cells["seeds"] == 2).all()


def test_one_seed_that_retrieves_beyond_the_bound_contradicts_it():
    """Seed 1 at base 100 retrieves everything, seed 0 nothing: the mean over seeds is undecided, but one model
    retrieving 54 tokens back, past a bound of a few dozen, is a counterexample. At 10^4 no cell lies beyond its
    bound of hundreds of tokens, so nothing can be told."""
    words = verdicts(passkey_cells(*records(lambda base, length, depth, seed: float(seed == 1)))).set_index("rope_base")
    bound = men_supported_length(32, 100.0, max_len=64 * 64)
    assert 0 < bound < 54 and words.loc[100.0, "word"] == CONTRADICTED and words.loc[100.0, "farthest_retrieved"] > bound
    assert words.loc[10000.0, "cells_beyond"] == 0 and words.loc[10000.0, "word"] == UNTOLD


def test_a_seed_barely_above_the_floor_in_one_of_many_cells_is_not_a_counterexample():
    """Any of a row's cells x seeds tests can give its word, so each seed's exact interval is Bonferroni-corrected
    over them (12 here). 42 of 64 examples right in one cell beyond the bound, by one seed: its plain 95%
    interval clears the floor of 50%, its corrected one does not, and the row cannot be told; 90% right clears both."""
    from posbench.report.rope_base.retrieval import exact_interval

    bound = men_supported_length(32, 100.0, max_len=64 * 64)

    def acc(right):
        def f(base, length, depth, seed):
            return right if (base, length, depth, seed) == (100.0, 64, 0.0, 1) else 0.0
        return f
    cells = passkey_cells(*records(acc(42 / 64)))
    one = cells[(cells["rope_base"] == 100.0) & (cells["length"] == 64) & (cells["depth"] == 0.0)].iloc[0]
    assert one["distance"] > bound and one["tests"] == 12 and one["retrieved_by"] == []
    plain = pd.DataFrame([{"seed": 1, "condition": 0.0, "accuracy": 42 / 64, "examples": 64}])
    assert exact_interval(plain, 0.05)[0] > one["floor"] > exact_interval(plain, 0.05 / 12)[0]  # retrieved uncorrected
    assert verdicts(cells).set_index("rope_base").loc[100.0, "word"] == UNTOLD
    clear = verdicts(passkey_cells(*records(acc(0.9)))).set_index("rope_base")
    assert clear.loc[100.0, "word"] == CONTRADICTED and clear.loc[100.0, "tests"] == 12


def test_retrieving_only_within_the_bound_is_the_superficial_case_and_failures_within_it_say_nothing():
    """A model that retrieves only within its base's bound at train_len (what Men et al. predict) reads
    consistent; a model that never learned the task is no evidence either way; the 10^4 model failing
    everywhere past 1x (broken there, within its bound) says nothing."""
    bound = {b: men_supported_length(32, b, max_len=64 * 64) for b in (100.0, 10000.0)}
    cells0 = passkey_cells(*records(lambda *_: 1.0))
    distance = {(L, d): x for L, d, x in zip(cells0["length"], cells0["depth"], cells0["distance"])}

    def acc(base, length, depth, seed):
        return float(distance[(length, depth)] <= bound[base] and (base == 100.0 or length == 64))
    words = verdicts(passkey_cells(*records(acc))).set_index("rope_base")
    assert words.loc[100.0, "word"] == CONSISTENT and words.loc[100.0, "seeds_superficial"] == 2
    assert words.loc[10000.0, "word"] == UNTOLD
    never = verdicts(passkey_cells(*records(lambda *_: 0.0))).set_index("rope_base")
    assert (never["word"] == UNTOLD).all() and (never["seeds_learned_at_1x"] == 0).all()


def test_a_bound_not_found_up_to_64x_is_shown_as_such_and_a_report_with_lm_runs_still_finds_the_passkey_cells():
    """Men et al.'s bound is searched up to 64 x train_len (theory.py): a base whose bound lies past that is
    printed "none up to", not as the search's end. In a report with LM runs, ctx.completed holds the LM runs
    alone: the section reads the passkey runs from every completed run (a report of both had crashed)."""
    from types import SimpleNamespace

    from posbench.report.rope_base.section import RopeBase

    recs, configs, runs = records(lambda *_: 1.0)
    recs = recs.assign(model=recs["model"].str.replace("base=10000", "base=10000000"), run_id=recs["run_id"])
    cells = passkey_cells(recs, configs, runs)
    huge = cells[cells["rope_base"] == 1e7]
    assert huge["bound_capped"].all() and not huge["beyond"].any() and not cells[cells["rope_base"] == 100.0]["bound_capped"].any()
    lm = pd.DataFrame([{"run_id": "lm0", "run_dir": "/runs/lm0", "model": "small", "train_len": 64}])
    written = {}
    out = SimpleNamespace(csv=lambda name, frame: written.setdefault(name, frame))
    ctx = SimpleNamespace(has_lm=True, ratio_column=None, completed=lm, task_records=recs, configs=configs,
                          all_completed=pd.concat([lm, runs.assign(model=[m for m in recs.drop_duplicates("run_id")["model"]],
                                                                   train_len=64)], ignore_index=True))
    section = RopeBase()
    assert section.applies(ctx)
    text = " ".join(getattr(b, "text", "") for b in section.build(ctx, out))
    assert "base 10000000 at train_len 64 (no bound up to 4096 tokens, m = 12)" in text and "**contradicted**" in text
    assert set(written) == {"rope_base_passkey.csv", "rope_base_passkey_words.csv"}

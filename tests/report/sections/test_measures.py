"""The three measures side by side (posbench/report/sections/measures.py) on made-up rows: identical
rankings agree with a correlation of 1, reversed ones disagree, two noisy seeds cannot tell, fewer
than three rows make no study, and the interval over seeds covers a known correlation in a simulation."""

import numpy as np
import pandas as pd
from omegaconf import OmegaConf
import pytest
from scipy import stats

from posbench.report.sections import measures
from posbench.report.sections.measures import RowSeeds, compare_rows, effective_lengths, spearman_rows, word

LENGTHS = np.array([16, 16, 32, 32, 64, 64], dtype=float)  # two conditions per length
THRESHOLD = 0.8


def accuracy_for(length: int, seeds: int) -> np.ndarray:
    """Task accuracy [seeds, cells] whose effective length is ``length`` (0: fails at the shortest)."""
    return np.tile(np.where(LENGTHS <= length, 0.95, 0.2), (seeds, 1))


def row(name, ratio, excess, length, seeds=3, noise=0.0, rng=None) -> RowSeeds:
    jitter = (lambda: rng.normal(0, noise, seeds)) if rng is not None else (lambda: np.zeros(seeds))
    return RowSeeds(name, np.log(ratio) + jitter(), excess + jitter() / 10, accuracy_for(length, seeds), LENGTHS)


def test_effective_lengths_follow_the_task_tables_rule():
    acc = np.array([[0.9, 0.9, 0.9, 0.7, 0.9, 0.9],  # fails at 32: 16
                    [0.9, 0.9, 0.9, 0.9, 0.9, 0.9],  # all pass: 64
                    [0.5, 0.9, 0.9, 0.9, 0.9, 0.9]])  # fails at once: 0, though longer lengths pass
    assert effective_lengths(acc, LENGTHS, THRESHOLD).tolist() == [16, 64, 0]


def test_spearman_rows_is_scipys_spearman_for_every_replicate():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(50, 5)), rng.normal(size=(50, 5))
    y[:, 0] = y[:, 1]  # a tie
    expected = [stats.spearmanr(a, b).statistic for a, b in zip(x, y)]
    assert np.allclose(spearman_rows(x, y), expected)
    assert np.isnan(spearman_rows(np.ones((1, 4)), x[:1, :4])).all()  # constant: no correlation


def test_identical_rankings_agree_with_a_correlation_of_one():
    rng = np.random.default_rng(0)
    rows = [row("a", 1.05, 0.03, 64, noise=0.005, rng=rng), row("b", 1.5, 0.02, 32, noise=0.005, rng=rng),
            row("c", 3.0, 0.01, 16, noise=0.005, rng=rng), row("d", 9.0, 0.0, 0, noise=0.005, rng=rng)]
    table, pairs = compare_rows(rows, THRESHOLD, replicates=400)
    assert (pairs["spearman"] == 1).all() and (pairs["word"] == "agree").all()
    assert (pairs["spearman_lo"] > 0).all()
    assert table["ratio_rank"].tolist() == table["key_excess_rank"].tolist() == [1, 2, 3, 4]
    assert (table["rank_spread"] == 0).all()
    assert table["ratio"].iloc[0] == pytest.approx(np.exp(np.log(1.05) + rows[0].log_ratio.mean() - np.log(1.05)))
    assert table["ratio_lo"].iloc[0] <= table["ratio"].iloc[0] <= table["ratio_hi"].iloc[0]


def test_a_reversed_ranking_disagrees():
    # the flattest ratio has the least key-token excess and the shortest effective length
    rows = [row("a", 1.05, 0.0, 0), row("b", 1.5, 0.01, 16), row("c", 3.0, 0.02, 32), row("d", 9.0, 0.03, 64)]
    table, pairs = compare_rows(rows, THRESHOLD, replicates=200)
    by = pairs.set_index(["measure_a", "measure_b"])
    assert by.loc[("ratio", "key_excess"), "spearman"] == -1 and by.loc[("ratio", "key_excess"), "word"] == "disagree"
    assert by.loc[("ratio", "effective_length"), "word"] == "disagree"
    assert by.loc[("key_excess", "effective_length"), "word"] == "agree"  # those two still rank alike
    assert set(table.loc[table["rank_spread"] == 3, "row"]) == {"a", "d"}  # best by one measure, worst by another
    assert "ranks differ most for `a`, `d`: 3 places" in measures._differ_words(table)


def test_a_measure_that_ties_every_row_has_no_correlation_and_says_why():
    rows = [row("a", 1.05, 0.03, 32), row("b", 1.5, 0.02, 32), row("c", 3.0, 0.01, 32)]
    table, pairs = compare_rows(rows, THRESHOLD, replicates=100)
    by = pairs.set_index(["measure_a", "measure_b"])
    assert np.isnan(by.loc[("ratio", "effective_length"), "spearman"])
    assert by.loc[("ratio", "effective_length"), "word"] == "cannot be told with 3 seeds"
    text = measures._verdict_words(pairs, table)
    assert "ratio on equal context and effective length **cannot be told with 3 seeds** (no correlation: every row " \
           "has the same effective length)" in text
    assert "ratio on equal context and key-token excess **agree** (rho 1.00 [1.00, 1.00])" in text


def test_two_noisy_seeds_cannot_tell():
    rng = np.random.default_rng(3)
    # the measures barely differ between rows next to the seeds' noise
    rows = [row(n, 2.0 + 0.01 * k, 0.01 + 0.0001 * k, 32, seeds=2, noise=0.5, rng=rng) for k, n in enumerate("abcd")]
    _, pairs = compare_rows(rows, THRESHOLD, replicates=400)
    assert pairs.loc[0, "word"] == "cannot be told with 2 seeds"
    assert pairs.loc[0, "spearman_lo"] < 0 < pairs.loc[0, "spearman_hi"]


def test_the_words_come_from_the_interval_alone():
    assert word(0.1, 0.9, 3) == "agree" and word(-0.9, -0.2, 3) == "disagree"
    assert word(-0.2, 0.9, 5) == "cannot be told with 5 seeds"
    assert word(1.0, 1.0, 1) == "cannot be told with 1 seed"  # one seed: nothing to resample


class FakeContext:
    """What study_rows reads of a ReportContext: made-up LM records with a window control, each
    seed's key-token counts, task records."""

    def __init__(self, variants, models=None, shapes=None):
        self.has_lm, self.multiple = True, 4.0
        evals, tasks, counts, runs = [], [], {}, []
        models = models or {}  # variant -> model name (default tiny), each of the tiny shape
        for k, v in enumerate(variants):
            model = models.get(v, "tiny")
            for seed in (0, 1):
                for m, ppl in ((1.0, 10.0), (4.0, 10.0 * (1.1 + k + 0.01 * seed))):
                    for variant, p in ((v, ppl), (v + "+swaL", 10.5 if m > 1 else 10.0)):
                        evals.append(dict(protocol="nonoverlapping", variant=variant, model=model, train_len=16,
                                          seed=seed, multiple=m, length=int(16 * m), ppl=p, status="completed",
                                          run_id=f"{v}-{seed}", windowed=variant.endswith("+swaL")))
                for L in (16, 32, 64):
                    tasks.append(dict(task="passkey", variant=v, encoding=v, model=model, train_len=16, seed=seed,
                                      length=L, multiple=L / 16, condition=0.5, accuracy=0.95 if L <= 64 >> k else 0.1))
                runs.append(dict(run_id=f"{v}-{seed}", run_dir=f"/runs/{v}-{seed}", model=model))
            cell = ("nonoverlapping", v, model, 16)
            counts[(cell, 4.0, 64)] = [(s, SimpleCounts(100 - 10 * k, 10)) for s in (0, 1)]
        self.evals, self.task_records, self.completed = pd.DataFrame(evals), pd.DataFrame(tasks), pd.DataFrame(runs)
        shapes = shapes or {}  # model name -> (d_model, mixers); default the tiny shape, attention only
        self.configs = {r["run_dir"]: OmegaConf.create({"model": {
            "d_model": shapes.get(r["model"], (64, ["attention"]))[0], "n_layers": 2, "n_heads": 2,
            "mixers": shapes.get(r["model"], (64, ["attention"]))[1]}}) for r in runs}
        self.key_counts = type("Read", (), {"counts": counts})()
        self.options = type("Options", (), {"threshold": THRESHOLD})()
        self._derived = {}

    def derived(self, key, compute):
        return self._derived.setdefault(key, compute())


class SimpleCounts:
    def __init__(self, key, mirror):
        self.key, self.mirror, self.tokens = np.array([key]), np.array([mirror]), np.array([1000])


def test_rows_of_a_report_are_matched_by_variant_and_the_section_needs_three():
    ctx = FakeContext(["alibi", "nope", "rope"])
    studies = measures.study_rows(ctx)
    assert list(studies) == [("nonoverlapping", "tiny", 16, "passkey")]
    rows = studies[("nonoverlapping", "tiny", 16, "passkey")]
    assert [r.name for r in rows] == ["alibi", "nope", "rope"]
    # alibi: ratio 1.1 / min(1x 10, window 10.5) on seed 0; excess (100 - 10) / 1000
    assert rows[0].log_ratio[0] == pytest.approx(np.log(1.1)) and rows[0].key_excess[0] == pytest.approx(0.09)
    assert effective_lengths(rows[1].accuracy, rows[1].lengths, THRESHOLD)[0] == 32
    assert measures.Measures().applies(ctx)
    assert not measures.Measures().applies(FakeContext(["alibi", "rope"]))  # two rows: no section


def test_a_recurrent_model_of_the_same_shape_joins_the_attention_rows_study():
    """Each model name is a panel of its own elsewhere; here a pattern of the tiny shape (tiny_gdn) is a
    row of the tiny study, named with its model, so that two attention rows and it make a study; a model
    of another width stays out of it."""
    ctx = FakeContext(["alibi", "nope", "rope"], models={"nope": "tiny_gdn"}, shapes={"tiny_gdn": (64, ["gdn"])})
    assert measures.model_groups(ctx) == {"tiny": ("tiny", True), "tiny_gdn": ("tiny", False)}
    (study,) = measures.study_rows(ctx)
    assert study == ("nonoverlapping", "tiny", 16, "passkey")
    assert [r.name for r in measures.study_rows(ctx)[study]] == ["alibi", "nope (tiny_gdn)", "rope"]
    wider = FakeContext(["alibi", "nope", "rope"], models={"nope": "tiny_gdn"}, shapes={"tiny_gdn": (128, ["gdn"])})
    assert measures.model_groups(wider)["tiny_gdn"] == ("tiny_gdn", False) and not measures.study_rows(wider)


def test_patterns_without_an_attention_model_of_their_shape_are_each_named():
    """Three recurrent patterns of one shape and no attention model: the study takes the shortest name,
    and every row still names its model (none reads as a bare attention row)."""
    ctx = FakeContext(["a", "b", "c"], models={"a": "s_gdn", "b": "s_mamba2", "c": "s_mamba3"},
                      shapes={m: (64, [m[2:]]) for m in ("s_gdn", "s_mamba2", "s_mamba3")})
    ((_, group, _, _), rows), = measures.study_rows(ctx).items()
    assert group == "s_gdn" and [r.name for r in rows] == ["a (s_gdn)", "b (s_mamba2)", "c (s_mamba3)"]


def noisy_rows(true_a, true_b, seeds, sd, rng) -> list[RowSeeds]:
    """Rows whose two LM measures have the true values ``true_a`` (as minus the log ratio) and ``true_b``
    (the key-token excess, in hundredths), each seed off by normal noise of ``sd``."""
    return [RowSeeds(str(i), -(a + rng.normal(0, sd, seeds)), (b + rng.normal(0, sd, seeds)) / 100,
                     accuracy_for(16, seeds), LENGTHS) for i, (a, b) in enumerate(zip(true_a, true_b))]


def test_the_correlation_interval_covers_what_three_seeds_give_on_average():
    """12 rows a unit apart, a second measure with two neighbouring pairs swapped (true Spearman 0.99), 3 seeds
    with noise sd 2: the correlation of the 3-seed means is 0.90 on average, and the 95% interval covers that
    in most studies, while it almost never holds the noise-free 0.99 (the module doc says which it covers)."""
    rng = np.random.default_rng(7)
    n, seeds, sd = 12, 3, 2.0
    a = np.arange(n, dtype=float)
    b = a.copy()
    b[[1, 2]], b[[5, 6]] = b[[2, 1]], b[[6, 5]]
    rho = stats.spearmanr(a, b).statistic
    on_average = np.mean([stats.spearmanr(a + rng.normal(0, sd, (seeds, n)).mean(0),
                                          b + rng.normal(0, sd, (seeds, n)).mean(0)).statistic for _ in range(3000)])
    covered, true_covered, trials = 0, 0, 80
    for t in range(trials):
        p = compare_rows(noisy_rows(a, b, seeds, sd, rng), THRESHOLD, replicates=300, rng_seed=t)[1].iloc[0]
        covered += p["spearman_lo"] <= on_average <= p["spearman_hi"]
        true_covered += p["spearman_lo"] <= rho <= p["spearman_hi"]
    assert rho == pytest.approx(0.986, abs=1e-3) and on_average == pytest.approx(0.90, abs=0.02)
    assert covered >= 0.88 * trials and true_covered <= 0.2 * trials


def test_uncorrelated_measures_rarely_get_a_word():
    """Where the rows' true measures are uncorrelated (Spearman 0), agree or disagree is a false word: it
    comes out in few studies at 3 seeds (the nominal rate is 5%)."""
    rng = np.random.default_rng(3)
    n = 12
    a = np.arange(n, dtype=float)
    b = next(p for p in (rng.permutation(n).astype(float) for _ in range(10000))
             if abs(stats.spearmanr(a, p).statistic) < 1e-9)
    words = [compare_rows(noisy_rows(a, b, 3, 1.0, rng), THRESHOLD, replicates=300, rng_seed=t)[1].iloc[0]["word"]
             for t in range(80)]
    assert sum(w in (measures.AGREE, measures.DISAGREE) for w in words) <= 0.1 * len(words)


def test_each_row_s_interval_covers_its_mean_at_three_seeds():
    """A row's ratio and key-token excess have Student's t intervals over its seeds: at 3 seeds they cover the
    true values in about 95% of rows, where the lowest-to-highest seed range (what the bootstrap's percentiles
    of a 3-seed mean are) covers 75%; the effective length's range reads its rule at each cell's interval's ends."""
    rng = np.random.default_rng(11)
    trials, ratio_in, excess_in, ranged = 600, 0, 0, 0
    for _ in range(trials):
        r = RowSeeds("x", np.log(1.5) + rng.normal(0, 0.2, 3), 0.04 + rng.normal(0, 0.01, 3), accuracy_for(32, 3), LENGTHS)
        _, lo, hi = measures.row_interval(r, "ratio", THRESHOLD)
        ratio_in += lo <= 1.5 <= hi
        _, lo, hi = measures.row_interval(r, "key_excess", THRESHOLD)
        excess_in += lo <= 0.04 <= hi
        ranged += r.key_excess.min() <= 0.04 <= r.key_excess.max()
    assert ratio_in >= 0.92 * trials and excess_in >= 0.92 * trials and ranged <= 0.8 * trials
    noisy = RowSeeds("y", np.zeros(3), np.zeros(3), np.array([[0.95, 0.95, 0.9, 0.7, 0.2, 0.2],
                                                              [0.95, 0.95, 0.9, 0.9, 0.2, 0.2],
                                                              [0.95, 0.95, 0.9, 0.95, 0.2, 0.2]]), LENGTHS)
    assert measures.row_interval(noisy, "effective_length", THRESHOLD) == (32.0, 16.0, 32.0)
    assert np.isnan(measures.row_interval(RowSeeds("z", np.zeros(1), np.zeros(1), accuracy_for(16, 1), LENGTHS),
                                          "ratio", THRESHOLD)[1])


def test_attention_models_of_one_shape_are_other_settings_and_stay_apart():
    """Two attention-only names of one shape are two settings of the report (a corpus, a RoPE base): never
    one study; a pattern of that shape then does not know which it shares and stays alone too."""
    ctx = FakeContext(["alibi", "nope", "rope"], models={"alibi": "tiny@pydocs", "nope": "tiny_gdn"},
                      shapes={"tiny_gdn": (64, ["gdn"])})
    assert measures.model_groups(ctx) == {"tiny": ("tiny", True), "tiny@pydocs": ("tiny@pydocs", True),
                                          "tiny_gdn": ("tiny_gdn", False)}
    assert not measures.study_rows(ctx)  # no study of three rows


def test_a_pattern_name_of_two_shapes_stays_alone_whatever_the_runs_order():
    """experiment=learned_tasks names its Gated DeltaNet row small_gdn at the tiny shape and, for one task, at
    the small: which study it joined would depend on which run came first, so it joins none."""
    from omegaconf import OmegaConf

    for order in (1, -1):
        ctx = FakeContext(["alibi", "nope", "rope"], models={"nope": "tiny_gdn"}, shapes={"tiny_gdn": (64, ["gdn"])})
        dirs = [d for d, m in zip(ctx.completed["run_dir"], ctx.completed["model"]) if m == "tiny_gdn"]
        ctx.configs[dirs[0]] = OmegaConf.create({"model": {"d_model": 128, "n_layers": 2, "n_heads": 2, "mixers": ["gdn"]}})
        ctx.completed = ctx.completed.iloc[::order]
        assert measures.model_groups(ctx)["tiny_gdn"] == ("tiny_gdn", False)


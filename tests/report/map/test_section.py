"""The map section (posbench/report/map/section.py): applies only where the runs span an axis other
than the budget; writes its points, changes, words and one figure per axis."""

from types import SimpleNamespace

from posbench.report.analysis import sweep
from posbench.report.map.section import Map, map_frames
from posbench.report.analysis.tables import main_table
from tests.helpers import run_section
from tests.report.analysis.test_points import map_records


def context(evals, runs):
    table = main_table(evals, 0.05)
    store = {}
    return SimpleNamespace(has_lm=True, has_budgets=False, ratio_column="2x/1x", table=table, completed=runs, evals=evals,
                           token_sets={}, multiple=None, configs={}, budget_trends=None, options=SimpleNamespace(tolerance=0.05),
                           derived=lambda key, compute: store.setdefault(key, compute()) if key not in store else store[key])


def test_the_map_of_a_training_length_axis(tmp_path):
    evals, runs = map_records({("shifts", 32): 1.0, ("shifts", 64): 1.0, ("shifts", 128): 1.6,
                               ("steady", 32): 1.0, ("steady", 64): 1.0, ("steady", 128): 1.0})
    ctx = context(evals, runs)
    assert Map().applies(ctx)
    md, written = run_section(Map, ctx, tmp_path)
    assert sorted(written) == ["map_changes.csv", "map_points.csv", "map_train_len.png", "map_words.csv"]
    assert (tmp_path / "map_train_len.png").stat().st_size > 0
    words = map_frames(ctx)["words"].set_index("variant")
    assert words.loc["shifts", "word"] == "changes" and words.loc["steady", "word"] == "holds across the axis"
    assert md.startswith("## The map") and "64 -> 128: flat to broken, rises x1.60" in md
    # the table's perplexity at 1x beside each point's statistic (the made-up records' 1x: 5.0), its change in the csv
    assert "| 1x ppl " in md and "| 5.00 [" in md
    import pandas as pd

    written_changes = pd.read_csv(tmp_path / "map_changes.csv")
    assert {"base_change", "base_change_lo", "base_change_hi", "base_p"} <= set(written_changes.columns)
    assert written_changes["base_change"].notna().all()


def test_no_map_where_the_runs_differ_only_in_budget():
    """One model, one training length, one corpus: the budget section says it all, the map is absent."""
    evals, runs = map_records({("a", 64): 1.0, ("b", 64): 1.5})
    assert not Map().applies(context(evals, runs))
    assert sweep.BUDGET in evals  # records of one budget per row, as the report's main table reads


def test_a_map_report_opens_with_the_map_as_one_table():
    """The answer first: one row per encoding, one column per point (sizes by parameters, the house's corpus
    and tokenizer first, then train_len), each cell the verdict word, statistic [95%] and 1x perplexity,
    coloured by class."""
    import pandas as pd

    from posbench.report.analysis import points as P
    from posbench.report.map.section import answer_table

    def pt(variant, size, train_len, verdict, stat, corpus="-", params=8e5):
        return {"protocol": "nonoverlapping", "variant": variant, P.SIZE: size, P.CORPUS: corpus, P.TOKENIZER: "byte",
                P.ROPE_BASE: P.NO_BASE, P.TRAIN_LEN: train_len, P.PATTERN: P.PLAIN, "params": params,
                "verdict": verdict, "label": "flat, local (gains nothing past train_len)" if verdict == "flat" else verdict,
                "stat": stat, "stat_lo": stat * 0.9, "stat_hi": stat * 1.1, "ppl_1x": 5.0}

    pts = pd.DataFrame([pt("rope", "small", 128, "broken", 4.0), pt("rope", "small", 64, "broken", 4.5),
                        pt("rope", "tiny", 64, "broken", 6.0, params=1e5), pt("alibi", "small", 64, "flat", 1.0)])
    shown, classes = answer_table(pts)
    assert list(shown.columns) == ["encoding", "tiny 64", "small 64", "small 128"]
    row = shown.set_index("encoding")
    assert row.at["rope", "small 64"] == "broken 4.50 [4.05, 4.95]; 1x 5.00"
    assert row.at["alibi", "small 64"] == "flat, local 1.00 [0.90, 1.10]; 1x 5.00" and row.at["alibi", "tiny 64"] == ""
    assert classes.set_index(shown["encoding"]).at["rope", "tiny 64"] == "v-broken"

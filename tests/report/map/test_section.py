"""The map section (posbench/report/map/section.py): applies only where the runs span an axis other
than the budget; writes its points, changes, words and one figure per axis."""

from types import SimpleNamespace

from posbench.report.budget import sweep
from posbench.report.map.section import Map, map_frames
from posbench.report.analysis.tables import main_table
from tests.helpers import run_section
from tests.report.map.test_points import map_records


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

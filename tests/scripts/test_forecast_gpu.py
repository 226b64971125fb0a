"""scripts/forecast_gpu.py on the committed records: the CPU map's records (results/map/records/lines.parquet)
and the GPU report's table give the committed forecast of the GPU point (results/map/forecast_gpu.csv), and a
table of more than one point is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

RESULTS = Path(__file__).resolve().parents[2] / "results"


@pytest.mark.slow  # the map's 280 runs read from their records: about 15 s
def test_the_committed_records_give_the_committed_forecast(script, tmp_path):
    assert script("forecast_gpu").main([str(RESULTS / "map" / "records" / "lines.parquet"),
                                        str(RESULTS / "map-gpu" / "table.csv"), str(tmp_path)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "forecast_gpu.csv"), pd.read_csv(RESULTS / "map" / "forecast_gpu.csv"))
    made, committed = ((p / "forecast_gpu.md").read_text() for p in (tmp_path, RESULTS / "map"))
    assert made.split("\n\n", 2)[2] == committed.split("\n\n", 2)[2]  # all but the command line and its seconds


def test_a_table_of_more_than_one_point_is_one_line_and_exit_2(script, tmp_path, capsys):
    table = pd.read_csv(RESULTS / "map-gpu" / "table.csv")
    two = pd.concat([table, table.assign(train_len=table["train_len"] * 2)], ignore_index=True)
    two.to_csv(tmp_path / "table.csv", index=False)
    assert script("forecast_gpu").main([str(tmp_path / "missing.parquet"), str(tmp_path / "table.csv"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("forecast_gpu: ") and "holds more than one point" in err and err.count("\n") == 1
    assert not (tmp_path / "forecast_gpu.csv").exists()

"""posbench/report/map/figure.py: one panel per line's other settings, log x on a numeric axis, one
tick per category on the corpus axis."""

import pandas as pd

from posbench.report.map import points as P
from posbench.report.map.figure import plot_axis


def pts(axis_name, values):
    rows = []
    for variant, stat in (("a", 1.0), ("b", 1.5)):
        for v in values:
            p = {"protocol": "nonoverlapping", "variant": variant, P.SIZE: "small", P.CORPUS: "stdlib", P.TOKENIZER: "byte",
                 P.TRAIN_LEN: 64, "params": 8e5, "stat": stat, "stat_lo": stat * 0.95, "stat_hi": stat * 1.05}
            p[axis_name] = v
            rows.append(p)
    return pd.DataFrame(rows)


def test_a_figure_per_axis(tmp_path):
    plot_axis(pts(P.TRAIN_LEN, [32, 64, 128]), P.TRAIN_LEN, 0.05, tmp_path / "map_train_len.png")
    plot_axis(pts(P.CORPUS, ["stdlib", "pydocs"]), P.CORPUS, 0.05, tmp_path / "map_corpus.png")
    assert (tmp_path / "map_train_len.png").stat().st_size > 0 and (tmp_path / "map_corpus.png").stat().st_size > 0

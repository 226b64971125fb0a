"""posbench/report/map/figure.py: one panel per line's other settings, log x on a numeric axis, one
tick per category on the corpus axis."""

import pandas as pd

from posbench.report.analysis import points as P
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


def test_the_1x_perplexity_is_drawn_below_the_statistic_except_between_tokenizers(tmp_path):
    """A second row of panels holds the same points' 1x perplexity with its band (a statistic that falls
    because its baseline rose shows as such); between tokenizers the perplexities are per token of
    different units, so that axis keeps one row."""
    from PIL import Image

    def height(frame, axis_name, name):
        plot_axis(frame, axis_name, 0.05, tmp_path / name)
        return Image.open(tmp_path / name).size[1]

    def with_ppl(frame):
        return frame.assign(ppl_1x=5.0, ppl_1x_lo=4.8, ppl_1x_hi=5.2)

    one = height(pts(P.TRAIN_LEN, [32, 64, 128]), P.TRAIN_LEN, "a.png")
    assert height(with_ppl(pts(P.TRAIN_LEN, [32, 64, 128])), P.TRAIN_LEN, "b.png") > 1.7 * one
    tokenizers = pts(P.TOKENIZER, ["byte", "bpe1024"])
    assert height(with_ppl(tokenizers), P.TOKENIZER, "c.png") == height(tokenizers, P.TOKENIZER, "d.png")


def test_a_row_keeps_its_marker_in_every_panel(tmp_path, monkeypatch):
    """The legend is drawn in one panel: a row's marker must not depend on which rows a panel has."""
    from posbench.report.map import figure

    drawn = []
    monkeypatch.setattr(figure.plot, "save", lambda fig, path: drawn.append(fig))
    one = pts(P.TRAIN_LEN, [32, 64])
    other = pts(P.TRAIN_LEN, [32, 64]).query("variant == 'b'").assign(**{P.CORPUS: "pydocs"})  # b alone in its panel
    plot_axis(pd.concat([one, other], ignore_index=True), P.TRAIN_LEN, 0.05, tmp_path / "m.png")
    markers = {}
    for ax in drawn[0].axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                markers.setdefault(line.get_label(), set()).add(line.get_marker())
    assert markers.keys() == {"a", "b"} and all(len(m) == 1 for m in markers.values())
    assert markers["a"] != markers["b"]

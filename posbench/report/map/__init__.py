"""The map: each encoding's verdict at every point of every axis the runs span (training length,
model size, corpus, tokenizer; the training budget is its own section, read here from its trend),
the change of the verdict's statistic along each axis tested, and one word per encoding and axis:
holds across the axis, changes, or cannot be told (posbench/report/map/words.py).

words.py   the per-axis word from a line's verdicts and its tested changes
figure.py  the verdict statistic against each axis, one line per encoding with its 95% band
section.py the map section

The points (one per main-table row) and the lines through them along each axis are
posbench/report/analysis/points.py: the forecast reads them too.
"""

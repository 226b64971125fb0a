"""Forecasts past the data, each with its backtest: a power law along one axis fitted to the map's or the
budget study's points, checked on the line's largest point before it may be used past the data.

law.py     the law, its interval, the backtest and the refusal of a forecast with too few points
lines.py   the points a forecast is fitted to: each row's lines along the numeric axes
section.py the report section and the --forecast requests
"""

"""The report's shared analysis, below every topic: the main table and its statistics (tables.py),
the intervals and tests (bootstrap.py), the significance level (stats.py), the verdict classes and
their thresholds (verdicts.py) and a statistic's change along an axis (axis.py). It imports no
section, topic or drawing module: a topic reads its numbers from here."""

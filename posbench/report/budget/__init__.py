"""The training budget: how far each run got in learning, and the budget as an axis (each row's
verdict at every budget its runs were trained for, and its trend).

figure.py       1x perplexity and the longest ratio against training tokens, and the change per doubling
section.py      the budget and budget_axis sections

The frames other topics read too are in posbench/report/analysis/: convergence.py (per run, the 1x
validation loss's fall over its last doubling of steps, the spread warning, the during-training
verdicts) and sweep.py (per row and budget, the main table at that budget, the trend per doubling
paired by seed, the 1x loss's distance from its fitted floor).
"""

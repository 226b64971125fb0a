"""The synthetic tasks in a report: does a model use far context, and do the algorithmic tasks
generalise beyond the training range?

effective_length.py  claimed vs effective length (RULER's and NoLiMa's rules)
algorithmic.py       the algorithmic suite by Chomsky level, Ruoss et al.'s score beyond training
figure.py            accuracy against evaluation length, and one length x condition heatmap per task
section.py           the tasks and algorithmic sections

The task records and attention diagnostics as tables (accuracy per length with intervals over examples
and seeds, runs that never learned, the heatmaps' cells) are posbench/report/analysis/task_frames.py:
the headline and attention sections read them too.
"""

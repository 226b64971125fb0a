"""The synthetic tasks in a report: does a model use far context, and do the algorithmic tasks
generalise beyond the training range?

frames.py            task records and attention diagnostics into tables: accuracy per length with
                     intervals over examples and seeds, runs that never learned, the heatmaps' cells
effective_length.py  claimed vs effective length (RULER's and NoLiMa's rules)
algorithmic.py       the algorithmic suite by Chomsky level, Ruoss et al.'s score beyond training
figure.py            accuracy against evaluation length, and one length x condition heatmap per task
section.py           the tasks and algorithmic sections
"""

"""The report's shared analysis, below every topic: what two or more topics (or the context) read.

The main table and its statistics (tables.py), the intervals and tests (bootstrap.py), the significance
level (stats.py), the verdict classes and their thresholds (verdicts.py), a statistic's change along an
axis (axis.py); the frames several topics read: each run's convergence and the during-training verdicts
(convergence.py), the verdicts at every training budget and their trends (sweep.py), the map's points and
lines (points.py), the task records and attention diagnostics as tables (task_frames.py), the tokenizer
comparisons (tokenizers.py), the learning-rate choice (tuning.py), EffRem summaries
(effective_remembrance.py); and the numbers and words the opening tables and the summary share
(headline.py, prose.py). It imports only posbench/report/records/ below it, no section, topic or drawing
module: a topic reads its numbers from here.
"""

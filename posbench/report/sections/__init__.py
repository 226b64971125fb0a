"""The built-in report sections in the order the report shows them: the modules of this package (a
section that is a topic of its own) and the ``section.py`` of each topic package of posbench/report/
(its folder named below), found by one registry (``SECTIONS``, posbench/report/section.py):

    intro (0)             title and one line on what the runs are
    map_answer (3)        map/: where the runs span a map, the answer first: every encoding's verdict at every point in one table
    headline (5)          the answer first: every encoding's verdict and numbers in one table, then the contents
    checkpoints (7)       Hugging Face checkpoints scored by posbench-eval-hf: which, how read, the public-corpus caveat
    summary (10)          how the numbers were scored, the training budget and each panel's verdicts, as lists
    perplexity (20)       the main table (table.csv/.md/.tex, runs.csv, pairs.csv, evaluations.csv.gz) and its figure
    key_tokens (21)       key_tokens/: the tokens that need context past train_len: their share, perplexity and far-context gain
    comparison (25)       comparison/: only with --compare / --baseline: the rows asked for as paired differences (comparison.png/.csv)
    tokenizers (25)       runs of several tokenizers: whether a verdict carries over from bytes, bits per byte
    glance (30)           the ratio heatmap
    convergence (39)      convergence.csv: every run's budget and last-doubling fall (language models and task runs); no text
    budget (40)           budget/: how far each run got in learning (read from convergence.csv's frame), the spread warnings
    during_training (41)  1x perplexity and ratio against training tokens (eval.during_training)
    budget_axis (42)      budget/: verdicts at every training budget, their trends, the 1x loss's floor (budgets.csv)
    map (43)              map/: verdicts across training length, size, corpus, tokenizer, RoPE base: per axis holds / changes / cannot be told
    rope_base (44)        rope_base/: runs at several RoPE bases: the measured onset of the climb against Liu et al.'s and Men et al.'s predictions
    forecast (45)         forecast/: a power law per row and axis, its backtest, and forecasts past the data where it passed
    extension (50)        extension/: fine-tuned context extension against steps (extend runs)
    tuned_extenders (51)  RoPE scalings tuned at evaluation on equal budgets: default against tuned, the held-out band
    decision_guide (55)   which RoPE context extension to use, per target length
    tasks (60)            tasks/: synthetic tasks: accuracy, effective length, heatmaps
    algorithmic (65)      tasks/: the algorithmic suite by Chomsky level
    measures (67)         ratio on equal context, key-token excess and task effective length side by side: rank correlations
    attention (70)        attention distance and entropy (eval.attention_stats)
    per_position (80)     loss by position at the longest length
    training_curves (90)  training and validation loss against step
    not_in_tables (100)   diverged, failed, unevaluated, unfinished and unreadable runs
    tuning (110)          the learning-rate grid's tuned table
    not_compared (120)    records scored on other tokens
    provenance (130)      commands, environment, the settings shared and those that differ

A section here draws its own figure in its module (perplexity.py's plot_ppl_vs_length); a topic with
frames, a figure or words of its own is one folder, posbench/report/<topic>/, with its section in
section.py (docs/extending.md, "A report topic"). Each section registers itself with
``@SECTIONS.register(name)``; the "Files" list that closes a report is made from the sections that ran.
"""

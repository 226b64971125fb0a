"""The built-in report sections, one module each, in the order the report shows them:

    intro (0)            title and one line on what the runs are
    headline (5)         the answer first: every encoding's verdict and numbers in one table, then the contents
    summary (10)         how the numbers were scored, the training budget and each panel's verdicts, as lists
    perplexity (20)      the main table (table.csv/.md/.tex, runs.csv, pairs.csv, evaluations.csv) and its figure
    comparison (25)      only with --compare / --baseline: the rows asked for as paired differences (comparison.png/.csv)
    glance (30)          the ratio heatmap
    budget (40)          how far each run got in learning (convergence.csv), the spread warnings
    budget_axis (42)     verdicts at every training budget, their trends, the 1x loss's floor (budgets.csv)
    map (43)             verdicts across training length, size, corpus, tokenizer: per axis holds / changes / cannot be told
    during_training (45) 1x perplexity and ratio against training tokens (eval.during_training)
    extension (50)       fine-tuned context extension against steps (extend runs)
    tasks (60)           synthetic tasks: accuracy, effective length, heatmaps
    attention (70)       attention distance and entropy (eval.attention_stats)
    per_position (80)    loss by position at the longest length
    training_curves (90) training and validation loss against step
    not_in_tables (100)  diverged, failed, unevaluated, unfinished and unreadable runs
    tuning (110)         the learning-rate grid's tuned table
    not_compared (120)   records scored on other tokens
    provenance (130)     commands, environment and every run's config

Each registers itself with ``@SECTIONS.register(name)`` (posbench/report/section.py); the "Files"
list that closes a report is made from the sections that ran.
"""

"""Tables, plots and a readable report from run directories: ``posbench-report RUNS_DIR [--out DIR]``.

Reads every ``metrics.json`` below RUNS_DIR (the report never trains or evaluates) and writes,
into DIR (default RUNS_DIR/report), report.md and a self-contained report.html (images embedded,
no network), and beside them the tables (CSV, markdown, LaTeX) and figures (PNG) of its sections:
the "Files" list at the end of every report names each one and what it holds. The sections are
the modules of posbench/report/sections/ and the section.py of each topic package (budget/, map/,
extension/, tasks/: a topic is one folder); another package can add its own (posbench/report/section.py).
"""

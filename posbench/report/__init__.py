"""Tables, plots and a readable report from run directories: ``posbench-report RUNS_DIR [--out DIR]``.

Reads every ``metrics.json`` below RUNS_DIR (the report never trains or evaluates) and writes,
into DIR (default RUNS_DIR/report), report.md and report.html (no network; each figure linked to the
PNG beside it, the one copy), and beside them the tables (CSV, markdown, LaTeX) and figures (PNG; with
``--vector`` also PDF) of its sections:
the "Files" list at the end of every report names each one and what it holds. The sections are
the modules of posbench/report/sections/ and the section.py of each topic package (budget/, map/,
extension/, tasks/: a topic is one folder); another package can add its own (posbench/report/section.py).

The report in layers, bottom to top (the ``report`` contract of .importlinter keeps it so):
records/ (the input: runs read and checked, a committed report's records, what each row is) <
analysis/ and drawing/ (what two or more topics read: statistics, verdicts, shared frames; how rows
are drawn) < context.py (the records and shared frames of one report) < section.py < the topics
(budget/, comparison/, extension/, forecast/, key_tokens/, map/, rope_base/, tasks/, sections/: none
imports another) < pipeline.py and index.py.
"""

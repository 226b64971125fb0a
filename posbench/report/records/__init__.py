"""The report's input, the floor every other part of report/ stands on: run directories read once and
checked (load.py, checks.py, selection.py), a committed report's records and manifest read back
(committed.py, manifest.py), how the runs were made (provenance.py), and what each row is (rows.py).
Nothing here imports from the rest of report/; scripts that read records come through here."""

"""The rows asked for with ``posbench-report --compare / --baseline``, as paired differences of
log-perplexity against length with their intervals.

frames.py  the request, the paired differences and their labels
figure.py  every asked-for pair's difference against length
section.py the comparison section (comparison.png / comparison.csv)
"""

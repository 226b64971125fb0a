#!/usr/bin/env bash
# Rebuild committed reports from the records they kept, with the current statistics and layout
# (posbench-report FOLDER --rebuild, docs/report.md), each with the folders its manifest says it joined:
#
#   bash scripts/rebuild_reports.sh                      # every report under results/
#   bash scripts/rebuild_reports.sh results/budget ...   # these
#
# then results/index.html and the table in results/README.md (scripts/results_index.py), and
# `git diff --stat results/` says what changed. A rebuild never changes a perplexity (they are
# records), only what the current code computes from them; rebuilding twice changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${POSBENCH_BIN:-.venv/bin}
if [ $# -gt 0 ]; then
    folders=("$@")
else
    mapfile -t folders < <(find results \( -name manifest.json.gz -o -name manifest.json \) -exec dirname {} \; | sort -u)
fi
for folder in "${folders[@]}"; do
    [ -f "$folder/manifest.json.gz" ] || [ -f "$folder/manifest.json" ] || {
        echo "rebuild_reports: $folder has no manifest.json.gz (not a committed report)" >&2; exit 2; }
    mapfile -t joins < <("$BIN/python" -c 'import sys
from posbench.report.records.manifest import manifest_data
for j in manifest_data(sys.argv[1]).get("joins") or []:
    print(j["folder"])' "$folder")
    args=()
    for j in "${joins[@]}"; do args+=(--with "$j"); done
    echo "[rebuild_reports $(date -u +%H:%M:%SZ)] posbench-report $folder --rebuild ${args[*]}"
    "$BIN/posbench-report" "$folder" --rebuild "${args[@]}" >/dev/null
done
# the page over every study (results/index.html, the table in results/README.md) follows the reports it links
"$BIN/python" scripts/results_index.py results

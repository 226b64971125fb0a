#!/usr/bin/env bash
# The demo: install, train five encodings (small model, train_len 64, 600 steps each) on the
# embedded default corpus (the Python standard library's source), evaluate each at 1x..16x the
# training length, and write the report to runs/quick/report/report.md.
# About 10 minutes on 2 idle CPU cores, installation included (9 min 17 s measured; what was measured, and on how
# busy a machine, is in the README beside this command). Extra arguments are Hydra overrides (e.g. train.steps=1500).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-1}"
.venv/bin/posbench-train -m experiment=quick "$@"
.venv/bin/posbench-report runs/quick

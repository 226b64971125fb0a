#!/usr/bin/env bash
# Tasks a model has learned (conf/experiment/learned_tasks.yaml) on a CPU machine: both of the preset's
# sweeps in order, each a posbench-train sweep that skips the runs it finds complete, so the same command
# resumes the study.
#
#   bash scripts/learned_tasks_study.sh ROOT [RECORDS]   # runs in ROOT/learned_tasks; RECORDS default
#                                                        # results/learned_tasks/records.parquet
#
# First the runs already kept in RECORDS (where it exists) are unpacked into ROOT/learned_tasks, so that
# nothing is trained twice. Then the 126 runs of the six tasks x seven rows x 3 seeds, then RoPE on random
# positions (train.random_positions=2048, 18 runs). Every KEEP_S seconds (default 600) and after each sweep
# the ended runs are added to RECORDS (posbench-records keep), so that a machine lost between sessions loses
# only unfinished runs: commit RECORDS as it grows. The reports (the preset's comment): results/far_context_tasks
# (mqar, babi, nolima) and results/algorithmic (reverse_string, duplicate_string, flip_flop), each with randpos/.
# Jobs: POSBENCH_JOBS (default 2) single-thread jobs side by side; POSBENCH_BIN the folder of the posbench
# commands to use (default .venv/bin; run from a worktree of a fixed commit, docs/testing.md).
# Extra overrides for both posbench-train lines (a check at toy size): LEARNED_TASKS_TRAIN, e.g.
#   LEARNED_TASKS_TRAIN='train.steps=4 task.eval_examples=2 seed=0 +learned=flip_flop' bash scripts/learned_tasks_study.sh /tmp/lt
set -euo pipefail
# paths given are read from where the command runs; the defaults from the repository's root
ROOT=$(realpath -ms "${1:?usage: bash scripts/learned_tasks_study.sh ROOT [RECORDS]}")
RECORDS=${2:+$(realpath -ms "$2")}
BIN=${POSBENCH_BIN:+$(realpath -ms "$POSBENCH_BIN")}
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-results/learned_tasks/records.parquet}
BIN=${BIN:-.venv/bin}
read -r -a EXTRA <<< "${LEARNED_TASKS_TRAIN:-}"
export POSBENCH_JOBS=${POSBENCH_JOBS:-2}
RUNS=$ROOT/learned_tasks
mkdir -p "$RUNS" "$(dirname "$RECORDS")"
STUDY=learned_tasks_study
source scripts/study_lib.sh
keep() { keep_runs "$RUNS" "$RECORDS"; }

restore_runs "$RECORDS" "$RUNS"
start_keeper keep
say "six tasks x seven rows x 3 seeds"
"$BIN/posbench-train" -m experiment=learned_tasks "runs_dir=$RUNS" "${EXTRA[@]}"
keep
say "RoPE on random positions"
"$BIN/posbench-train" -m experiment=learned_tasks +hybrid=rope train.random_positions=2048 "runs_dir=$RUNS" "${EXTRA[@]}"
keep
say "done"

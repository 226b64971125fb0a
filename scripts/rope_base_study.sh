#!/usr/bin/env bash
# RoPE's base as an axis (conf/experiment/rope_base.yaml) on a CPU machine: every command in order, each
# a posbench-train sweep that skips the runs it finds complete, so the same command resumes the study.
#
#   bash scripts/rope_base_study.sh ROOT [RECORDS]    # runs in ROOT/rope_base; RECORDS default
#                                                     # results/rope_base/records.parquet
#
# First the runs already made (RECORDS, where it exists) are unpacked into ROOT/rope_base, so that nothing
# is trained twice (the map's RoPE runs at base 10^4 have the same ids but neither weights nor 2x-8x
# records: they are trained again, in ROOT/rope_base alone). Then per train_len (64, 128,
# 32, 256; tokens per step held at 2048) RoPE at the five bases and p-RoPE at two. Every KEEP_S seconds
# (default 600) and after each sweep the ended runs are added to RECORDS (posbench-records keep), so that
# a machine lost between sessions loses only unfinished runs: commit RECORDS as it grows.
# Jobs: POSBENCH_JOBS (default 2) single-thread jobs side by side; POSBENCH_BIN the folder of the
# posbench commands to use (default .venv/bin; run from a worktree of a fixed commit, docs/testing.md).
set -euo pipefail
# paths given are read from where the command runs; the defaults from the repository's root
ROOT=$(realpath -ms "${1:?usage: bash scripts/rope_base_study.sh ROOT [RECORDS]}")
RECORDS=${2:+$(realpath -ms "$2")}
BIN=${POSBENCH_BIN:+$(realpath -ms "$POSBENCH_BIN")}
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-results/rope_base/records.parquet}
BIN=${BIN:-.venv/bin}
export POSBENCH_JOBS=${POSBENCH_JOBS:-2}
RUNS=$ROOT/rope_base
mkdir -p "$RUNS" "$(dirname "$RECORDS")"
STUDY=rope_base_study
source scripts/study_lib.sh
keep() { keep_runs "$RUNS" "$RECORDS"; }

restore_runs "$RECORDS" "$RUNS"
start_keeper keep
for pair in 64:32 128:16 32:64 256:8; do
    L=${pair%%:*} B=${pair#*:}
    say "train_len $L: RoPE at five bases"
    "$BIN/posbench-train" -m experiment=rope_base "train_len=$L" "train.batch_size=$B" "runs_dir=$RUNS"
    keep
    say "train_len $L: p-RoPE at 500 and 10^4"
    "$BIN/posbench-train" -m experiment=rope_base encoding=p_rope encoding.base=500.0,10000.0 "train_len=$L" \
        "train.batch_size=$B" "runs_dir=$RUNS"
    keep
done
say "done"

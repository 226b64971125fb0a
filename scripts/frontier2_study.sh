#!/usr/bin/env bash
# The rows of 2025-26 (conf/experiment/frontier2.yaml) on a CPU machine: every part in order, each a
# posbench-train or posbench-eval sweep that skips what it finds done, so the same command resumes.
#
#   bash scripts/frontier2_study.sh ROOT [ROPE_BASE]   # runs in ROOT/frontier2*; ROPE_BASE: the RoPE-base
#                                                      # study's run folder (default ROOT/rope_base), whose
#                                                      # RoPE runs at base 10^4 and train_len 256 are tuned
#
#   ROOT/frontier2          the 14 rows x 3 seeds (WSD branches of 600 and 1200 steps), then the sink + window
#                           rows (+swaL+sink4) of sink, gated, ssmax, rope and alibi, StreamingLLM's own
#                           (+streaming) of the four RoPE rows, and nope's +headscale
#   ROOT/frontier2_tasks    flip_flop on every row, parity_check on the recurrent rows with rope and nope
#   ROOT/frontier2_randpos  RoPE on integer random positions, ROOT/frontier2_randpos_float on real ones (both
#                           rows are named +randpos: in one folder a report would pool them as seeds of one row)
#   ROOT/frontier2_tuned    copies of the 1200-step RoPE runs at train_len 64 (this study's) and 256
#                           (ROPE_BASE's, those completed with their weights), scored with each extension at its
#                           default and tuned on held-out text (+tuned) at 1x..16x
# Records: every KEEP_S seconds (default 600) and after each part the ended runs of each folder are kept in
# RECORDS_DIR/<folder>.parquet (default results/frontier2/records; posbench-records keep), so that a machine
# lost between sessions loses only unfinished runs: commit them as they grow.
# Jobs: POSBENCH_JOBS (default 2) single-thread jobs side by side; POSBENCH_BIN the folder of the posbench
# commands to use (default .venv/bin; run from a worktree of a fixed commit, docs/testing.md).
# Extra overrides for every posbench-train line (a check at toy size): FRONTIER2_TRAIN, e.g.
#   FRONTIER2_TRAIN='model=tiny train.budgets=[6,12] train.batch_size=4 seed=0' bash scripts/frontier2_study.sh /tmp/f2
set -euo pipefail
# paths given are read from where the command runs; the defaults from the repository's root
ROOT=$(realpath -ms "${1:?usage: bash scripts/frontier2_study.sh ROOT [ROPE_BASE]}")
ROPE_BASE=$(realpath -ms "${2:-$ROOT/rope_base}")
BIN=${POSBENCH_BIN:+$(realpath -ms "$POSBENCH_BIN")}
RECORDS_DIR=${RECORDS_DIR:+$(realpath -ms "$RECORDS_DIR")}
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
RECORDS_DIR=${RECORDS_DIR:-results/frontier2/records}
read -r -a EXTRA <<< "${FRONTIER2_TRAIN:-}"
export POSBENCH_JOBS=${POSBENCH_JOBS:-2}
FOLDERS=(frontier2 frontier2_tasks frontier2_randpos frontier2_randpos_float frontier2_tuned)
mkdir -p "$RECORDS_DIR" "${FOLDERS[@]/#/$ROOT/}"
STUDY=frontier2_study
source scripts/study_lib.sh
keep() { local f; for f in "${FOLDERS[@]}"; do keep_runs "$ROOT/$f" "$RECORDS_DIR/$f.parquet" "$f" || return; done; }
# completed runs with their weights below $1 of the attention rows named by the rest (folders
# <encoding>_<model>_L<n>_s<seed>_<id>: a recurrent row's model name has an underscore, small_mamba3, so nope's
# pattern leaves it out), one per line. A run unpacked from records has no weights (posbench-records keeps
# none): it cannot be scored again, so it is left out and its kept records stand; runs that failed, diverged or
# were interrupted are left out too (posbench-eval refuses them).
runs_of() { local dir=$1 d; shift; for e in "$@"; do for d in "$dir/${e}"_*; do
    if [[ $(basename "$d") =~ ^${e}_[a-z0-9]+_L[0-9]+_s[0-9]+_[0-9a-f]+$ && -f $d/checkpoint.pt ]] && completed "$d"; then
        echo "$d"; fi; done; done | sort; }
completed() { "$BIN/python" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["status"] != "completed")' \
    "$1/metrics.json" 2>/dev/null; }
# a Hydra sweep over run folders: run_dir='a','b',...
as_sweep() { local q; q=$(sed "s/.*/'&'/" | paste -sd, -); [ -n "$q" ] && echo "run_dir=$q"; }
# the runs of the longest branch (1200 steps in the study) per train_len among the folders on stdin
longest_branch() { "$BIN/python" -c '
import sys
from omegaconf import OmegaConf
runs = [(line.strip(), OmegaConf.load(line.strip() + "/config.yaml")) for line in sys.stdin if line.strip()]
longest = {}
for _, c in runs:
    longest[c.train_len] = max(longest.get(c.train_len, 0), c.train.steps)
print("\n".join(d for d, c in runs if c.train.steps == longest[c.train_len]))'; }

for f in "${FOLDERS[@]}"; do restore_runs "$RECORDS_DIR/$f.parquet" "$ROOT/$f" "$f"; done
start_keeper keep

say "1. the 14 rows"
"$BIN/posbench-train" -m experiment=frontier2 "runs_dir=$ROOT/frontier2" "${EXTRA[@]}"
keep

say "2. the sink + window rows and nope's +headscale"
sinks=$(runs_of "$ROOT/frontier2" sink gated ssmax rope alibi | as_sweep) || true
[ -n "$sinks" ] && "$BIN/posbench-eval" -m "$sinks" 'eval.variants=[local,{name: local, sinks: 4}]'
# +swaL+sink4 reads each sink at its true distance (posbench/evaluation/variants/local.py), up to 16 x train_len
# for a rotary row; StreamingLLM itself moves the sinks into the cache (distance below train_len): its rows
# +streaming beside, for the RoPE rows (rope, gated, sink, ssmax; alibi has no such row). Added after the
# study's commit and run apart with this line (results/frontier2/COMMAND.md)
rotary=$(runs_of "$ROOT/frontier2" rope gated sink ssmax | as_sweep) || true
[ -n "$rotary" ] && "$BIN/posbench-eval" -m "$rotary" 'eval.variants=[streaming]'
nope=$(runs_of "$ROOT/frontier2" nope | as_sweep) || true
[ -n "$nope" ] && "$BIN/posbench-eval" -m "$nope" 'eval.variants=[local,headscale]'
keep

say "3. tasks: flip_flop on every row, parity_check on the recurrent rows with rope and nope"
"$BIN/posbench-train" -m experiment=frontier2 +learned=flip_flop 'train.budgets=[]' 'eval.variants=[]' \
    'eval.multiples=[1,2,4,8,16]' "runs_dir=$ROOT/frontier2_tasks" "${EXTRA[@]}"
"$BIN/posbench-train" -m experiment=frontier2 task=parity_check model.init=torch train.steps=1000 'train.budgets=[]' \
    'eval.variants=[]' 'eval.multiples=[1,2,4,8,16]' \
    +hybrid=nope,rope,deltaproduct_nh1,deltaproduct_nh2,deltaproduct_nh3,mamba2,mamba3 \
    "runs_dir=$ROOT/frontier2_tasks" "${EXTRA[@]}"
keep

say "4. RoPE on integer and on real random positions, a folder each"
"$BIN/posbench-train" -m experiment=frontier2 +hybrid=rope train.random_positions=2048 \
    train.random_positions_kind=integer "runs_dir=$ROOT/frontier2_randpos" "${EXTRA[@]}"
"$BIN/posbench-train" -m experiment=frontier2 +hybrid=rope train.random_positions=2048 \
    train.random_positions_kind=float "runs_dir=$ROOT/frontier2_randpos_float" "${EXTRA[@]}"
keep

say "5. tuned extenders at train_len 64 and 256"
at256() { "$BIN/python" -c 'import sys; from omegaconf import OmegaConf as O; c = O.load(sys.argv[1] + "/config.yaml")
sys.exit(0 if c.train_len == 256 and c.encoding.base == 10000.0 else 1)' "$1"; }
candidates=$(runs_of "$ROOT/frontier2" rope; runs_of "$ROPE_BASE" rope | grep _L256_ | while read -r r; do at256 "$r" && echo "$r"; done || true)
chosen=$(printf '%s\n' "$candidates" | longest_branch)  # a failure here stops the script (set -e), not silently
for run in $chosen; do
    name=$(basename "$run") target="$ROOT/frontier2_tuned/$(basename "$run")"
    if [ -f "$target/metrics.json" ]; then  # copied before, or unpacked from records (its tuned records kept, no weights)
        if [ ! -f "$target/checkpoint.pt" ]; then
            cp "$run/checkpoint.pt" "$target/.checkpoint.tmp" && mv "$target/.checkpoint.tmp" "$target/checkpoint.pt"
        fi
        continue
    fi
    rm -rf "$target" "$ROOT/frontier2_tuned/.copy_$name"  # a copy cut off before
    cp -r "$run" "$ROOT/frontier2_tuned/.copy_$name" && mv "$ROOT/frontier2_tuned/.copy_$name" "$target"
done
tuned=$(runs_of "$ROOT/frontier2_tuned" rope | as_sweep) || true
[ -n "$tuned" ] && "$BIN/posbench-eval" -m "$tuned" 'eval.multiples=[1,2,4,8,16]' \
    'eval.rope_scaling=[ntk,dynamic_ntk,yarn,longrope]' \
    'eval.variants=[{name: tuned, scaling: yarn, factor: 16},{name: tuned, scaling: ntk, factor: 16},{name: tuned, scaling: dynamic_ntk},{name: tuned, scaling: longrope, factor: 16}]'
keep
say "done"

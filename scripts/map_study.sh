#!/usr/bin/env bash
# The map's study (conf/experiment/map.yaml) on a CPU machine: every command in order.
# Each is a posbench-train sweep that skips the runs it finds complete, so the same command resumes
# a study that stopped (a killed job continues from its resume state, bit for bit).
#
#   bash scripts/map_study.sh ROOT [STAGE ...]     # runs in ROOT/map, ROOT/map_lr, ROOT/map_t5_sqrt
#
# Stages, in the default order (give some to run only those):
#   restore     unpack the runs kept in results/map/records (RECORDS.md) into ROOT's folders, where absent
#   centre      unpack the budget study's records of the map's centre point into ROOT/map: small model,
#               train_len 64, stdlib, the 7 encodings at the same rates, seeds 0-2, the WSD branches
#               of 600 and 1200 steps of the same trunk, are the same runs (same run ids; scored at
#               1x..16x with +swaL, which holds the map's 1x and 16x), so the map's centre command
#               finds them complete and trains nothing
#   tiny_grid   experiment=map_lr at model tiny (2e-3 .. 1.6e-2, 2 seeds), and t5 at 3.2e-2 (its best
#               lay at the grid's edge)
#   lines       the small model's line (train_len 32, 64, 128, 256 and pydocs at 64) and tiny at 64:
#               small at SMALL_RATES (results/budget_lr_seed1/rate_choice.md), tiny at the rates its grid
#               chose (its report's tuning.csv, posbench/report/analysis/tuning.py decide; a tie trains the best)
#   t5_sqrt     T5 with x-transformers' parametrisation (encoding.bias_scale=sqrt_dhead), small, at
#               train_len 64 on both corpora, in ROOT/map_t5_sqrt (its rows keep the name t5)
#   base_grid   experiment=map_lr at model base (1e-3, 2e-3, 4e-3, 2 seeds, 300 steps)
#   base_edges  where base's choice lies on the grid's edge, the grid one step further out (twice at most;
#               scripts/budget_commands.py --edges), so that base_line can use it
#   base_line   base at train_len 64, seeds 0, 1, at the rates its grid chose (the report's tuning.csv,
#               through scripts/budget_commands.py --map, which refuses a choice at the grid's edge)
#   tiny_tied   tiny at 64 at the second rate of each tie its grid left (neither rate the common one:
#               the rule trains both; lines trains the best), in ROOT/map_tied: its own report, since the
#               map reads one rate a point
#   t5_sqrt_lengths  T5 (sqrt_dhead) at train_len 32, 128, 256
# and, not in the default order: keep   add ROOT's finished runs to results/map/records (then commit them)
#
# Jobs: POSBENCH_JOBS (default 2) single-thread jobs side by side (conf/hydra/launcher/local_parallel.yaml;
# on 2 cores one 2-thread job beside other work spin-waits: results/bench/threads.md). POSBENCH_BIN
# names the folder of the posbench-train to use (default .venv/bin: run the study from a worktree of
# a fixed commit, docs/testing.md "Long studies"). MAP_EXTRA: overrides added to every posbench-train
# (scripts/map_gpu.sh: device=cuda precision=fp32 data.path=...). A machine can be lost between sessions: keep
# each run's records as it finishes (posbench-records keep; results/map/RECORDS.md).
set -euo pipefail
# paths given are read from where the command runs (links kept: a venv's python is a link); defaults from the root
ROOT=$(realpath -ms "${1:?usage: bash scripts/map_study.sh ROOT [STAGE ...]}")
shift
BIN=${POSBENCH_BIN:+$(realpath -ms "$POSBENCH_BIN")}
if [[ ${PYTHON:-} == */* ]]; then PYTHON=$(realpath -ms "$PYTHON"); fi  # a path; a bare name (python3) is looked up
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
PYTHON=${PYTHON:-$BIN/python}
SMALL_RATES=${SMALL_RATES:-small:nope=0.002,rope=0.002,fox=0.002,alibi=0.004,t5=0.004,fire=0.004,kerple_log=0.004}
STAGES=("$@")
[ ${#STAGES[@]} -gt 0 ] || STAGES=(restore centre tiny_grid lines t5_sqrt base_grid base_edges base_line tiny_tied t5_sqrt_lengths)
export POSBENCH_JOBS=${POSBENCH_JOBS:-2}
mkdir -p "$ROOT"

STUDY=map_study
source scripts/study_lib.sh
read -ra EXTRA <<<"${MAP_EXTRA:-}"   # words, not globbed (train.budgets=[300] is a glob pattern)
train() { say "posbench-train $* ${EXTRA[*]}"; "$BIN/posbench-train" "$@" "${EXTRA[@]}"; }
# each line budget_commands.py prints, run with the study's runs_dir
run_lines() {
    local runs_dir=$1 line words
    shift
    while read -r line; do
        [ -n "$line" ] || continue
        eval "words=(${line#posbench-train })"  # budget_commands.py's words, shlex-quoted: unquoted as a shell does
        train "${words[@]}" "runs_dir=$runs_dir" "$@" </dev/null  # the lines are on stdin
    done
}

# runs folder under ROOT -> its records file under results/map/records
FOLDERS=("map:results/map/records/lines.parquet" "map_lr:results/map/records/grid.parquet"
         "map_t5_sqrt:results/map/records/t5_sqrt_lines.parquet" "map_tied:results/map/records/tied_lines.parquet")

for stage in "${STAGES[@]}"; do
    case $stage in
    restore)
        for pair in "${FOLDERS[@]}"; do
            restore_runs "${pair#*:}" "$ROOT/${pair%%:*}"
        done
        ;;
    keep)
        for pair in "${FOLDERS[@]}"; do
            if [ -d "$ROOT/${pair%%:*}" ]; then keep_runs "$ROOT/${pair%%:*}" "${pair#*:}"; fi
        done
        ;;
    centre)
        mkdir -p "$ROOT/map"
        n=0
        budget=$ROOT/.budget_records
        "$BIN/posbench-records" unpack results/budget/records.parquet "$budget" >/dev/null
        for d in "$budget"/*/; do
            grep -qE '^  name: (nope|rope|alibi|t5|fire|kerple_log|fox)$' "$d/config.yaml" || continue
            grep -qE '^  steps: (600|1200)$' "$d/config.yaml" || continue
            [ -e "$ROOT/map/$(basename "$d")" ] || { cp -r "$d" "$ROOT/map/"; n=$((n + 1)); }
        done
        rm -rf "$budget"
        say "centre: $n run folders copied from results/budget/records.parquet"
        ;;
    tiny_grid)
        train -m experiment=map_lr model=tiny "train.lr=2e-3,4e-3,8e-3,1.6e-2" "runs_dir=$ROOT/map_lr"
        train -m experiment=map_lr model=tiny encoding=t5 train.lr=3.2e-2 "runs_dir=$ROOT/map_lr"
        ;;
    lines)
        "$BIN/posbench-report" "$ROOT/map_lr" --where model.name=tiny --out "$ROOT/map_lr/report_tiny"
        "$PYTHON" scripts/budget_commands.py --map "$ROOT/map_lr/report_tiny/tuning.csv" --rates "$SMALL_RATES" \
            | run_lines "$ROOT/map"
        ;;
    t5_sqrt)
        for corpus in stdlib pydocs; do
            train -m experiment=map encoding=t5 encoding.bias_scale=sqrt_dhead train.lr=0.004 model=small \
                train_len=64 train.batch_size=32 "data=$corpus" "runs_dir=$ROOT/map_t5_sqrt"
        done
        ;;
    base_grid)
        train -m experiment=map_lr model=base "train.lr=1e-3,2e-3,4e-3" "train.budgets=[300]" "runs_dir=$ROOT/map_lr"
        ;;
    base_edges)
        last=
        for round in 1 2; do
            "$BIN/posbench-report" "$ROOT/map_lr" --where model.name=base --out "$ROOT/map_lr/report_base"
            lines=$("$PYTHON" scripts/budget_commands.py --edges "$ROOT/map_lr/report_base/tuning.csv")
            [ -n "$lines" ] || break
            if [ "$lines" = "$last" ]; then  # the extension's runs did not complete (diverged): nothing new to read
                say "base_edges: the grid's extension did not complete (diverged?); choose the base rates by hand"
                exit 1
            fi
            say "base_edges, round $round: a choice on the grid's edge"
            run_lines "$ROOT/map_lr" "train.budgets=[300]" <<<"$lines"
            last=$lines
        done
        ;;
    base_line)
        "$BIN/posbench-report" "$ROOT/map_lr" --where model.name=base --out "$ROOT/map_lr/report_base"
        "$PYTHON" scripts/budget_commands.py --map "$ROOT/map_lr/report_base/tuning.csv" --rates "$SMALL_RATES" \
            --lengths 64 --corpora "" | grep "model=base" | run_lines "$ROOT/map"
        ;;
    tiny_tied)
        "$BIN/posbench-report" "$ROOT/map_lr" --where model.name=tiny --out "$ROOT/map_lr/report_tiny"
        "$PYTHON" scripts/budget_commands.py --ties "$ROOT/map_lr/report_tiny/tuning.csv" --length 64 \
            | { grep "model=tiny" || true; } | run_lines "$ROOT/map_tied"
        ;;
    t5_sqrt_lengths)
        for n in 32 128 256; do
            train -m experiment=map encoding=t5 encoding.bias_scale=sqrt_dhead train.lr=0.004 model=small \
                "train_len=$n" "train.batch_size=$((2048 / n))" "runs_dir=$ROOT/map_t5_sqrt"
        done
        ;;
    *)
        echo "map_study: unknown stage '$stage'; valid: restore centre tiny_grid lines t5_sqrt base_grid" \
            "base_edges base_line tiny_tied t5_sqrt_lengths keep" >&2
        exit 2
        ;;
    esac
done
say "done: ${STAGES[*]}"

#!/usr/bin/env bash
# The map's base size on a lent GPU in one command: scripts/map_study.sh's base stages
# (base_grid, base_edges, base_line: about 6 hours of the 2-core machine) with every run on CUDA in fp32
# (precision=fp32: no bf16 autocast and no TF32, the CPU map's arithmetic, the kernels' order of sums
# aside) on the CPU studies' own corpus (scripts/gpu_corpus.py's archive, read through data.path), and
# beside the grid a control of the machine: the map's centre (small model, train_len 64) at seed 0 for
# CONTROL_GROUPS, whose CPU runs are on record (results/budget/records.parquet), so that how far a GPU run of the
# same config lands from the CPU's can be measured against the seeds' spread.
#
#   bash scripts/map_gpu.sh OUT_DIR [RUNS_ROOT]       # RUNS_ROOT default OUT_DIR/runs
#
# Writes OUT_DIR/map_gpu.log (which stage ended how), environment.txt, one log per stage and kept.tgz: the
# ended runs' records files (posbench-records keep: weights and resume states left out) of RUNS_ROOT/map
# (the base line: map.parquet), RUNS_ROOT/map_lr (the grid: map_lr.parquet, with its report's tuning.csv in
# map_lr/report_base/) and RUNS_ROOT/control (control.parquet).
# A stage cut by its limit (GRID_S, LINE_S; SIGTERM, then SIGKILL 20 s later) leaves what it finished, and the
# same command on the same RUNS_ROOT resumes it. tests/end_to_end/test_map_gpu.py runs it on CPU at a tiny size
# (marked slow: run it before a GPU call).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:?usage: bash scripts/map_gpu.sh OUT_DIR [RUNS_ROOT]}
DEVICE=${DEVICE:-cuda}
PYTHON=$(command -v "${PYTHON:-python3}")
GRID_S=${GRID_S:-210} LINE_S=${LINE_S:-270}
JOBS=${JOBS:-12}              # the grid's and the line's runs side by side on the one GPU (launch-bound)
CONTROL_GROUPS=${CONTROL_GROUPS-0.002:nope,rope 0.004:alibi,t5}   # rate:encodings (the small model's rates); empty: none
SIZE_EXTRA=${SIZE_EXTRA:-}    # more overrides for every run (the tests' tiny size)
WHEELS=${WHEELS-.whl}
CORPUS_ARCHIVE=${CORPUS_ARCHIVE-$(ls .gpu_data/stdlib-*.tar.xz 2>/dev/null | head -1)}
STUDY=map_gpu
# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
ROOT=${2:-$OUT_DIR/runs}
mkdir -p "$ROOT"
ROOT=$(cd "$ROOT" && pwd)

# map_study.sh calls posbench-train and posbench-report from POSBENCH_BIN: here, wrappers of this Python
BIN=$ROOT/.bin
mkdir -p "$BIN"
for command in train report records; do
    printf '#!/usr/bin/env bash\nexec %q -c %q %s "$@"\n' "$PYTHON" "${posbench[2]}" "$command" >"$BIN/posbench-$command"
    chmod +x "$BIN/posbench-$command"
done
export POSBENCH_BIN=$BIN PYTHON MAP_EXTRA="device=$DEVICE precision=fp32 ${DATA[*]} $SIZE_EXTRA"
say "every run: $MAP_EXTRA"
build_corpus || { say "cannot build the corpus (see $LOG)"; exit 2; }

control_pids=()
for group in $CONTROL_GROUPS; do
    # shellcheck disable=SC2086  # MAP_EXTRA is words
    POSBENCH_JOBS=2 stage "control_${group%%:*}" "$GRID_S" "$BIN/posbench-train" -m experiment=map model=small \
        train_len=64 train.batch_size=32 seed=0 "encoding=${group#*:}" "train.lr=${group%%:*}" \
        "runs_dir=$ROOT/control" $MAP_EXTRA &
    control_pids+=($!)
done
POSBENCH_JOBS=$JOBS stage grid "$GRID_S" bash scripts/map_study.sh "$ROOT" base_grid base_edges
grid_rc=$?
control_rc=0
for pid in "${control_pids[@]}"; do wait "$pid" || control_rc=$?; done
line_rc=skipped
if [ "$grid_rc" -eq 0 ]; then
    POSBENCH_JOBS=$JOBS stage line "$LINE_S" bash scripts/map_study.sh "$ROOT" base_line
    line_rc=$?
fi

mkdir -p "$OUT_DIR/kept"
for folder in map map_lr control; do
    [ -d "$ROOT/$folder" ] && "$BIN/posbench-records" keep "$ROOT/$folder" "$OUT_DIR/kept/$folder.parquet" >>"$LOG" 2>&1
done
[ -f "$ROOT/map_lr/report_base/tuning.csv" ] && mkdir -p "$OUT_DIR/kept/map_lr/report_base" \
    && cp "$ROOT/map_lr/report_base/"{tuning.csv,report.md} "$OUT_DIR/kept/map_lr/report_base/" 2>/dev/null
tar czf "$OUT_DIR/kept.tgz" -C "$OUT_DIR" kept && rm -rf "$OUT_DIR/kept"
say "done: grid $grid_rc, control $control_rc, line $line_rc"
[ "$grid_rc" -eq 0 ] && [ "$control_rc" -eq 0 ] && [ "$line_rc" = 0 ]

#!/usr/bin/env bash
# The GPU study in one command, sized to a lent GPU's ~10 minutes: every stage has its own
# time limit, so a run cut short still leaves what the finished stages wrote.
#
#   bash scripts/gpu_study.sh /tmp/gpu_study        # on a CUDA machine: writes everything there
#
# Stages (their limits in seconds: BENCH_S, TESTS_S, MAP_S, REPORT_S):
#   1. bench: scripts/bench.py on the medium model at train_len 512 (bf16 autocast, regional
#      torch.compile, fused AdamW) for nope, rope, alibi, t5 and fox against the plain GPT, MFU
#      against the matmul peak measured first; one row at a time into OUT/bench/.
#   2. tests (beside 3): the CUDA tests and the fast suite of the GPU-facing modules -> OUT/tests.txt.
#   3. map: experiment=map at model base, train_len 256, 8192 tokens a step (batch 32), the map's
#      seven encodings, seeds MAP_SEEDS, each encoding at the small model's chosen rate (see
#      MAP_GROUPS), jobs in parallel on the one GPU (the base model is launch-bound: several
#      processes fill it), runs in OUT/map_runs (they resume: the same command continues them).
#   4. report: posbench-report OUT/map_runs --out OUT/map_report.
# Then OUT/map_runs.tgz and OUT/map_report.tgz hold the runs' records (weights and resume states
# left out) and the report, for a machine that can bring back only a few files.
#
# The slow tests run it end to end on CPU at a tiny size (tests/end_to_end/test_gpu_study.py: run them
# before a GPU call), with DEVICE=cpu and the size variables below overridden.
#
# A machine without posbench's packages installs them from wheels in .whl/ (see README, "Checking
# the GPU paths"). The corpus: where .gpu_data/stdlib-*.tar.xz exists (the documents of the
# standard library the CPU studies read, Python 3.11.7's), it is unpacked and read through
# data.path, so the GPU and CPU rows read the same text whatever the GPU machine's Python is
# (`python scripts/gpu_corpus.py` makes it). Its token cache is built beside the benchmark (a
# minute of CPU), before the runs that read it start.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:?usage: bash scripts/gpu_study.sh OUT_DIR}
DEVICE=${DEVICE:-cuda}
PYTHON=${PYTHON:-python3}
BENCH_S=${BENCH_S:-200} TESTS_S=${TESTS_S:-160} MAP_S=${MAP_S:-160} REPORT_S=${REPORT_S:-45}
BENCH_ARGS=${BENCH_ARGS:---model medium --train-len 512 --batch 64 --steps 12 --rounds 1 --reference-once --compile --eval-tokens 65536}
BENCH_ENCODINGS=${BENCH_ENCODINGS:-nope,rope,alibi,t5,fox}
MAP_SIZE=${MAP_SIZE:-model=base train_len=256 train.batch_size=32}
MAP_SEEDS=${MAP_SEEDS:-0,1,2}
# rate:encodings groups, the small model's choice (conf/experiment/map.yaml); base is not tuned here
MAP_GROUPS=${MAP_GROUPS-0.002:nope,rope,fox 0.004:alibi,t5,fire,kerple_log}   # empty: no map, no report
MAP_EXTRA=${MAP_EXTRA:-}
JOBS=${JOBS:-7}            # parallel runs per rate group
RUN_TESTS=${RUN_TESTS:-1}
TESTS_MARK=${TESTS_MARK:-cuda or not slow}   # "cuda": the CUDA tests alone
WHEELS=${WHEELS-.whl}      # empty: install nothing
CORPUS_ARCHIVE=${CORPUS_ARCHIVE-$(ls .gpu_data/stdlib-*.tar.xz 2>/dev/null | head -1)}   # empty: the running Python's stdlib

STUDY=study
# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh

build_corpus &   # beside the benchmark (CPU only)
corpus_pid=$!

# 1. the benchmark, alone on the device (its timings are the study's figures)
stage bench "$BENCH_S" "$PYTHON" scripts/bench.py --device "$DEVICE" $BENCH_ARGS --encodings "$BENCH_ENCODINGS" \
    --out "$OUT_DIR/bench" --note "the GPU study (scripts/gpu_study.sh); on CUDA training is bf16 autocast with fused AdamW"
bench_rc=$?
if ! wait "$corpus_pid"; then say "cannot build the corpus (see $LOG)"; exit 2; fi

# 2 and 3 side by side: the tests time nothing
tests_rc=0
if [ "$RUN_TESTS" = 1 ]; then
    xdist=$("$PYTHON" -c "import xdist" 2>/dev/null && echo "-n 4")
    stage tests "$TESTS_S" "$PYTHON" -m pytest -v -p no:cacheprovider $xdist -m "$TESTS_MARK" tests/attention \
        tests/encodings tests/core/test_device.py tests/training/test_trainer.py &
    tests_pid=$!
fi
map_pids=()
for group in $MAP_GROUPS; do
    # seed first: Hydra's sweep varies the last override fastest, so every encoding gets seed 0 first
    POSBENCH_JOBS=$JOBS stage "map_${group%%:*}" "$MAP_S" "${posbench[@]}" train -m experiment=map "seed=$MAP_SEEDS" \
        $MAP_SIZE "encoding=${group#*:}" "train.lr=${group%%:*}" "device=$DEVICE" threads=1 "runs_dir=$OUT_DIR/map_runs" "${DATA[@]}" $MAP_EXTRA &
    map_pids+=($!)
done
map_rc=0
for pid in "${map_pids[@]}"; do wait "$pid" || map_rc=$?; done
if [ "$RUN_TESTS" = 1 ]; then wait "$tests_pid"; tests_rc=$?; cp "$OUT_DIR/tests.log" "$OUT_DIR/tests.txt"; fi

# 4. the report of whatever runs finished
report_rc=0
if [ -n "$MAP_GROUPS" ]; then
    stage report "$REPORT_S" "${posbench[@]}" report "$OUT_DIR/map_runs" --out "$OUT_DIR/map_report"
    report_rc=$?
fi
[ -d "$OUT_DIR/map_runs" ] && tar czf "$OUT_DIR/map_runs.tgz" -C "$OUT_DIR" --exclude='*.pt' --exclude='resume*' --exclude='snapshot*' map_runs
[ -d "$OUT_DIR/map_report" ] && tar czf "$OUT_DIR/map_report.tgz" -C "$OUT_DIR" map_report
say "done: bench $bench_rc, tests $tests_rc, map $map_rc, report $report_rc"
[ "$bench_rc" -eq 0 ] && [ "$tests_rc" -eq 0 ] && [ "$map_rc" -eq 0 ] && [ "$report_rc" -eq 0 ]

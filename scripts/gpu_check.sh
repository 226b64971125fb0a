#!/usr/bin/env bash
# The CUDA paths on a GPU: run the CUDA tests and the benchmark, write results/bench-cuda/.
#
#   bash scripts/gpu_check.sh            # on a machine with a CUDA GPU and a CUDA build of torch
#
# OUT_DIR (default results/bench-cuda) is where it writes; BENCH_ARGS (default: every encoding and
# the recurrent and hybrid layer patterns; empty: bench.py's defaults) are scripts/bench.py's arguments
# besides --device and --out, split at spaces (a --note of several words: BENCH_NOTE);
# TESTS_MARK (default "cuda or not slow"; "cuda" runs only the tests that need the GPU) picks the tests;
# TESTS_S and BENCH_S (seconds, default 600 and 1800) bound each stage (SIGTERM, then SIGKILL 20 s
# later; the defaults suit a GPU of one's own: a lent GPU's ten minutes want TESTS_MARK=cuda and a few
# rows), so a stage cut short still brings back the tests it ran and every benchmark row finished
# (bench.py rewrites its tables after each row). Exit 2: bad settings or no CUDA device; else 0 where
# both stages passed.
#
# Uses $PYTHON (default: .venv/bin/python when it has CUDA, else python3). posbench's other
# dependencies must be importable there; a machine without network can install them from wheels
# in .whl/ (pip download them elsewhere: see README, "Checking the GPU paths").
set -uo pipefail
cd "$(dirname "$0")/.."
TESTS_S=${TESTS_S:-600} BENCH_S=${BENCH_S:-1800}
for v in TESTS_S BENCH_S; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "gpu_check: $v=${!v} is not a positive whole number of seconds (e.g. 600)" >&2; exit 2; }
done
set -f  # BENCH_ARGS is split at spaces, never globbed
read -ra bench_args <<<"${BENCH_ARGS---hybrids gdn,deltaproduct,mamba2,mamba3,qwen3_next,nope_global,samba --reference-once}"
set +f
for a in "${bench_args[@]}"; do
    case $a in --out|--out=*|--device|--device=*)
        echo "gpu_check: BENCH_ARGS gives $a; set OUT_DIR for the folder (the device is cuda)" >&2; exit 2;;
    esac
done
[ -n "${BENCH_NOTE:-}" ] && bench_args+=(--note "$BENCH_NOTE")
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch,sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
        PYTHON=.venv/bin/python
    else
        PYTHON=python3
    fi
fi
if ! "$PYTHON" -c "import torch,sys; sys.exit(not torch.cuda.is_available())"; then
    echo "gpu_check: $PYTHON has no CUDA device (torch.cuda.is_available() is false)" >&2
    exit 2
fi
if [ -d .whl ]; then
    "$PYTHON" -m pip install -q --no-index --no-deps --target /tmp/posbench-site .whl/*.whl || exit 2
    export PYTHONPATH="/tmp/posbench-site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled PYTHONUNBUFFERED=1
OUT_DIR=${OUT_DIR:-results/bench-cuda}
mkdir -p "$OUT_DIR"
{
    echo "# gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    "$PYTHON" -c "import torch; print('torch', torch.__version__, '| cuda', torch.version.cuda, '|', torch.cuda.get_device_name(0))"
} > "$OUT_DIR/environment.txt"
cat "$OUT_DIR/environment.txt"
timeout -k 20 "$TESTS_S" "$PYTHON" -m pytest -v -p no:cacheprovider -m "${TESTS_MARK:-cuda or not slow}" tests/attention tests/encodings tests/core/test_device.py tests/training/test_trainer.py 2>&1 | tee "$OUT_DIR/tests.txt"
tests_rc=${PIPESTATUS[0]}
TQDM_DISABLE=1 timeout -k 20 "$BENCH_S" "$PYTHON" scripts/bench.py --device cuda --out "$OUT_DIR" "${bench_args[@]}" 2>&1 | tee "$OUT_DIR/bench.log"
bench_rc=${PIPESTATUS[0]}
said() { case $1 in 124|137) echo "$1 (cut at its limit)";; *) echo "$1";; esac; }
echo "gpu_check: tests exit $(said "$tests_rc"), benchmark exit $(said "$bench_rc"); wrote $OUT_DIR/"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]

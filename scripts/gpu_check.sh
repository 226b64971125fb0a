#!/usr/bin/env bash
# The CUDA paths on a GPU: run the CUDA tests and the benchmark, write results/bench-cuda/.
#
#   bash scripts/gpu_check.sh            # on a machine with a CUDA GPU and a CUDA build of torch
#
# Uses $PYTHON (default: .venv/bin/python when it has CUDA, else python3). posbench's other
# dependencies must be importable there; a machine without network can install them from wheels
# in .whl/ (pip download them elsewhere: see README, "Checking the GPU paths").
set -uo pipefail
cd "$(dirname "$0")/.."
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
OUT_DIR=results/bench-cuda
mkdir -p "$OUT_DIR"
{
    echo "# gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    "$PYTHON" -c "import torch; print('torch', torch.__version__, '| cuda', torch.version.cuda, '|', torch.cuda.get_device_name(0))"
} > "$OUT_DIR/environment.txt"
cat "$OUT_DIR/environment.txt"
"$PYTHON" -m pytest -q -p no:cacheprovider -m "cuda or not slow" tests/attention tests/encodings tests/core/test_device.py tests/training/test_trainer.py 2>&1 | tee "$OUT_DIR/tests.txt"
tests_rc=${PIPESTATUS[0]}
TQDM_DISABLE=1 "$PYTHON" scripts/bench.py --device cuda --out "$OUT_DIR" 2>&1 | tee "$OUT_DIR/bench.log"
bench_rc=${PIPESTATUS[0]}
echo "gpu_check: tests exit $tests_rc, benchmark exit $bench_rc; wrote $OUT_DIR/"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]

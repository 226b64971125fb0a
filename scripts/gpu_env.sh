#!/usr/bin/env bash
# Sourced by the scripts that run on a lent GPU machine (scripts/gpu_study.sh, scripts/map_gpu.sh): that
# machine's Python has torch but not all of posbench's packages, another standard library than the CPU
# studies read, and no posbench entry points. Before sourcing, set OUT_DIR (created here), STUDY (the
# log's name), PYTHON, DEVICE (cuda, or cpu for the tests' run at a tiny size), WHEELS (a folder of
# wheels; empty: install nothing) and CORPUS_ARCHIVE (scripts/gpu_corpus.py's archive; empty: the
# running Python's standard library). It sets LOG, DATA (the data.path override that reads the
# archive), posbench (a command: "${posbench[@]}" train ...), say, stage and build_corpus, and exits 2
# where the wheels do not install or DEVICE is cuda without a CUDA device.
# shellcheck shell=bash
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
LOG="$OUT_DIR/$STUDY.log"
say() { echo "[$STUDY $(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
if [ -n "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target /tmp/posbench-site "$WHEELS"/*.whl >>"$LOG" 2>&1 \
        || { say "cannot install the wheels in $WHEELS/"; exit 2; }
    export PYTHONPATH="/tmp/posbench-site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled PYTHONUNBUFFERED=1 TQDM_DISABLE=1
DATA=()
if [ -n "$CORPUS_ARCHIVE" ]; then
    mkdir -p /tmp/posbench-stdlib && tar xJf "$CORPUS_ARCHIVE" -C /tmp/posbench-stdlib && DATA=(data.path=/tmp/posbench-stdlib)
fi
{
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    "$PYTHON" -c "import torch; print('torch', torch.__version__, '| cuda', torch.version.cuda, '|',
        torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device')"
    echo "corpus: ${CORPUS_ARCHIVE:-as the runs' overrides say (default: the running Python's standard library)}"
} | tee "$OUT_DIR/environment.txt"
if [ "$DEVICE" != cpu ] && ! "$PYTHON" -c "import torch,sys; sys.exit(not torch.cuda.is_available())"; then
    say "DEVICE=$DEVICE but torch sees no CUDA device"; exit 2
fi
# posbench-train / posbench-report without an installed entry point: "${posbench[@]}" train ...
posbench=("$PYTHON" -c 'import sys; from posbench.cli import console; c = getattr(console, sys.argv.pop(1))
sys.argv[0] = "posbench-" + c.__name__; c()')
stage() {  # stage NAME LIMIT_S COMMAND...: the command under its limit (TERM, then KILL 20 s later)
    local name=$1 limit=$2 t0=$SECONDS rc; shift 2
    say "$name: start (limit ${limit} s)"
    timeout -k 20 "$limit" "$@" >>"$OUT_DIR/$name.log" 2>&1; rc=$?
    say "$name: exit $rc after $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo ' (time limit: what it finished is kept)')"
    return $rc
}
build_corpus() {  # the archive's token cache, built once before the runs that read it (each would build it)
    [ -n "$CORPUS_ARCHIVE" ] || return 0
    "$PYTHON" -c "from posbench.data.corpus import DataConfig, load_byte_corpus as load
import os; c = load(DataConfig(path='/tmp/posbench-stdlib', cache_dir=os.environ.get('POSBENCH_CACHE', '~/.cache/posbench')))
print('corpus', c.fingerprint, 'built here' if c.built else 'from the cache')" >>"$LOG" 2>&1
}

#!/usr/bin/env bash
# Create .venv (once) and install posbench into it.
#
# CPU machines: torch==2.13.0 (the CPU build) is installed *before* posbench, so that posbench's
# `torch>=2.5` is already satisfied and pip never pulls the multi-GB CUDA wheels.
# GPU machines: install a CUDA build of torch into .venv first, e.g.
#     python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128
# and this script keeps it (it installs torch only when .venv has none).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
VPY=.venv/bin/python
if ! "$VPY" -c "import torch" 2>/dev/null; then
    "$VPY" -m pip install -q "${POSBENCH_TORCH_SPEC:-torch==2.13.0}"
fi
# POSBENCH_EXTRAS: the extras to install (scripts/test.sh asks for "test": HF transformers for the RoPE parity tests)
# The install is editable, so code changes need none; it is redone only when pyproject.toml or the extras
# changed since the last one (a stamp in .venv): a second quickstart resumes at once instead of reinstalling.
STAMP=.venv/.posbench-install
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1) ${POSBENCH_EXTRAS:-dev}"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! "$VPY" -c "import posbench" 2>/dev/null; then
    "$VPY" -m pip install -q -e ".[${POSBENCH_EXTRAS:-dev}]"
    echo "$WANT" > "$STAMP"
fi
# The English-prose corpus (data=pydocs, posbench/data/pydocs.py) is the Python documentation's reST
# sources from Debian's/Ubuntu's python3-doc package: installed here where it can be (root with
# apt-get), like .ci/run installs chromium. Elsewhere setup goes on, and data=pydocs says in one line
# how to install it; the default corpus (the standard library) needs nothing.
if ! ls -d /usr/share/doc/python3.*/html/_sources >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-doc >/dev/null) \
            || echo "setup: could not install python3-doc; data=pydocs will not be available" >&2
    else
        echo "setup: data=pydocs (the prose corpus) needs python3-doc: sudo apt-get install python3-doc" >&2
    fi
fi
"$VPY" -c "import torch, posbench; print(f'posbench {posbench.__version__}, torch {torch.__version__}, cuda available: {torch.cuda.is_available()}')"

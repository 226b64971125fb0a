#!/usr/bin/env bash
# Install (scripts/setup.sh) and run the test suite. Extra arguments go to pytest (e.g. -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
POSBENCH_EXTRAS=test bash scripts/setup.sh  # with HF transformers, so the RoPE parity tests run, not skip
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled
# the linter first ([tool.ruff] in pyproject.toml: unused or undefined names, statements that hide an error):
# a finding fails the test command before the suite runs
.venv/bin/ruff check --quiet posbench tests scripts || { echo "ruff found the problems above: fix them (ruff check --fix fixes some)" >&2; exit 1; }
set +e
# test workers, one torch thread each (tests/conftest.py): 542 s -> 336 s on 2 idle cores. Files go to
# workers whole (--dist loadfile), so a module's fixture is built once. POSBENCH_TEST_WORKERS=0 runs
# the suite in this one process.
.venv/bin/python -m pytest -n "${POSBENCH_TEST_WORKERS:-auto}" --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: failing, since an empty run proves nothing" >&2
    exit 1
fi
exit "$rc"

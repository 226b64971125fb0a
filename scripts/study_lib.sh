#!/usr/bin/env bash
# The frame the CPU studies share (scripts/rope_base_study.sh, learned_tasks_study.sh, frontier2_study.sh;
# map_study.sh its say, restore and keep): sourced after the script has set STUDY (the name its lines start
# with) and BIN (the folder of the posbench commands), not run. A study resumes from its records file: it
# unpacks the runs kept there before training, keeps the ended runs every KEEP_S seconds (default 600) while
# it trains and once after each part, so that a machine lost between sessions loses only unfinished runs.
#
# Why functions and not `say "$(posbench-records ...)"`: a failing command inside an argument's $(...) does
# not stop a `set -e` script (the status is say's), so a restore that failed would go on to retrain every run
# and a keep that failed would pass unseen. Here the command's status is the function's.

KEEP_S=${KEEP_S:-600}
if ! [[ $KEEP_S =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    echo "KEEP_S=$KEEP_S is not a number of seconds; give e.g. KEEP_S=600" >&2
    exit 2
fi

say() { echo "[$STUDY $(date -u +%H:%M:%SZ)] $*"; }

# restore_runs RECORDS RUNS_DIR [LABEL]: RECORDS' runs unpacked into RUNS_DIR where RECORDS exists (a run
# RUNS_DIR has is left); a failure is the function's status
restore_runs() {
    [ -f "$1" ] || return 0
    local out
    out=$("$BIN/posbench-records" unpack "$1" "$2") || return
    say "restore${3:+ $3}: $out"
}

# keep_runs RUNS_DIR RECORDS [LABEL]: RUNS_DIR's ended runs added to RECORDS; a failure is the function's status
keep_runs() {
    local out
    out=$("$BIN/posbench-records" keep "$1" "$2") || return
    say "${3:+$3: }$out"
}

# start_keeper FUNCTION: FUNCTION called every KEEP_S seconds in the background until the script exits; a
# call that fails is said (its error is above it) and the next one tries again, so one bad moment (a run
# folder being written) does not end the keeping. It sets the script's EXIT trap (a study sets none of its
# own); the trap's kill may find the keeper gone, which must not turn a finished study's status into 1.
start_keeper() {
    # the nap runs in the background and is waited for, so that the EXIT trap's TERM ends it too: a sleep left
    # behind would hold the script's stdout open, and a caller reading it (a pipe, $(...)) would wait it out
    (trap 'kill "$nap" 2>/dev/null; exit 0' TERM
     while :; do
        sleep "$KEEP_S" & nap=$!
        wait "$nap"
        "$1" || say "keeping the records failed (the error above); trying again in $KEEP_S s"
    done) &
    KEEPER=$!
    trap 'kill "$KEEPER" 2>/dev/null || true' EXIT
}

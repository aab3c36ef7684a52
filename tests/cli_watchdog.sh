#!/bin/sh
# cli_watchdog: parallel.timeout. With debug.hang_rank=1:5 (rank 1 stops
# at step 5) and parallel.timeout=10, the job ends by itself (not by the
# test's hang guard, HANG s: no wall time is asserted), non-zero, and a
# waiting rank names its step, its phase and the collective it waits in,
# at P = 2 and 3; a recommend whose rank hangs in a round ends the same
# way, naming the round. A normal run with the watchdog on (300 s, the
# default: no timeout of a test may end a healthy run on a slow, loaded
# machine) trains exactly as with it off. And the tests' hang guards
# (timeout N before a run of the program, mpirun or srun) are of HANG s
# or more.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 model.dropout=0 train.log_every=1 train.max_steps=8"
HANG=300 # the hang guard: a job the watchdog failed to end
train() { np=$1; shift; timeout $HANG "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
short=$(grep -nE 'timeout +[0-9]+ +("?\$(MPIRUN|FS|PLOT)"?|mpirun|srun)' "$TOP_SRCDIR"/tests/*.sh |
    awk -v hang=$HANG '{ match($0, /timeout +[0-9]+/); n = substr($0, RSTART, RLENGTH)
        sub(/timeout +/, "", n); if (n + 0 < hang) print }')
[ -z "$short" ] && pass "every test's hang guard around a run is $HANG s or more" ||
    fail "hang guards below $HANG s: $short"
# by_itself RC: the job ended non-zero, and not by the hang guard (124)
by_itself() { [ "$1" -ne 0 ] && [ "$1" -ne 124 ]; }

for np in 2 3; do
    train $np debug.hang_rank=1:5 parallel.timeout=10 >"$T/out" 2>"$T/err"
    rc=$?
    by_itself $rc && pass "P=$np: hung job ended by itself, non-zero ($rc)" ||
        fail "P=$np: exit $rc (124: still running after $HANG s)"
    grep -q "error \[rank 0\]: watchdog: no progress for [1-9][0-9][0-9]* s (parallel.timeout = 10): step 5, after phase [a-z_]*; waiting in MPI_[A-Za-z_ ]* on communicator '[a-z_]*' for [0-9.]* s" "$T/err" &&
        pass "P=$np: rank 0 names its step, phase and collective" ||
        fail "P=$np: no watchdog message of rank 0: $(head -c 600 "$T/err")"
done

# recommend (and export, through the same start-up) run under the watchdog
# too: rank 1 stops in round 2 of 4
expect_ok train 2 train.checkpoint_every=8 output.checkpoint_dir="$T/ck"
timeout $HANG "$MPIRUN" -np 2 "$FS" recommend "$T/ck/ckpt-8.h5" --batch 4 --round 16 -o "$T/rec.csv" \
    debug.hang_rank=1:2 parallel.timeout=10 >"$T/out" 2>"$T/err"
rc=$?
by_itself $rc && pass "hung recommend ended by itself, non-zero ($rc)" ||
    fail "hung recommend: exit $rc (124: still running after $HANG s)"
# whichever rank's watchdog fires first ends the job
grep -q "error \[rank [01]\]: watchdog: no progress for [0-9]* s (parallel.timeout = 10): round 2, in a recommend round; " "$T/err" &&
    pass "recommend: the watchdog names the round" ||
    fail "recommend: no watchdog message: $(head -c 600 "$T/err")"
no_file "$T/rec.csv"

expect_ok train 2 parallel.timeout=0 output.metrics="$T/off.jsonl"
expect_ok train 2 parallel.timeout=300 output.metrics="$T/on.jsonl"
same_losses "$T/off.jsonl" "$T/on.jsonl" "watchdog on vs off" 0 0
grep -q watchdog "$T/err" && fail "watchdog spoke in a normal run"
finish

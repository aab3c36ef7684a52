#!/bin/bash
# cli_signal: a run stopped by a signal ends with one checkpoint of its
# last finished step, and resuming from it gives the uninterrupted run's
# losses; the table (10^6 items) makes a checkpoint take seconds
# (doc/training.md, "Stopping a run"):
#   - SIGINT and SIGTERM to mpirun (Ctrl-C, kill): Open MPI 4.1's mpirun
#     sends the ranks SIGTERM after odls_base_sigkill_timeout seconds and
#     SIGKILL as many seconds later, and exits 1 whatever they return: the
#     run is given the time with --mca odls_base_sigkill_timeout;
#   - SIGUSR1 to mpirun (forwarded) and SIGTERM to one rank: every rank
#     stops, and mpirun exits with the ranks' 75;
#   - SIGKILL of the writer mid-checkpoint: nothing resume=auto takes is
#     left (the temporary never has a checkpoint's name), and the next
#     start reports and removes the temporary.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 512 --items 1000000 --length uniform:5,40 --timestamps -o "$T/big.h5" \
    >/dev/null || { fail "data gen"; finish; }
GRACE=20 # seconds mpirun leaves between its SIGTERM and SIGKILL (and before its SIGTERM):
# the checkpoint of the 10^6-row table takes about a second
COMMON="data.path=$T/big.h5 device.type=cpu model.dim=8 train.log_every=1 train.final_eval=off
train.epochs=1000 parallel.timeout=0"
train() { ranks=$1; shift; timeout 300 "$MPIRUN" -np "$ranks" "$FS" train "$IN" $COMMON "$@" </dev/null; }
laststep() { losses "$1" | tail -n 1 | cut -d' ' -f1; }

# start NAME [mpirun options]: a run in the background (its own process
# group, as from a terminal: job control) until a signal; $pid is mpirun's;
# waits until it has trained 2 steps (or ended). Its hang guard: SIGKILL
# after 900 s (a run takes 10-30 s here, loaded)
set -m
start() {
    name=$1; shift
    "$MPIRUN" "$@" -np 2 "$FS" train "$IN" $COMMON output.checkpoint_dir="$T/$name" \
        output.metrics="$T/$name.jsonl" </dev/null >"$T/$name.out" 2>"$T/$name.err" &
    pid=$!
    (sleep 900; kill -KILL $pid 2>/dev/null) >/dev/null 2>&1 &
    guard=$!
    disown $guard
    while kill -0 $pid 2>/dev/null; do
        [ "$(laststep "$T/$name.jsonl" 2>/dev/null)" -ge 2 ] 2>/dev/null && return 0
        sleep 0.2
    done
    fail "$name: ended before step 2: $(tail -c 300 "$T/$name.err")"
    return 1
}
# finished: the exit code of the run started last
finished() { wait $pid; r=$?; kill $guard 2>/dev/null; return $r; }

# stopped NAME RC WANT_RC: the run stopped with one complete checkpoint of
# its last finished step (the metrics file's stop line: mpirun, ending, may
# not pass the ranks' last output on), and mpirun's exit code was WANT_RC
stopped() {
    [ "$2" = "$3" ] && pass "$1: mpirun exit code $2" ||
        fail "$1: mpirun exit code $2, expected $3: $(tail -c 400 "$T/$1.err")"
    s=$(laststep "$T/$1.jsonl")
    grep -q '"event":"stop".*"step":'"$s"',.*"signal":[0-9]*,"exit_code":75,"checkpoint":1' \
        "$T/$1.jsonl" && pass "$1: stopped after step $s, the ranks' exit code 75" ||
        fail "$1: no stop line after step $s: $(tail -n 1 "$T/$1.jsonl")"
    [ "$(ls "$T/$1")" = "ckpt-$s.h5" ] && pass "$1: one checkpoint, ckpt-$s.h5" ||
        fail "$1: checkpoints $(ls "$T/$1" | tr '\n' ' ')"
    eval "S_$1=$s"
}

# SIGINT and SIGTERM to mpirun, with the time for a checkpoint (both runs
# at once: mpirun waits GRACE seconds before its SIGTERM)
case $("$MPIRUN" --version | head -n 1) in
    *"Open MPI) 4."*) want=1 ;; # mpirun's own code after it was signalled
    *) want= ;;
esac
start mpINT --mca odls_base_sigkill_timeout $GRACE && pid_int=$pid guard_int=$guard
start mpTERM --mca odls_base_sigkill_timeout $GRACE && pid_term=$pid guard_term=$guard
kill -INT ${pid_int:-} 2>/dev/null
kill -TERM ${pid_term:-} 2>/dev/null
for sig in INT TERM; do
    eval "pid=\${pid_$(echo $sig | tr A-Z a-z):-} guard=\${guard_$(echo $sig | tr A-Z a-z):-}"
    [ -n "$pid" ] || continue
    finished
    rc=$?
    [ -n "$want" ] || echo "note: not Open MPI 4: mpirun's exit code $rc not checked"
    stopped "mp$sig" $rc "${want:-$rc}"
done
grep -q "checkpoint: .* MB each, about" "$T/mpINT.out" && pass "the checkpoint's size and time said before training" ||
    fail "no checkpoint estimate before training"
grep -h "^checkpoint: " "$T/mpINT.out" # for the log: the estimate

# SIGUSR1 to mpirun (forwarded) and SIGTERM to one rank: mpirun exits 75
start mpUSR1 && { kill -USR1 $pid; finished; stopped mpUSR1 $? 75; }
grep -h "^checkpoint $T/mpUSR1/" "$T/mpUSR1.out" # for the log: how long it took
if start rank; then
    kill -TERM "$(pgrep -P $pid | tail -n 1)" # the last rank alone
    finished
    stopped rank $? 75
fi

# resumed from each: the losses of an uninterrupted run
most=0
for r in mpINT mpTERM mpUSR1 rank; do
    eval "s=\${S_$r:-0}"
    [ "$s" -gt "$most" ] && most=$s
done
expect_ok train 2 train.max_steps=$((most + 2)) output.metrics="$T/straight.jsonl"
for r in mpINT mpTERM mpUSR1 rank; do
    eval "s=\${S_$r:-}"
    [ -n "$s" ] || continue
    expect_ok train 2 train.resume="$T/$r/ckpt-$s.h5" train.max_steps=$((s + 2)) \
        output.metrics="$T/$r.jsonl"
    grep '"event":"train"' "$T/straight.jsonl" | head -n $((s + 2)) > "$T/cut.jsonl"
    same_losses "$T/cut.jsonl" "$T/$r.jsonl" "$r: stopped at $s, resumed, vs uninterrupted"
done

# SIGKILL of the writer mid-checkpoint (a node lost)
start kill || finish
kill -USR1 $pid # the ranks stop and write a checkpoint: kill its writer meanwhile
tmp=
while kill -0 $pid 2>/dev/null; do # until the writer's temporary is there
    tmp=$(ls "$T/kill" | grep '^ckpt-[0-9]*\.h5\.tmp\.' | head -n 1)
    [ -n "$tmp" ] && break
    sleep 0.05
done
if [ -z "$tmp" ]; then
    fail "no temporary checkpoint seen"
else
    kill -KILL "${tmp##*.}"
    finished
    ls "$T/kill" | grep -q '^ckpt-[0-9]*\.h5$' && fail "a checkpoint name after SIGKILL: $(ls "$T/kill")"
    [ -f "$T/kill/$tmp" ] && pass "SIGKILL mid-write left only $tmp" || fail "no temporary left: $(ls "$T/kill")"
    expect_ok train 2 train.resume=auto train.max_steps=1 output.checkpoint_dir="$T/kill"
    grep -q "removed $T/kill/$tmp, an unfinished checkpoint whose writer (process ${tmp##*.}) is gone" "$T/out" &&
        pass "the next start reported and removed it" || fail "not reported: $(grep -i tmp "$T/out" "$T/err")"
    grep -q "train.resume = auto: no checkpoint of this run in $T/kill, starting afresh" "$T/out" &&
        pass "resume=auto took nothing of it" || fail "resume=auto: $(grep resume "$T/out")"
    [ -f "$T/kill/$tmp" ] && fail "the temporary is still there"
fi
finish

#!/bin/sh
# cluster_faults: a node lost in the middle of a step (scripts/cluster.sh
# link 2 down under a job of 2 nodes x 2 ranks). The job ends by itself:
# the watchdog (parallel.timeout = 4) names the phase and the collective
# or the point-to-point messages the ranks wait in, and mpirun exits non-zero (Open MPI also names the
# node it lost when its daemons' TCP keepalives, set by cluster.sh mpirun,
# notice before the ranks' abort ends the job: reported, a race); the seconds from the link's loss to the job's end are printed
# (not asserted: a loaded machine is slower). No checkpoint temporary is
# left, and the job resumed on the remaining node (2 ranks,
# train.resume=auto from the newest checkpoint) gives the losses of an
# uninterrupted 2-rank run (1e-5, P-invariance across the resharding).
# Skips (77) where network namespaces are refused; waits its turn for the
# cluster (the lock of tests/lib.sh need_cluster).
. "$(dirname "$0")/lib.sh"
need_mpirun
need_cluster 2
tiny_data
CK="$T/ck"
COMMON="data.path=$T/tiny.h5 device.type=cpu model.dropout=0 train.epochs=100000 train.log_every=10
train.eval_every=0 train.final_eval=off output.checkpoint_dir=$CK train.checkpoint_every=20"
last_step() { sed -n 's/^{"event":"train",.*"step":\([0-9]*\),.*/\1/p' "$1" 2>/dev/null | tail -n 1; }

# the job, its link cut once it logged step 70 (between the checkpoints of
# steps 60 and 80: in the middle of a step, as a rule)
"$CL" mpirun --hostfile "$FREESCALE_CLUSTER_DIR/hostfile" -np 4 "$FS" train "$IN" $COMMON \
    train.max_steps=1000000 parallel.timeout=4 output.metrics="$T/cut.jsonl" > "$T/cut.log" 2>&1 &
job=$!
n=0
while kill -0 $job 2>/dev/null; do
    s=$(last_step "$T/cut.jsonl")
    [ -n "$s" ] && [ "$s" -ge 70 ] && break
    sleep 0.1
done
s=$(last_step "$T/cut.jsonl")
[ -n "$s" ] && [ "$s" -ge 70 ] || { fail "the job did not train past step 70: $(tail -n 5 "$T/cut.log")"; finish; }
"$CL" link 2 down
t0=$(date +%s)
# a hang guard only: a healthy end takes seconds
n=0
while kill -0 $job 2>/dev/null && [ $n -lt 3000 ]; do sleep 0.2; n=$((n + 1)); done
if kill -0 $job 2>/dev/null; then
    fail "the job still runs 600 s after its node's link went down"
    kill -9 $job
    finish
fi
wait $job
rc=$?
pass "link of node 2 down after step $s: the job ended (exit $rc) $(( $(date +%s) - t0 )) s later"
[ $rc -ne 0 ] && pass "non-zero exit" || fail "the job exited 0 after losing a node"
grep -q 'watchdog: no progress for .*: step [0-9]*, .*; \(waiting in \(MPI_[A-Za-z_]*\( for MPI_[A-Za-z_]*\)\?\|point-to-point messages\) on communicator\|inside HDF5\)' "$T/cut.log" &&
    pass "the watchdog names the phase and the call: $(grep -o 'step [0-9]*, [^;]*; [^;]*' "$T/cut.log" | head -n 1)" ||
    fail "no watchdog line naming the wait: $(grep -i 'watchdog\|error' "$T/cut.log" | head -n 3)"
# Open MPI names the node only when its keepalives notice the loss before
# the ranks' MPI_Abort ends the job: a race (3 of 4 runs here), so reported
if grep -q 'lost communication with a remote daemon' "$T/cut.log" && grep -q '198\.18\.0\.12' "$T/cut.log"; then
    pass "Open MPI names the lost node (198.18.0.12)"
else
    pass "(not asserted) the ranks' abort ended the job before Open MPI named the lost node"
fi
if ls "$CK"/*tmp* >/dev/null 2>&1; then
    fail "temporaries left: $(ls "$CK")"
else
    pass "no temporary left in the checkpoint folder ($(ls "$CK" | tr '\n' ' '))"
fi
newest=$(ls "$CK" | sed -n 's/^ckpt-\([0-9]*\)\.h5$/\1/p' | sort -n | tail -n 1)
[ -n "$newest" ] || { fail "no checkpoint written before the cut"; finish; }

# the remaining node: 2 ranks resume from the newest checkpoint (checksums
# checked on reading) and train 30 steps past it, as an uninterrupted 2-rank run
end=$((newest + 30))
"$CL" run 1 "$MPIRUN" -np 2 "$FS" train "$IN" $COMMON train.max_steps=$end train.resume=auto \
    output.metrics="$T/resumed.jsonl" > "$T/resumed.log" 2>&1 &&
    grep -q "resumed from .*ckpt-$newest" "$T/resumed.log" &&
    pass "resumed on node 1 at 2 ranks from ckpt-$newest" ||
    fail "resume on the remaining node: $(tail -n 5 "$T/resumed.log")"
"$MPIRUN" -np 2 "$FS" train "$IN" $(echo "$COMMON" | sed "s|$CK|$T/ck-ref|") train.max_steps=$end \
    output.metrics="$T/ref.jsonl" > "$T/ref.log" 2>&1 || fail "the uninterrupted run: $(tail -n 5 "$T/ref.log")"
same_losses "$T/resumed.jsonl" "$T/ref.jsonl" "resumed at 2 ranks after the cut vs uninterrupted" \
    "$newest" 1e-5
finish

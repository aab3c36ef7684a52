#!/bin/sh
# slurm_requeue: preemption on a private single-node Slurm
# (tests/slurm_lib.sh). A 2-task scripts/slurm/train.sbatch job gets USR1
# mid-run (scancel --batch --signal=USR1, what --signal=B:USR1@N sends
# before the time limit); freescale checkpoints and exits 75, the script
# requeues the job, the job restarts in the same run directory and resumes
# from the checkpoint; mid-run again, a job in a higher-priority partition
# preempts it (PreemptMode=REQUEUE): Slurm sends TERM, freescale
# checkpoints, Slurm requeues the job and it resumes once more; it finally
# completes with the same final loss (1e-4 relative; dropout 0) as an
# uninterrupted run. Skips (77) only when the Slurm packages are missing.
# No wait depends on the machine's speed: the job has no time limit, the
# waits on it end when it got there or when nothing of it changed for
# SLURM_HANG seconds (tests/slurm_lib.sh), and the reference run's hang
# guard is 20 times the job's own measured time (at least 600 s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_test_setup
STEPS=${SLURM_REQUEUE_STEPS:-8000}
ARGS="data.path=tiny.h5 model.dropout=0 train.epochs=100000 train.max_steps=$STEPS train.log_every=100"

# last_step FILE: the step of the last train line of a metrics file
last_step() {
    sed -n 's/^{"event":"train",.*"step":\([0-9]*\),.*/\1/p' "$1" 2>/dev/null | tail -n 1
}
# loss_at FILE STEP: the train loss at that step (the last such line)
loss_at() {
    grep "^{\"event\":\"train\",.*\"step\":$2," "$1" 2>/dev/null | tail -n 1 |
        sed -n 's/.*"loss":\([-0-9.eE+]*\).*/\1/p'
}
# past FILE STEP: the metrics file has a train line of STEP or later
past() { s=$(last_step "$1"); [ -n "$s" ] && [ "$s" -ge "$2" ]; }
# restarted: the job started twice (job.txt has a line per start)
restarted() { [ "$(grep -c restart= "$RUN/job.txt" 2>/dev/null)" -ge 2 ]; }
# signal_mid_run SIG|preempt RUN_DIR MIN_STEP: wait until the job trained
# past MIN_STEP, then signal its batch shell or preempt it with a job that
# needs the whole node
signal_mid_run() {
    if ! slurm_until "$job" past "$2/metrics.jsonl" "$3"; then
        fail "no training past step $3 (job $(slurm_state "$job")): $(tail -n 5 "$2/log" 2>/dev/null)"
        return 1
    fi
    if [ "$1" = preempt ]; then
        urgent=$(slurm_submit -p urgent --exclusive --gpus-per-task=0 -o /dev/null --wrap 'sleep 1') &&
            pass "preempting job (urgent job $urgent) at step $s"
    else
        timeout 300 scancel --batch --signal="$1" "$job" && pass "sent $1 at step $s"
    fi
}

# --time=0: no time limit (train.sbatch's USR1 300 s before a limit would
# add a restart on a slow machine)
t_submit=$(date +%s)
job=$(slurm_submit --gpus-per-task=0 --ntasks-per-node=2 --time=0 "$SB/train.sbatch" "$IN" $ARGS)
[ -n "$job" ] || { fail "sbatch train.sbatch"; finish; }
echo "job $job"
RUN="$T/runs/freescale-$job"
out="$T/slurm-freescale-$job.out"

# first start: USR1 after step 1000
signal_mid_run USR1 "$RUN" 1000 || finish
# second start (the requeued job resumes): preempted once past the first
# checkpoint
slurm_until "$job" restarted
first=$(ls "$RUN/checkpoints" 2>/dev/null | sed -n 's/^ckpt-\([0-9]*\)\.h5$/\1/p' | sort -n | head -n 1)
if [ -z "$first" ] || ! restarted; then
    fail "no restart (job $(slurm_state "$job"), checkpoints: $(ls "$RUN/checkpoints" 2>/dev/null)): $(cat "$out")"
    finish
fi
pass "requeued and restarted after a checkpoint at step $first"
signal_mid_run preempt "$RUN" $((first + 1000)) || finish

slurm_wait "$job" || fail "job $job did not finish"
t_job=$(( $(date +%s) - t_submit ))
[ "$(cat "$T/state")" = COMPLETED ] && pass "job $job COMPLETED" ||
    fail "job $job ended $(cat "$T/state"): $(cat "$out")"
restarts=$(timeout 300 scontrol -o show job "$job" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')
[ "$restarts" = 2 ] && pass "Slurm counts 2 restarts" || fail "Restarts=$restarts (want 2)"
# (the restart after USR1 can only come from the script's scontrol requeue:
# Restarts=2 above checks it. The script's own log lines are shown, not
# asserted: Slurm may end the batch shell while it is still writing them.)
echo "script log:"; cat "$RUN/script.log" 2>/dev/null
grep -q 'stopped by signal 15 after step' "$RUN/log" &&
    pass "preemption: freescale got TERM and checkpointed" || fail "log: $(grep -i signal "$RUN/log")"
ck=$(ls "$RUN/checkpoints" | sed -n 's/^ckpt-\([0-9]*\)\.h5$/\1/p' | sort -n | tr '\n' ' ')
set -- $ck
if [ $# = 3 ] && [ "$1" -lt "$2" ] && [ "$2" -lt "$STEPS" ] && [ "$3" = "$STEPS" ]; then
    pass "checkpoints at steps $ck"
else
    fail "checkpoints: $ck (want two before $STEPS and $STEPS)"
fi
[ "$(grep -c 'resumed from .*ckpt-' "$RUN/log")" = 2 ] && pass "resumed twice" ||
    fail "log: $(grep -i 'resum\|signal' "$RUN/log")"
# the step numbers continue: no train line repeats or skips a logged step
steps=$(sed -n 's/^{"event":"train",.*"step":\([0-9]*\),.*/\1/p' "$RUN/metrics.jsonl" | tr '\n' ' ')
want=$(seq 100 100 "$STEPS" | tr '\n' ' ')
[ "$steps" = "$want" ] && pass "metrics: train lines 100..$STEPS once each" ||
    fail "train steps in metrics: $(echo "$steps" | head -c 400)"

# the uninterrupted run, as a plain srun step of the same parameters; its
# hang guard: 20 times the whole job's time (which did these steps and more)
ref_cap=$((20 * t_job)); [ "$ref_cap" -ge 600 ] || ref_cap=600
echo "the job took $t_job s; the reference run's hang guard: $ref_cap s"
timeout "$ref_cap" srun --gpus-per-task=0 -n 2 --mpi=pmix "$FS" train "$IN" $ARGS output.metrics=ref.jsonl \
    >ref.log 2>&1 || fail "reference run: $(tail -n 5 ref.log)"
a=$(loss_at "$RUN/metrics.jsonl" "$STEPS")
b=$(loss_at ref.jsonl "$STEPS")
if [ -n "$a" ] && [ -n "$b" ] &&
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= 1e-4 * m) }'; then
    pass "final loss at step $STEPS: preempted twice $a, uninterrupted $b"
else
    fail "final loss at step $STEPS: preempted twice '$a', uninterrupted '$b'"
fi
ndcg() { sed -n 's/^{"event":"summary",.*"ndcg@10":\([-0-9.eE+]*\).*/\1/p' "$1"; }
[ -n "$(ndcg ref.jsonl)" ] && [ "$(ndcg "$RUN/metrics.jsonl")" = "$(ndcg ref.jsonl)" ] &&
    pass "same test NDCG@10 $(ndcg ref.jsonl)" ||
    fail "test NDCG@10: $(ndcg "$RUN/metrics.jsonl") vs $(ndcg ref.jsonl)"
finish

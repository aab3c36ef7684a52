#!/bin/sh
# slurm_train: the real scripts/slurm/train.sbatch and sweep.sbatch on a
# private single-node Slurm (tests/slurm_lib.sh): a 2-task training job on
# input/tiny.in runs as one 2-rank MPI job under srun --mpi=pmix and leaves
# its run directory (effective parameters, metrics with a summary,
# checkpoint, log); a sweep of 3 override lines runs as a job array and
# scripts/collect makes a CSV of 3 rows from it. Skips (77) only when the
# Slurm packages are missing. The jobs have no time limit (--time=0) and
# the waits none that a slow machine could reach (tests/slurm_lib.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_test_setup

# --- one training job, 2 tasks ---------------------------------------------
job=$(slurm_submit --gpus-per-task=0 --ntasks-per-node=2 --time=0 \
    "$SB/train.sbatch" "$IN" data.path=tiny.h5 train.epochs=3 train.eval_every=1)
if [ -z "$job" ]; then
    fail "sbatch train.sbatch"
    finish
fi
echo "train job $job"
slurm_wait "$job" || fail "job $job did not finish"
RUN="$T/runs/freescale-$job"
out="$T/slurm-freescale-$job.out"
if [ "$(cat "$T/state")" = COMPLETED ]; then pass "job $job COMPLETED"; else
    fail "job $job ended $(cat "$T/state"): $(cat "$out" 2>/dev/null; tail -n 20 "$RUN/log" 2>/dev/null)"
fi
grep -q "JobId=$job .*JobState=COMPLETED" "$SD/jobcomp.txt" 2>/dev/null &&
    pass "jobcomp records COMPLETED" || fail "jobcomp: $(cat "$SD/jobcomp.txt" 2>/dev/null)"
# both tasks were ranks of one MPI job (pmix wired them up)
grep -q "2 ranks on 1 node" "$RUN/log" 2>/dev/null &&
    pass "srun --mpi=pmix: 2 ranks on 1 node" || fail "log lacks '2 ranks on 1 node': $(head -n 5 "$RUN/log" 2>/dev/null)"
[ "$(grep -c 'freescale 0' "$RUN/log" 2>/dev/null)" = 1 ] &&
    pass "one banner (not two singletons)" || fail "banners: $(grep -c 'freescale 0' "$RUN/log" 2>/dev/null)"
grep -q '^path = tiny.h5' "$RUN/params.in" 2>/dev/null && grep -q '^resume = auto' "$RUN/params.in" &&
    pass "params.in holds the effective parameters" || fail "params.in: $(head -n 20 "$RUN/params.in" 2>/dev/null)"
if grep -q '"event":"summary"' "$RUN/metrics.jsonl" 2>/dev/null &&
    [ "$(grep -c '"event":"eval","split":"val"' "$RUN/metrics.jsonl")" = 3 ]; then
    pass "metrics: 3 validation lines and a summary"
else
    fail "metrics.jsonl: $(cat "$RUN/metrics.jsonl" 2>/dev/null | head -c 600)"
fi
ls "$RUN"/checkpoints/ckpt-*.h5 >/dev/null 2>&1 && pass "checkpoint $(ls "$RUN/checkpoints")" ||
    fail "no checkpoint in $RUN/checkpoints"
grep -q "done: $RUN/metrics.jsonl" "$out" 2>/dev/null && pass "slurm output names the metrics" ||
    fail "slurm output: $(cat "$out" 2>/dev/null)"

# --- a sweep of 3 override lines (sweep.sbatch submits itself) ---------------
cat >lines.txt <<'EOF'
# lr sweep
train.lr=1e-3
train.lr=3e-3   # a comment
train.lr=1e-2 model.dim=8
EOF
timeout 300 "$SB/sweep.sbatch" --parsable --gpus-per-task=0 --time=0 "$IN" lines.txt \
    data.path=tiny.h5 train.epochs=2 >"$T/sub" 2>&1
arr=$(tail -n 1 "$T/sub" | cut -d';' -f1)
case $arr in
    '' | *[!0-9]*) fail "sweep submission: $(cat "$T/sub")"; finish ;;
esac
grep -q "submitting 3 experiments" "$T/sub" && pass "sweep.sbatch counted 3 experiments" ||
    fail "sweep submission: $(cat "$T/sub")"
echo "sweep array job $arr"
slurm_wait "$arr" || fail "sweep $arr did not finish"
if [ "$(cat "$T/state")" = COMPLETED ]; then pass "array $arr: every task COMPLETED"; else
    fail "array $arr ended: $(cat "$T/state"); $(cat "$T"/slurm-sweep-"$arr"_*.out 2>/dev/null | tail -n 20)"
fi
SW="$T/runs/sweep-$arr"
[ "$(cat "$SW/002/experiment" 2>/dev/null)" = "train.lr=3e-3" ] && grep -q '^lr = 3e-3' "$SW/002/params.in" &&
    grep -q '^dim = 8' "$SW/003/params.in" && pass "each task ran its own line" ||
    fail "experiments: $(cat "$SW"/*/experiment 2>/dev/null)"
if timeout 300 "$TOP_SRCDIR/scripts/collect" -o sweep.csv "$SW" 2>"$T/err"; then
    rows=$(($(wc -l <sweep.csv) - 1))
    done_rows=$(grep -c ',done,' sweep.csv)
    head -n 1 sweep.csv | grep -q '^run,experiment,train.lr,model.dim,status,epoch,step,loss,hr@1,hr@10' &&
        pass "CSV header: $(head -n 1 sweep.csv | cut -c1-80)..." || fail "CSV header: $(head -n 1 sweep.csv)"
    [ "$rows" = 3 ] && [ "$done_rows" = 3 ] && pass "collect: 3 rows, all done" ||
        fail "collect: $rows rows, $done_rows done: $(cat sweep.csv)"
    cat sweep.csv
else
    fail "collect: $(cat "$T/err")"
fi
finish

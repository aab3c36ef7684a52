#!/bin/sh
# cli_guard: the divergence guard (train.nonfinite, debug.nan_step). A NaN
# loss at step 5 with train.nonfinite=stop ends the run non-zero naming the
# step, and the newest checkpoint (step 4) is intact and resumable; with
# skip the run finishes and the summary counts one skipped step; without a
# NaN, skip mode trains exactly like stop mode.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 model.dropout=0 train.log_every=1 train.max_steps=8"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

# stop: non-zero, the step named, no checkpoint of the bad state
expect_error "step 5: the loss is nan (train.nonfinite = stop)" train 2 debug.nan_step=5 \
    output.checkpoint_dir="$T/ck" train.checkpoint_every=2
[ -f "$T/ck/ckpt-4.h5" ] || fail "the last good checkpoint ckpt-4.h5 is missing"
ls "$T/ck" | grep -qv '^ckpt-[24]\.h5$' && fail "checkpoint of the bad state: $(ls "$T/ck")"
expect_ok train 2 train.resume=auto output.checkpoint_dir="$T/ck" train.final_eval=off
grep -q "resumed from $T/ck/ckpt-4.h5 at step 4" "$T/out" && pass "resumed from the last good" ||
    fail "did not resume from ckpt-4.h5: $(head -c 300 "$T/out")"

# skip: the run finishes; one step skipped, counted in the metrics
expect_ok train 2 debug.nan_step=5 train.nonfinite=skip output.metrics="$T/skip.jsonl"
grep -q "step 5: the loss is not finite: its update was dropped" "$T/err" &&
    pass "skip reported" || fail "skip not reported: $(head -c 300 "$T/err")"
grep '"event":"summary"' "$T/skip.jsonl" | grep -q '"skipped_steps":1,' &&
    pass "summary counts one skipped step" || fail "summary: $(grep summary "$T/skip.jsonl")"
grep -q '"step":5,"loss":null' "$T/skip.jsonl" && pass "step 5's loss is null in the metrics" ||
    fail "step 5 not null"

# a NaN in an embedding gradient (rank 0's): stop names it before the
# sparse update, the last good checkpoint intact; skip drops the step
expect_error "step 5: the embedding gradients of the rows this rank looked up are not finite" \
    train 2 debug.nan_step=5 debug.nan_in=sparse output.checkpoint_dir="$T/cs" \
    train.checkpoint_every=2
[ -f "$T/cs/ckpt-4.h5" ] && ! ls "$T/cs" | grep -qv '^ckpt-[24]\.h5$' &&
    pass "sparse NaN: only the good checkpoints" || fail "sparse NaN: checkpoints $(ls "$T/cs")"
expect_ok train 2 debug.nan_step=5 debug.nan_in=sparse train.nonfinite=skip \
    output.metrics="$T/skips.jsonl"
grep -q "step 5: an embedding gradient is not finite: its update was dropped" "$T/err" &&
    pass "sparse skip reported" || fail "sparse skip not reported: $(head -c 300 "$T/err")"
grep '"event":"summary"' "$T/skips.jsonl" | grep -q '"skipped_steps":1,' &&
    pass "sparse NaN: one skipped step" || fail "sparse NaN: $(grep summary "$T/skips.jsonl")"

# no NaN: skip mode (one more all-reduce per step) changes nothing
expect_ok train 2 output.metrics="$T/stop.jsonl"
expect_ok train 2 train.nonfinite=skip output.metrics="$T/skip0.jsonl"
same_losses "$T/stop.jsonl" "$T/skip0.jsonl" "skip without a NaN vs stop" 0 0
grep '"event":"summary"' "$T/skip0.jsonl" | grep -q '"skipped_steps":0,' ||
    fail "skipped steps counted without a NaN"

expect_error "debug.hang_rank = '2:3': rank 2 does not exist" train 2 debug.hang_rank=2:3
expect_error "expected one of stop|skip" train 1 train.nonfinite=ignore
expect_error "expected one of loss|sparse" train 1 debug.nan_in=dense
finish

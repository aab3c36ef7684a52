#!/bin/sh
# cli_bias_rows: model.bias's tables as rows sharded over the ranks
# (train/bias_rows.h), updated sparsely by a lazy exact replay of the dense
# AdamW, against the dense replicated tables they replace (debug.bias_dense
# = on, the former way), with model.recency, model.factors and the
# gradient clip:
#   - P = 1: the losses and the evaluation's metrics are the dense way's
#     bit for bit (measured 0; the clip's norm sums the rows' squares in
#     another order: to rounding), and so is the checkpoint's state
#     (/dense, /dense_m, /dense_v) at P = 1 and 2;
#   - P = 2, 4 agree with P = 1 (1e-6);
#   - the fake device with device placement = the CPU at tolerance 0
#     (P = 1, 2; P = 3, 4 with parallel.transport = mpi), with no more host
#     waits a step than the dense tables;
#   - a checkpoint of P = 2 resumed at P = 3 and 1 = the uninterrupted
#     run (1e-6); a checkpoint of the dense way resumed as rows = the dense
#     way resumed (0);
#   - with 20000 items the bytes a step for the bias (metrics bias_bytes,
#     summed over ranks) are printed beside the dense all-reduce's
#     (bias_dense_bytes) and are under 5% of them (measured 1.1%).
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

awk 'BEGIN { srand(11); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 40; u++) { n = 6 + int(rand() * 30)
        for (k = 0; k < n; k++) printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 60),
            0.5 + int(rand() * 10) / 2, 964980000 + 1000 * u + 37 * k } }' > "$T/ratings.csv"
"$FS" data import --format movielens "$T/ratings.csv" -o "$T/r.h5" >/dev/null || { fail "import"; finish; }

R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
train.negatives=128 data.split=last:20% train.batch_size=10 model.bias=on train.log_every=1
train.epochs=3 train.clip_norm=0.5 model.recency=3 model.factors=4"
COMMON=$R # lib.sh's run and same_evals

# --- rows vs the dense tables; P-invariance ----------------------------------------
CK="train.checkpoint_every=4"
run d1 1 debug.bias_dense=on "output.checkpoint_dir=$T/ckd1" $CK
run r1 1 "output.checkpoint_dir=$T/ckr1" $CK
same_losses "$T/d1.jsonl" "$T/r1.jsonl" "rows vs dense tables, P=1" 0 1e-7
same_evals "$T/d1.jsonl" "$T/r1.jsonl" "rows vs dense tables, P=1" 1e-7
same_state "$T/ckd1/ckpt-4.h5" "$T/ckr1/ckpt-4.h5" "rows vs dense tables, P=1: checkpoint of step 4"
run d2 2 debug.bias_dense=on "output.checkpoint_dir=$T/ckd2" $CK
run r2 2 "output.checkpoint_dir=$T/ckr2" $CK
same_state "$T/ckd2/ckpt-8.h5" "$T/ckr2/ckpt-8.h5" "rows vs dense tables, P=2: checkpoint of step 8"
same_losses "$T/d2.jsonl" "$T/r2.jsonl" "rows vs dense tables, P=2" 0 1e-7
run r4 4
same_losses "$T/r1.jsonl" "$T/r2.jsonl" "rows: P=2 vs P=1" 0 1e-6
same_losses "$T/r1.jsonl" "$T/r4.jsonl" "rows: P=4 vs P=1" 0 1e-6
same_evals "$T/r1.jsonl" "$T/r4.jsonl" "rows: P=4 vs P=1" 1e-6

# --- the fake device, tables in device memory ----------------------------------------
for np in 1 2; do
    run f$np $np device.type=fake device.share=on embedding.placement=device
    same_losses "$T/r$np.jsonl" "$T/f$np.jsonl" "rows on the fake device vs the CPU, P=$np" 0 0
    same_evals "$T/r$np.jsonl" "$T/f$np.jsonl" "rows on the fake device vs the CPU, P=$np" 0
done
# P = 3, 4 by MPI (parallel.transport = mpi: auto picks the copy-engine,
# whose IPC sum adds the node's slices in rank order, MPI in its own: not
# bit for bit at P >= 3, tests/device_train_body.sh); the staged copy is
# summed in the CPU's buckets (dense_sync.c): at P = 3 one all-reduce of
# the whole arena differed at step 4 (~1e-9)
run r3 3
for np in 3 4; do
    run f$np $np device.type=fake device.share=on embedding.placement=device parallel.transport=mpi
    same_losses "$T/r$np.jsonl" "$T/f$np.jsonl" "rows on the fake device vs the CPU, P=$np" 0 0
    same_evals "$T/r$np.jsonl" "$T/f$np.jsonl" "rows on the fake device vs the CPU, P=$np" 0
done

# host waits: the rows' gradients come down during the backward, no more
# waits a step than the dense tables' (the last interval's device_syncs)
run fdense1 1 device.type=fake device.share=on embedding.placement=device debug.bias_dense=on
syncs() { sed -n 's/.*"event":"train".*"device_syncs":\([^,}]*\).*/\1/p' "$1" | tail -n 1; }
sr=$(syncs "$T/f1.jsonl") sd=$(syncs "$T/fdense1.jsonl")
if [ -n "$sr" ] && [ -n "$sd" ] && awk -v r="$sr" -v d="$sd" 'BEGIN { exit !(r <= d) }'; then
    pass "fake device, P=1: $sr host waits a step with the rows, $sd with the dense tables"
else
    fail "fake device host waits a step: rows '$sr', dense tables '$sd'"
fi

# --- resume on another rank count; a dense-way checkpoint read as rows -------------
run h3 3 "train.resume=$T/ckr2/ckpt-4.h5"
same_losses "$T/r2.jsonl" "$T/h3.jsonl" "rows: resumed P=2 -> P=3 at step 4" 5 1e-6
run h1 1 "train.resume=$T/ckr2/ckpt-8.h5"
same_losses "$T/r2.jsonl" "$T/h1.jsonl" "rows: resumed P=2 -> P=1 at step 8" 9 1e-6
run dd 1 debug.bias_dense=on "train.resume=$T/ckd1/ckpt-4.h5"
run dr 1 "train.resume=$T/ckd1/ckpt-4.h5"
same_losses "$T/dd.jsonl" "$T/dr.jsonl" "a dense-way checkpoint resumed as rows" 5 0

# --- the divergence guard sees the rows' gradients (debug.nan_in = bias: a NaN
# into one the rank 0 owns): stop ends the run before they are applied;
# skip drops the step's dense and rows' updates and goes on
tr() { np=$1; shift; "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
expect_error "step 3: the gradients of the model.bias rows this rank owns are not finite" \
    tr 2 debug.nan_step=3 debug.nan_in=bias
expect_ok tr 2 debug.nan_step=3 debug.nan_in=bias train.nonfinite=skip \
    "output.metrics=$T/gskip.jsonl"
grep -q "step 3: a model.bias row's gradient is not finite: its update was dropped" "$T/err" &&
    pass "bias NaN: skip reported" || fail "bias NaN: skip not reported: $(head -c 300 "$T/err")"
grep '"event":"summary"' "$T/gskip.jsonl" | grep -q '"skipped_steps":1,' &&
    pass "bias NaN: one skipped step" || fail "bias NaN: $(grep summary "$T/gskip.jsonl")"

# --- the bytes a step with many items ------------------------------------------------
"$FS" data gen --users 1500 --items 20000 --length uniform:4,30 --labels planted \
    -o "$T/big.h5" >/dev/null || { fail "data gen"; finish; }
B="data.path=$T/big.h5 train.task=ranking train.tasks=click:binary:click,rating:regression:rating:0.5
data.split=last:20% train.batch_size=32 model.bias=on train.log_every=5 train.max_steps=10
train.final_eval=off"
# shellcheck disable=SC2086
"$MPIRUN" -np 2 "$FS" train "$IN" $B "output.metrics=$T/big.jsonl" >"$T/big.out" 2>&1 ||
    fail "train big: $(tail -3 "$T/big.out")"
rows=$(sed -n 's/.*"bias_bytes":\([^,}]*\).*/\1/p' "$T/big.jsonl" | tail -n 1)
dense=$(sed -n 's/.*"bias_dense_bytes":\([^,}]*\).*/\1/p' "$T/big.jsonl" | tail -n 1)
if [ -n "$rows" ] && [ -n "$dense" ] && awk -v r="$rows" -v d="$dense" 'BEGIN { exit !(r > 0 && r < d / 20) }'; then
    pass "20000 items, P=2: $rows bytes a step for the bias rows (the dense all-reduce: $dense)"
else
    fail "bias bytes a step: rows '$rows', dense '$dense'"
fi
finish

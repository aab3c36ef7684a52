#!/bin/sh
# cli_full: train.loss = full, in-batch negatives and selection on
# validation, end to end on tiny data: the full softmax gives the same
# losses on 1, 2 and 4 ranks and with embedding replicas (to 1e-5), for HSTU
# and SASRec; a P = 2 checkpoint resumed on P = 3 and on P = 1 continues as
# the uninterrupted run; in-batch and mixed negatives are P-invariant;
# train.keep_best writes best.h5 and tests it (test-last beside it);
# train.patience stops early; the refusals.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.log_every=1"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

for model in hstu sasrec; do
    M="model.type=$model train.loss=full train.max_steps=6"
    [ $model = sasrec ] && M="$M train.temperature=1"
    expect_ok train 1 $M output.metrics="$T/f-$model-1.jsonl"
    expect_ok train 2 $M output.metrics="$T/f-$model-2.jsonl"
    expect_ok train 4 $M output.metrics="$T/f-$model-4.jsonl"
    expect_ok train 4 $M parallel.embedding_group=2 output.metrics="$T/f-$model-4g2.jsonl"
    expect_ok train 2 $M parallel.overlap=none output.metrics="$T/f-$model-2n.jsonl"
    same_losses "$T/f-$model-1.jsonl" "$T/f-$model-2.jsonl" "full $model P=1 vs P=2" 0 1e-5
    same_losses "$T/f-$model-1.jsonl" "$T/f-$model-4.jsonl" "full $model P=1 vs P=4" 0 1e-5
    same_losses "$T/f-$model-1.jsonl" "$T/f-$model-4g2.jsonl" \
        "full $model P=1 vs P=4, embedding_group=2" 0 1e-5
    same_losses "$T/f-$model-1.jsonl" "$T/f-$model-2n.jsonl" "full $model overlap=none" 0 1e-5
done
# the full softmax is not the sampled one
losses "$T/f-hstu-1.jsonl" | head -1 > "$T/a"
expect_ok train 1 train.max_steps=1 output.metrics="$T/s1.jsonl"
losses "$T/s1.jsonl" | head -1 > "$T/b"
cmp -s "$T/a" "$T/b" && fail "full and softmax give the same first loss"

# resume: 3 steps + checkpoint on P = 2, then on P = 3 and P = 1
F="train.loss=full train.max_steps=6"
expect_ok train 2 $F train.max_steps=3 output.checkpoint_dir="$T/ck"
expect_ok train 3 $F train.resume="$T/ck/ckpt-3.h5" output.metrics="$T/fr3.jsonl"
expect_ok train 1 $F train.resume="$T/ck/ckpt-3.h5" output.metrics="$T/fr1.jsonl"
same_losses "$T/f-hstu-1.jsonl" "$T/fr3.jsonl" "full: P=2 checkpoint resumed at P=3" 3 1e-5
same_losses "$T/f-hstu-1.jsonl" "$T/fr1.jsonl" "full: P=2 checkpoint resumed at P=1" 3 1e-5

# in-batch and mixed negatives: keyed by the token, the same on any P
for from in in_batch mixed; do
    N="train.negatives_from=$from train.max_steps=6"
    expect_ok train 1 $N output.metrics="$T/n-$from-1.jsonl"
    expect_ok train 4 $N output.metrics="$T/n-$from-4.jsonl"
    expect_ok train 4 $N parallel.embedding_group=2 output.metrics="$T/n-$from-4g2.jsonl"
    same_losses "$T/n-$from-1.jsonl" "$T/n-$from-4.jsonl" "$from P=1 vs P=4" 0 1e-5
    same_losses "$T/n-$from-1.jsonl" "$T/n-$from-4g2.jsonl" "$from P=1 vs P=4, group 2" 0 1e-5
done
losses "$T/n-in_batch-1.jsonl" > "$T/a"; losses "$T/n-mixed-1.jsonl" > "$T/b"
cmp -s "$T/a" "$T/b" && fail "in_batch and mixed give the same losses"

# keep_best: best.h5 written, test from it and test-last beside it;
# patience stops once the validations stop improving
K="train.keep_best=on train.eval_every=1 train.epochs=30 output.checkpoint_dir=$T/kb"
expect_ok train 2 $K train.patience=2 output.metrics="$T/kb.jsonl"
[ -f "$T/kb/best.h5" ] && pass "best.h5 written" || fail "no best.h5"
grep -q '"split":"test-last"' "$T/kb.jsonl" && pass "test-last reported" || fail "no test-last"
cat "$T/out" "$T/err" > "$T/kb.log"; grep -q "keep_best: testing" "$T/kb.log" && pass "best checkpoint tested" || fail "best not tested"
n_val=$(grep -c '"split":"val"' "$T/kb.jsonl")
if grep -q "patience: no better validation" "$T/kb.log" && [ "$n_val" -lt 30 ]; then
    pass "patience stopped after $n_val validations"
else
    fail "patience did not stop the run ($n_val validations)"
fi
# the test of best.h5 is that of the best epoch: a run of exactly that many
# epochs (no selection) tests the same model
best=$(sed -n 's/.*"event":"summary".*"best_epoch":\([0-9]*\).*/\1/p' "$T/kb.jsonl")
expect_ok train 2 train.epochs="$best" output.metrics="$T/kb-ref.jsonl"
t_best=$(grep '"split":"test"' "$T/kb.jsonl" | sed 's/.*"ndcg@10":\([^,]*\).*/\1/')
t_ref=$(grep '"split":"test"' "$T/kb-ref.jsonl" | sed 's/.*"ndcg@10":\([^,]*\).*/\1/')
if [ -n "$t_best" ] && [ "$t_best" = "$t_ref" ]; then
    pass "test of best.h5 = test after $best epochs ($t_best)"
else
    fail "test of best.h5 ($t_best) != test after $best epochs ($t_ref)"
fi

expect_error "train.keep_best = on needs output.checkpoint_dir" train 1 train.keep_best=on
expect_error "needs data.split = loo" train 1 train.keep_best=on data.split=hstu \
    output.checkpoint_dir="$T/kb2"
expect_error "train.patience = 3 needs train.eval_every >= 1" train 1 train.patience=3
expect_error "train.negatives_from = in_batch: only for train.loss = softmax" \
    train 1 train.loss=full train.negatives_from=in_batch
finish

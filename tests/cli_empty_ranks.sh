#!/bin/sh
# cli_empty_ranks: ranks with no sequence to train on take part in every
# step with empty buffers. Two legal inputs that once crashed HSTU
# (model_hstu's buffers were never allocated for a rank without tokens):
#   A  P = 4 on a dataset of 3 users: rank 3 has nothing in any step, nor
#      in any evaluation;
#   B  train.batch_size = 1 at P = 2: one rank is idle at every step.
# Every run trains to the end with the losses of P = 1 (to 1e-5) and the
# same validation and test metrics, for HSTU (sampled softmax) and SASRec
# (BCE), each overlap mode, with and without parallel.split_long, and with
# train.loss = full and in-batch negatives.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 3 --items 50 --length uniform:5,20 --timestamps -o "$T/u3.h5" \
    >/dev/null || { fail "data gen"; finish; }
"$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps -o "$T/tiny.h5" \
    >/dev/null || { fail "data gen"; finish; }
COMMON="device.type=cpu train.log_every=1 train.eval_every=1"
A="data.path=$T/u3.h5"
B="data.path=$T/tiny.h5 train.batch_size=1 train.max_steps=6"
train() { ranks=$1; shift; timeout 300 "$MPIRUN" -np "$ranks" "$FS" train "$IN" $COMMON "$@"; }
# same_evals A B NAME: the same HR@10 and NDCG@10 on every eval line
same_evals() {
    grep -o '"split":"[a-z]*".*"hr@10":[^,]*.*"ndcg@10":[^,]*' "$1" | sed 's/"loss":[^,]*,//' > "$T/ea"
    grep -o '"split":"[a-z]*".*"hr@10":[^,]*.*"ndcg@10":[^,]*' "$2" | sed 's/"loss":[^,]*,//' > "$T/eb"
    if [ -s "$T/ea" ] && cmp -s "$T/ea" "$T/eb"; then pass "$3: same evaluations"
    else fail "$3: evaluations differ: $(diff "$T/ea" "$T/eb" | head -4)"; fi
}

for model in hstu sasrec; do
    loss=softmax; [ $model = sasrec ] && loss=bce
    M="model.type=$model train.loss=$loss"
    for case in A B; do
        eval "D=\$$case"
        np=4; [ $case = B ] && np=2
        expect_ok train 1 $D $M output.metrics="$T/$model-$case-1.jsonl"
        for ov in none pipeline prioritized; do
            for sl in off auto; do
                S=""; [ $sl = auto ] && S="parallel.split_long=auto debug.split_chunks=2"
                name="$model-$case-$ov-$sl"
                expect_ok train $np $D $M parallel.overlap=$ov $S output.metrics="$T/$name.jsonl"
                same_losses "$T/$model-$case-1.jsonl" "$T/$name.jsonl" \
                    "$model $case: P=$np overlap=$ov split_long=$sl vs P=1" 0 1e-5
            done
        done
        same_evals "$T/$model-$case-1.jsonl" "$T/$model-$case-prioritized-auto.jsonl" \
            "$model $case: P=$np vs P=1"
    done
done
# the full softmax and the in-batch negatives (collectives over all ranks)
for L in "train.loss=full" "train.negatives_from=in_batch" "train.negatives_from=mixed"; do
    for case in A B; do
        eval "D=\$$case"
        np=4; [ $case = B ] && np=2
        name=$(echo "$L-$case" | tr '.=' '__')
        expect_ok train 1 $D $L output.metrics="$T/$name-1.jsonl"
        expect_ok train $np $D $L parallel.split_long=auto output.metrics="$T/$name-P.jsonl"
        same_losses "$T/$name-1.jsonl" "$T/$name-P.jsonl" "$L $case: P=$np vs P=1" 0 1e-5
        same_evals "$T/$name-1.jsonl" "$T/$name-P.jsonl" "$L $case: P=$np vs P=1"
    done
done
finish

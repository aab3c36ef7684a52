#!/bin/sh
# cli_rank_sched: train.lr_schedule and train.select = TASK.METRIC.
#   - cosine and linear: the metrics' lr at each logged step is train.lr
#     times the schedule's factor (lr_schedule.h, 1e-7); the sparse rates
#     follow it too (train.lr ~ 0: the losses still differ from constant's);
#   - a run resumed on another rank count equals the uninterrupted one;
#   - train.adam_beta1/2: 0.9, 0.98 given equal the default bit for bit,
#     0.95, 0.999 change the losses from the second step, and resume on
#     another P as the uninterrupted run;
#   - train.select = rating.mse / like.ne: keep_best follows that metric
#     (its value in the log line = the best validation line's); metrics of
#     the wrong kind are refused.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

awk 'BEGIN { srand(17); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 36; u++) { n = 6 + int(rand() * 30)
        for (k = 0; k < n; k++) printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 60),
            0.5 + int(rand() * 10) / 2, 964980000 + 1000 * u + 37 * k } }' > "$T/ratings.csv"
"$FS" data import --format movielens "$T/ratings.csv" -o "$T/r.h5" >/dev/null || { fail "import"; finish; }
R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
train.negatives=128 data.split=last:20% train.batch_size=6 train.log_every=1 train.final_eval=off"
run() {
    name=$1 np=$2; shift 2
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" $R "output.metrics=$T/$name.jsonl" "$@" \
        >"$T/$name.out" 2>&1 || fail "train $name: $(tail -5 "$T/$name.out")"
}
# lrs FILE: "step lr" of the train lines
lrs() { sed -n 's/.*"event":"train".*"step":\([0-9]*\),.*"lr":\([^,]*\),.*/\1 \2/p' "$1"; }

run cos 2 train.max_steps=10 train.lr_schedule=cosine train.warmup_steps=2 \
    "output.checkpoint_dir=$T/ck" train.checkpoint_every=5
run lin 1 train.max_steps=10 train.lr_schedule=linear train.lr=2e-3
for c in "cos 1e-3 cosine" "lin 2e-3 linear"; do
    set -- $c
    lrs "$T/$1.jsonl" | awk -v lr="$2" -v kind="$3" -v W="$( [ "$1" = cos ] && echo 2 || echo 0)" '
        { s = $1 - 1; f = 1; if (s < W) f = (s + 1) / W; else { p = (s - W) / (10 - W)
              f = kind == "cosine" ? 0.5 * (1 + cos(3.14159265358979 * p)) : 1 - p }
          want = lr * f; e = $2 - want; if (e < 0) e = -e
          if (e > 1e-7 * want) { print "step " $1 ": lr " $2 ", expected " want; bad = 1 } n++ }
        END { exit bad || n != 10 }' > "$T/lr.out" &&
        pass "$3: the logged lr follows the schedule (10 steps)" || fail "$3 lr: $(cat "$T/lr.out")"
done
run half 3 train.max_steps=10 train.lr_schedule=cosine train.warmup_steps=2 \
    "train.resume=$T/ck/ckpt-5.h5"
same_losses "$T/cos.jsonl" "$T/half.jsonl" "cosine: resumed P=2 -> P=3 at step 5" 5 1e-6
# the sparse rates: the dense parameters all but frozen, the tables still learn
run sc 1 train.max_steps=6 train.lr=1e-12 train.lr_schedule=cosine
run sk 1 train.max_steps=6 train.lr=1e-12
a=$(losses "$T/sc.jsonl" | awk '$1 == 6 { print $2 }') b=$(losses "$T/sk.jsonl" | awk '$1 == 6 { print $2 }')
[ -n "$a" ] && [ "$a" != "$b" ] && pass "cosine changes the sparse updates (step 6: $a vs $b)" ||
    fail "the sparse learning rate ignores the schedule (step 6: $a vs $b)"

# --- train.adam_beta1, train.adam_beta2 (the dense AdamW and model.bias's rows) ---------
B="train.max_steps=6 model.bias=on"
run b0 1 $B
run b9 1 $B train.adam_beta1=0.9 train.adam_beta2=0.98
identical "betas 0.9, 0.98 given = the default" "$T/b0.jsonl" "$T/b9.jsonl"
run b95 1 $B train.adam_beta1=0.95 train.adam_beta2=0.999 "output.checkpoint_dir=$T/ckb" \
    train.checkpoint_every=3
losses "$T/b0.jsonl" > "$T/la"
losses "$T/b95.jsonl" > "$T/lb"
[ "$(sed -n 1p "$T/la")" = "$(sed -n 1p "$T/lb")" ] && ! cmp -s "$T/la" "$T/lb" &&
    pass "betas 0.95, 0.999: the first loss the default's, the later ones not" ||
    fail "betas 0.95, 0.999 vs the default: $(paste "$T/la" "$T/lb" | head -3 | tr '\n' ' ')"
run b95r 2 $B train.adam_beta1=0.95 train.adam_beta2=0.999 "train.resume=$T/ckb/ckpt-3.h5"
same_losses "$T/b95.jsonl" "$T/b95r.jsonl" "betas 0.95, 0.999: resumed P=1 -> P=2 at step 3" 3 1e-6
expect_error "train.adam_beta2" "$FS" train "$IN" "data.path=$T/r.h5" train.adam_beta2=1

# --- train.select = TASK.METRIC ------------------------------------------------
for sel in "rating.mse rating MSE" "like.ne like NE"; do
    set -- $sel
    key=$1
    run "sel$2" 2 train.epochs=3 train.eval_every=1 train.keep_best=on "train.select=$1" \
        "output.checkpoint_dir=$T/ck$2"
    v=$(sed -n "s/.*keep_best: validation $2 $3 \([0-9.]*\) at epoch \([0-9]*\).*/\1 \2/p" \
        "$T/sel$2.out" | tail -1)
    [ -n "$v" ] || { fail "$1: no keep_best line: $(grep keep_best "$T/sel$2.out")"; continue; }
    set -- $v
    best=$(grep '"split":"val"' "$T/sel$(echo "$key" | cut -d. -f1).jsonl" |
        sed -n "s/.*\"epoch\":\([0-9]*\),.*\"$key\":\([^,}]*\).*/\1 \2/p" | sort -k2 -g | head -1)
    awk -v a="$1" -v e="$2" -v b="$best" 'BEGIN { split(b, x, " "); d = a - x[2]; if (d < 0) d = -d
        exit !(e == x[1] && d < 1e-4) }' && pass "keep_best follows $key: epoch $2, $1 (the lowest)" ||
        fail "keep_best $key: logged epoch $2 value $1, the lowest validation: $best"
done
ok() { "$FS" train "$IN" "data.path=$T/r.h5" train.max_steps=1 "$@"; }
T2="train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating data.split=last:2"
expect_error "train.select = like.mse: 'mse' is not a metric of the binary task like" ok $T2 train.select=like.mse
expect_error "train.select = rating.auc: 'auc' is not a metric of the regression task rating" ok $T2 train.select=rating.auc
expect_error "train.select = rating: a regression task has no AUC to follow (name a binary task, or rating.mse" \
    ok $T2 train.select=rating
finish

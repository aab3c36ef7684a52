#!/bin/sh
# cli_tune: train.tune (the learning rates and model.dropout chosen on the
# run's validation events before it trains; cmd/train_tune.c):
#   - the choice is the candidate of the best logged validation AUC (the
#     first of equals, in the order run: rates x 1/3, 1, 3, 10, then dropout
#     0, 0.2, 0.4 at the chosen rates);
#   - a candidate is a run of its own: the chosen one's logged best
#     validation AUC is that of a plain run with the chosen train.lr,
#     embedding.lr and model.dropout, and the tuned run trains as that
#     plain run does (the same losses, 1e-6), its metrics file's params
#     carrying the chosen values;
#   - the same choice and losses on 2 ranks as on 1;
#   - the candidates say their result alone: the run's set-up lines and its
#     warnings once;
#   - a tuned run resumed (train.resume = auto) takes the choice its
#     checkpoint stores, searches no candidate, says what it reuses, and
#     ends as the uninterrupted run (1e-6); a checkpoint of an untuned run
#     resumed with train.tune refused by name;
#   - refused with train.schedule = stream.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 40; u++) { n = 8 + int(rand() * 30); t = rand() < 0.5
        for (k = 0; k < n; k++) { i = 1 + int(rand() * 50)
            printf "%d,%d,%.1f,%d\n", u, i, (i % 2 == t) ? 4.5 : 1.5 + int(rand() * 4) / 2,
                964980000 + 1000 * u + 37 * k } } }' > "$T/ratings.csv"
"$FS" data import --format movielens "$T/ratings.csv" -o "$T/r.h5" >/dev/null || { fail "import"; finish; }

COMMON="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
data.split=last:20% train.batch_size=10 model.bias=on train.eval_every=1 train.epochs=3 train.log_every=1"
run t1 1 train.tune=lr,dropout output.checkpoint_dir="$T/ck" train.checkpoint_every=4
run t2 2 train.tune=lr,dropout
n=$(grep -c '^train.tune: rates' "$T/t1.out")
[ "$n" = 7 ] || fail "7 candidates expected (4 rates, 3 dropouts), got $n"
[ "$(grep -c '^task like: binary' "$T/t1.out")" = 1 ] &&
    [ "$(grep -c 'is a retrieval parameter' "$T/t1.out")" = 1 ] &&
    pass "the set-up lines and the warning once, not once a candidate" ||
    fail "set-up lines repeated: $(grep -c '^task like: binary' "$T/t1.out") task lines, $(grep -c 'is a retrieval parameter' "$T/t1.out") warnings"
# the argmax of the logged candidates, first of equals
want=$(sed -n 's/^train.tune: rates x \([^,]*\), dropout \([^:]*\): best validation like AUC \([0-9.]*\).*/\1 \2 \3/p' "$T/t1.out" |
    awk '$3 > b || NR == 1 { b = $3; f = $1; d = $2 } END { print f, d, b }')
got=$(sed -n 's/^train.tune = lr,dropout: chosen rates x \([^ ]*\) .*, dropout \([^ ]*\) .*/\1 \2/p' "$T/t1.out")
[ "$got" = "$(echo "$want" | cut -d' ' -f1,2)" ] && pass "the choice ($got) is the best candidate ($want)" ||
    fail "chose '$got', the best candidate is '$want'"
# the chosen values, as the metrics file's params line records them
val() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$T/t1.jsonl" | head -1; }
lr=$(val train.lr) elr=$(val embedding.lr) d=$(val model.dropout)
[ "$d" = "$(echo "$got" | cut -d' ' -f2)" ] || fail "params line's model.dropout $d, chosen '$got'"
run p1 1 "train.lr=$lr" "embedding.lr=$elr" "model.dropout=$d" output.checkpoint_dir="$T/pk"
same_losses "$T/p1.jsonl" "$T/t1.jsonl" "tuned run vs a plain run at the choice (lr $lr, $elr, dropout $d)" 0 1e-6
best=$(sed -n 's/^done:.*best validation like AUC \([0-9.]*\).*/\1/p' "$T/p1.out")
[ -n "$best" ] && [ "$best" = "$(echo "$want" | cut -d' ' -f3)" ] &&
    pass "the chosen candidate's validation AUC is the plain run's ($best)" ||
    fail "candidate's AUC '$want' vs the plain run's '$best'"
[ "$(grep '^train.tune = ' "$T/t2.out")" = "$(grep '^train.tune = ' "$T/t1.out")" ] &&
    pass "the same choice on 2 ranks" || fail "P=2 chose: $(grep '^train.tune = ' "$T/t2.out")"
same_losses "$T/t1.jsonl" "$T/t2.jsonl" "tuned: P=2 vs P=1" 0 1e-6
# resumed after step 8 (ckpt-12.h5 removed: auto takes ckpt-8.h5)
rm -f "$T/ck/ckpt-12.h5"
run r1 2 train.tune=lr,dropout train.resume=auto output.checkpoint_dir="$T/ck"
resumed_no_search "$T/r1.out" "train.tune = lr,dropout" "train.tune: rates" \
    "train.tune = lr,dropout: resumed from $T/ck/ckpt-8.h5: the choice it trained with, not searched again: train.lr $lr, embedding.lr $elr, dropout $d"
same_losses "$T/t1.jsonl" "$T/r1.jsonl" "tuned, resumed after step 8 vs uninterrupted" 8 1e-6
expect_error "train.tune = lr: $T/pk/ckpt-12.h5 was written by a run without train.tune" \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON train.tune=lr train.resume="$T/pk/ckpt-12.h5"
error_once 1 "train.tune = lr: not with train.schedule = stream" train "$IN" $COMMON \
    train.tune=lr train.schedule=stream data.window=1000
error_once 1 "model.factors_lr = auto: not with train.schedule = stream" train "$IN" $COMMON \
    model.bias=on model.factors=2 model.factors_lr=auto train.schedule=stream data.window=1000
finish

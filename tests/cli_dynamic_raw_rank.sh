#!/bin/sh
# cli_dynamic_raw_rank: the ranking task (model.bias = on's per-item
# biases), item features (features.item) and score over raw item ids
# (doc/data.md, "Raw item ids"). The same ratings are imported dense (ids
# renumbered 1..N in ascending original id) and raw after multiplying
# every item id by a large odd constant K (the sorted list /items/ids is
# then K x the dense file's originals, row for row); the per-item biases
# and the item features are keyed by an id's number in that list. With
# embedding.init_std = 0 (a row is otherwise drawn from its id: i and i x
# K would start apart) a dynamic item table trained on either is the same
# model up to the map:
#   - ranking with model.bias and features.item: the losses and every
#     evaluation (AUC, GAUC, NE, logloss, MSE, the four baselines) equal
#     the dense run's bit for bit at P = 1, and at P = 2 without features
#     (with features at P > 1 they agree to ~1e-9, not bit for bit: the
#     features' gradients are summed over the items in the order the
#     table's owners group them, and the owners of i and i x K differ;
#     doc/embedding.md);
#   - retrieval with features.item at P = 1: losses and HR/NDCG equal;
#   - score (P = 2) of pairs in raw ids gives the dense run's scores of the
#     same pairs in the dense file's original ids.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
K=1099511627791
awk 'BEGIN { print "userId,movieId,rating,timestamp"; s = 7
    for (n = 0; n < 1400; n++) { s = (s * 75 + 74) % 65537
        u = 10 + (s % 60) * 7; r = 1 + int(s / 60) % 5
        printf "%d,%d,%d.5,%d\n", u, 3 * ((n * 7 + s) % 150) + 1, r, 1000 + n } }' > "$T/d.csv"
awk 'BEGIN { print "movieId,brand"
    for (j = 0; j < 150; j++) printf "%d,b%d\n", 3 * j + 1, j % 7 }' > "$T/d-items.csv"
mult() { # FILE COLUMN(1-based) -> FILE with that column x K (header kept)
    { IFS= read -r head; echo "$head"
      while IFS=, read -r a b c d; do
          if [ "$2" = 1 ]; then a=$((a * K)); else b=$((b * K)); fi
          echo "$a,$b${c:+,$c}${d:+,$d}"
      done; } < "$1"
}
mult "$T/d.csv" 2 > "$T/r.csv"
mult "$T/d-items.csv" 1 > "$T/r-items.csv"
SIDE="--item-key movieId --item-cols brand --event-cols rating:float"
"$FS" data import --format csv "$T/d.csv" --item-features "$T/d-items.csv" $SIDE \
    -o "$T/d.h5" >/dev/null 2>"$T/imp.err" &&
    "$FS" data import --format csv "$T/r.csv" --item-features "$T/r-items.csv" $SIDE \
        --ids raw -o "$T/r.h5" >/dev/null 2>>"$T/imp.err" ||
    { fail "data import: $(cat "$T/imp.err")"; finish; }

COMMON="device.type=cpu train.log_every=1 train.max_steps=8 train.eval_every=1 model.layers=1
model.dim=16 embedding.dynamic=on embedding.init_std=0 train.baseline=on train.batch_size=10"
RANK="train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
data.split=last:20% model.bias=on"
run() { # NAME NP DATA ARGS...: metrics in $T/NAME.jsonl, checkpoints in $T/NAME.ck
    rn=$1 rp=$2 rd=$3; shift 3
    "$MPIRUN" -np "$rp" "$FS" train "$IN" $COMMON "data.path=$T/$rd.h5" \
        "output.metrics=$T/$rn.jsonl" "output.checkpoint_dir=$T/$rn.ck" "$@" \
        >"$T/$rn.out" 2>&1 || fail "$rn: $(tail -n 3 "$T/$rn.out")"
}
evals() { grep '"event":"eval"' "$1" | sed 's/"samples_per_s".*"tokens_per_s":[^,]*,//'; }
same_evals() { # A B NAME [MIN]: the evaluations (at least MIN, default 3) equal
    evals "$1" > "$T/ea"; evals "$2" > "$T/eb"
    if [ "$(wc -l < "$T/ea")" -ge "${4:-3}" ] && cmp -s "$T/ea" "$T/eb"; then
        pass "$3: the $(wc -l < "$T/ea") evaluations equal"
    else
        fail "$3: evaluations differ: $(diff "$T/ea" "$T/eb" | head -n 3 | cut -c1-200 | tr '\n' ' ')"
    fi
}
# ranking with per-item biases and item features
for d in d r; do
    run "rank-$d-1" 1 $d $RANK features.item=brand
    run "nofeat-$d-2" 2 $d $RANK
done
same_losses "$T/rank-d-1.jsonl" "$T/rank-r-1.jsonl" "ranking, bias, features, P=1: raw vs dense" 0 0
same_evals "$T/rank-d-1.jsonl" "$T/rank-r-1.jsonl" "ranking, bias, features, P=1: raw vs dense" 7
same_losses "$T/nofeat-d-2.jsonl" "$T/nofeat-r-2.jsonl" "ranking, bias, P=2: raw vs dense" 0 0
same_evals "$T/nofeat-d-2.jsonl" "$T/nofeat-r-2.jsonl" "ranking, bias, P=2: raw vs dense" 7
grep -q '"like.gauc"' "$T/rank-r-1.jsonl" && grep -q "baseline-user+item" "$T/rank-r-1.out" &&
    pass "ranking over raw ids: AUC, GAUC and the baselines reported" || fail "no ranking evaluation"

# retrieval with item features
run "ret-d-1" 1 d features.item=brand
run "ret-r-1" 1 r features.item=brand
same_losses "$T/ret-d-1.jsonl" "$T/ret-r-1.jsonl" "retrieval, features, P=1: raw vs dense" 0 0
same_evals "$T/ret-d-1.jsonl" "$T/ret-r-1.jsonl" "retrieval, features, P=1: raw vs dense"

# score (P = 2): pairs in raw ids against the same pairs in the dense file's ids
printf 'user,item\n423,1\n423,448\n17,100\n73,4\n108,301\n' > "$T/pd.csv"
awk -F, -v K=$K 'NR == 1 { print; next } { printf "%s,%.0f\n", $1, $2 * K }' "$T/pd.csv" > "$T/pr.csv"
for d in d r; do
    "$MPIRUN" -np 2 "$FS" score "$T/rank-$d-1.ck/ckpt-8.h5" --pairs "$T/p$d.csv" \
        -o "$T/s-$d.csv" >"$T/s-$d.out" 2>&1 || fail "score $d: $(tail -n 3 "$T/s-$d.out")"
done
awk -F, -v K=$K 'NR > 1 { $2 = sprintf("%.0f", $2 * K) } { print }' OFS=, "$T/s-d.csv" > "$T/s-mapped.csv"
[ "$(wc -l < "$T/s-r.csv")" = 6 ] && cmp -s "$T/s-mapped.csv" "$T/s-r.csv" &&
    pass "score over raw ids: the dense run's scores of the same pairs" ||
    fail "score over raw ids: $(diff "$T/s-mapped.csv" "$T/s-r.csv" | head -n 3 | tr '\n' ' ')"
printf 'user,item\n423,%s\n' $((2 * K)) > "$T/pbad.csv"
expect_error "pbad.csv:2: item '$((2 * K))' is not in the dataset" "$MPIRUN" -np 1 "$FS" score \
    "$T/rank-r-1.ck/ckpt-8.h5" --pairs "$T/pbad.csv" -o "$T/s-bad.csv"
finish
